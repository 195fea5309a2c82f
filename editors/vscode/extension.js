// extension.js: starts `physc lsp` for .phys files (diagnostics as you type, hover, go-to-definition,
// completion, formatting, document symbols). Install: `npm install` here, then copy or link this
// folder into ~/.vscode/extensions (docs/editors.md).
"use strict";
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("physc");
  const args = ["lsp"];
  if (config.get("stdlib")) args.push("--stdlib", config.get("stdlib"));
  const server = { command: config.get("path") || "physc", args };
  client = new LanguageClient("physc", "physc lsp", { run: server, debug: server },
                              { documentSelector: [{ scheme: "file", language: "phys" }] });
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
