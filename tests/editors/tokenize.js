// tests/editors/tokenize.js FILE...: tokenizes each .phys file with the TextMate grammar of
// editors/vscode (vscode-textmate + vscode-oniguruma, the engine VS Code runs) and checks the
// scopes against the language's own tables: every keyword of the lexer (lang/lexer.re's table)
// a keyword or storage scope, every builtin call (compiler/eval.c's table) a builtin function,
// every number a numeric constant, every string a string, every comment (//, #, /* */) a
// comment. The expected classes come from a small scanner here that follows lexer.re's rules.
// Prints the counts checked and exits 0, or what differs and exits 1.
"use strict";
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const onig = require("vscode-oniguruma");

const root = path.join(__dirname, "..", "..");
const grammarPath = path.join(root, "editors", "vscode", "syntaxes", "phys.tmLanguage.json");
const keywords = new Set([...fs.readFileSync(path.join(root, "lang", "lexer.re"), "utf8")
  .matchAll(/\{"([a-z]+)", [A-Z]+\}/g)].map((m) => m[1]));
const builtins = new Set([...fs.readFileSync(path.join(root, "compiler", "eval.c"), "utf8")
  .matchAll(/^ {4}\{"([a-z_0-9]+)", "[^"]*", \d+, \d+,/gm)].map((m) => m[1]));

async function grammar() {
  const wasm = fs.readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm")).buffer;
  await onig.loadWASM(wasm);
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({ createOnigScanner: (p) => new onig.OnigScanner(p), createOnigString: (s) => new onig.OnigString(s) }),
    loadGrammar: async (scope) => (scope === "source.phys" ? vsctm.parseRawGrammar(fs.readFileSync(grammarPath, "utf8"), grammarPath) : null),
  });
  return registry.loadGrammar("source.phys");
}

// What each character of a file is, as lexer.re reads it: [line, start, end, class] spans
function expected(text) {
  const spans = [];
  const lines = text.split("\n");
  let inBlock = false;
  lines.forEach((line, ln) => {
    let i = 0;
    while (i < line.length) {
      if (inBlock) {
        const end = line.indexOf("*/", i);
        spans.push([ln, i, end < 0 ? line.length : end + 2, "comment"]);
        if (end < 0) break;
        inBlock = false; i = end + 2; continue;
      }
      const c = line[i], rest = line.slice(i);
      if (rest.startsWith("//") || c === "#") { spans.push([ln, i, line.length, "comment"]); break; }
      if (rest.startsWith("/*")) { inBlock = true; spans.push([ln, i, i + 2, "comment"]); i += 2; continue; }
      if (c === '"') {
        let j = i + 1;
        while (j < line.length && line[j] !== '"') j += line[j] === "\\" ? 2 : 1;
        spans.push([ln, i, Math.min(j + 1, line.length), "string"]); i = j + 1; continue;
      }
      const num = /^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(rest);
      if (num && !/[A-Za-z0-9_.]/.test(line[i - 1] || "")) { spans.push([ln, i, i + num[0].length, "number"]); i += num[0].length; continue; }
      const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest);
      if (word) {
        const w = word[0], call = /^\s*\(/.test(line.slice(i + w.length));
        if (keywords.has(w) && line[i - 1] !== ".") spans.push([ln, i, i + w.length, "keyword"]);
        else if (builtins.has(w) && call && line[i - 1] !== ".") spans.push([ln, i, i + w.length, "builtin"]);
        i += w.length; continue;
      }
      i++;
    }
  });
  return spans;
}

const want = { comment: "comment.", string: "string.", number: "constant.numeric.", builtin: "support.function.",
               keyword: ["keyword.", "storage.type"] };

async function main() {
  if (keywords.size < 20 || builtins.size < 30) throw new Error(`read ${keywords.size} keywords and ${builtins.size} builtins from the sources`);
  const g = await grammar();
  const counts = { comment: 0, string: 0, number: 0, builtin: 0, keyword: 0 }, bad = [];
  for (const file of process.argv.slice(2)) {
    const text = fs.readFileSync(file, "utf8").replace(/\r/g, "");
    const lines = text.split("\n"), tokens = [];
    let stack = vsctm.INITIAL;
    for (const line of lines) {
      const r = g.tokenizeLine(line, stack);
      tokens.push(r.tokens);
      stack = r.ruleStack;
    }
    for (const [ln, s, e, cls] of expected(text)) {
      for (let k = s; k < e; k++) {
        const t = tokens[ln].find((x) => x.startIndex <= k && k < x.endIndex);
        const prefixes = [].concat(want[cls]);
        if (!t || !t.scopes.some((sc) => prefixes.some((p) => sc.startsWith(p)))) {
          bad.push(`${file}:${ln + 1}:${k + 1}: '${lines[ln].slice(s, e)}' should be ${cls}, has ${t ? t.scopes.join(" ") : "no token"}`);
          break;
        }
      }
      counts[cls]++;
    }
  }
  if (bad.length) { console.log(bad.slice(0, 20).join("\n")); process.exit(1); }
  console.log(`grammar: ${process.argv.length - 2} files; ${Object.entries(counts).map(([k, v]) => `${v} ${k}s`).join(", ")} scoped right`);
}

main().catch((e) => { console.log(e.stack || String(e)); process.exit(1); });
