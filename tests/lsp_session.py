"""tests/lsp_session.py PHYSC [FILE...]: a scripted session with `physc lsp` over its stdin and
stdout, as an editor would hold it: initialize; didOpen of an example with a misspelled name
(its diagnostic: where, what, the suggestion); document symbols; formatting of a careless
file (physc fmt's text); didChange to the fixed text (no diagnostic left); hover (a body's
mass and the degrees of freedom, a constant's value, a builtin, a member), definition (a
stdlib function's file and line, a body's declaration), completion (after `bob[1].`, in a
learned term's and the data block's settings, and names, builtins, keywords); a method it does
not answer and a message that is not JSON (errors, and the server goes on); shutdown and exit
(status 0). With FILEs, each is opened as a document too, then formatted and asked for its
symbols: the server must answer every request (no crash, no hang), whatever the bytes.
Prints what went wrong and exits 1, or prints the timings and exits 0."""
import json
import os
import random
import subprocess
import sys
import time

physc, extra = sys.argv[1], sys.argv[2:]
proc = subprocess.Popen([physc, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
bad, timings = [], {}


def send(obj=None, raw=None):
    body = raw if raw is not None else json.dumps(obj).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def receive():
    length = None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise EOFError("the server closed its output")
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))


def request(rid, method, params):
    t = time.perf_counter()
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    while True:
        msg = receive()
        if msg.get("id") == rid:
            timings.setdefault(method, []).append(time.perf_counter() - t)
            return msg


def notify(method, params):
    send({"jsonrpc": "2.0", "method": method, "params": params})


def diagnostics_of(uri):
    while True:
        msg = receive()
        if msg.get("method") == "textDocument/publishDiagnostics" and msg["params"]["uri"] == uri:
            return msg["params"]["diagnostics"]


def check(cond, what):
    if not cond:
        bad.append(what)


init = request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
caps = init.get("result", {}).get("capabilities", {})
check(caps.get("documentFormattingProvider") and caps.get("documentSymbolProvider") and caps.get("textDocumentSync") == 1,
      f"initialize: capabilities {caps}")
check(init["result"].get("serverInfo", {}).get("name") == "physc", "initialize: serverInfo")
notify("initialized", {})

# an example with a misspelled name: the checker's error, at the name, with its suggestion
text = open("examples/pendulum3.phys").read()
wrong = text.replace("uniform_gravity(m[i]", "uniform_gravty(m[i]", 1)
line = next(i for i, l in enumerate(wrong.splitlines()) if "uniform_gravty" in l)
col = wrong.splitlines()[line].index("uniform_gravty")
uri = "file://" + os.path.abspath("examples/pendulum3.phys")
t = time.perf_counter()
notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "phys", "version": 1, "text": wrong}})
diags = diagnostics_of(uri)
timings["didOpen -> diagnostics"] = [time.perf_counter() - t]
check(len(diags) == 1, f"didOpen: {len(diags)} diagnostics, want 1: {diags}")
if diags:
    d = diags[0]
    check(d["range"]["start"] == {"line": line, "character": col}, f"the diagnostic's place {d['range']}, want {line}:{col}")
    check("did you mean 'uniform_gravity'" in d["message"] and d["severity"] == 1 and d["source"] == "physc",
          f"the diagnostic {d}")

syms = request(2, "textDocument/documentSymbol", {"textDocument": {"uri": uri}}).get("result") or []
system = next((s for s in syms if s.get("detail") == "system"), None)
kids = [c["name"] for c in (system or {}).get("children", [])]
check(system and system["name"] == "pendulum3" and "bob" in kids and any(c.startswith("tether") for c in kids),
      f"document symbols: {[s['name'] for s in syms]}, the system's {kids}")
check(any(s["name"] == "chnn" and s.get("detail") == "chnn" for s in syms), "document symbols: no model chnn")

# formatting: physc fmt's text, as one edit
messy_uri = "file://" + os.path.abspath("tests/fmt/messy.phys")
notify("textDocument/didOpen", {"textDocument": {"uri": messy_uri, "languageId": "phys", "version": 1,
                                                  "text": open("tests/fmt/messy.phys", newline="").read()}})
diagnostics_of(messy_uri)
edits = request(3, "textDocument/formatting", {"textDocument": {"uri": messy_uri}, "options": {"tabSize": 2,
                                                                                              "insertSpaces": True}})
edits = edits.get("result")
check(edits and len(edits) == 1 and edits[0]["newText"] == open("tests/fmt/messy.expected").read(),
      f"formatting: {str(edits)[:200]}")

# the fix typed in: no diagnostic left
notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": text}]})
check(diagnostics_of(uri) == [], "didChange to the fixed text: diagnostics left")

# hover, definition, completion on the checked example (positions by what the lines hold)
lines = text.splitlines()
def at(needle, nth=0, offset=0):
    for i, l in enumerate(lines):
        if needle in l:
            if nth == 0:
                return {"line": i, "character": l.index(needle) + offset}
            nth -= 1
    raise KeyError(needle)
def hover(position):
    r = request(6, "textDocument/hover", {"textDocument": {"uri": uri}, "position": position}).get("result")
    return r["contents"]["value"] if r else ""
h = hover(at("tether bob[1]", offset=8))
check("body bob[i in 1..N] : point" in h and "`bob[1]`: mass 1.08221" in h and "3 degrees of freedom" in h,
      f"hover on a body: {h!r}")
h = hover(at("uniform_gravity(m[i], g", offset=22))
check("const g = 9.81" in h and "= 9.81" in h, f"hover on a constant: {h!r}")
h = hover(at("[sin(theta[1])", offset=2))
check("`sin(x)`: the sine" in h, f"hover on a builtin: {h!r}")
h = hover(at("bob[1].pos =", offset=8))
check(h.startswith("`.pos`: the centre of mass"), f"hover on a member: {h!r}")
d = request(7, "textDocument/definition", {"textDocument": {"uri": uri}, "position": at("uniform_gravity(m[i]", offset=3)})
d = d.get("result") or {}
check(d.get("uri", "").endswith("/stdlib/gravity.phys") and
      "fn uniform_gravity" in open(d["uri"][7:]).read().splitlines()[d["range"]["start"]["line"]],
      f"definition of a stdlib function: {d}")
d = request(8, "textDocument/definition", {"textDocument": {"uri": uri}, "position": at("tether bob[1]", offset=8)}).get("result")
check(d and d["uri"] == uri and d["range"]["start"]["line"] == at("body bob[")["line"], f"definition of a body: {d}")
c = request(9, "textDocument/completion", {"textDocument": {"uri": uri}, "position": at("bob[1].pos =", offset=7)}).get("result")
labels = [i["label"] for i in c or []]
check("pos" in labels and "vel" in labels and "sin" not in labels, f"completion after bob[1].: {labels}")
c = request(10, "textDocument/completion", {"textDocument": {"uri": uri}, "position": at("  tether", offset=2)}).get("result")
labels = [i["label"] for i in c or []]
check(all(w in labels for w in ("bob", "g", "normal", "euler_zxz", "tether", "potential")), f"completion: {labels[:40]}")

c = request(11, "textDocument/completion", {"textDocument": {"uri": uri}, "position": at("learned V : potential { hidden", offset=24)})
c = {i["label"]: i for i in c.get("result") or []}
check("activation" in c and c["activation"].get("detail") == "tanh|softplus|silu|relu" and "epochs" not in c,
      f"completion in a learned term's block: {sorted(c)[:30]}")
c = request(12, "textDocument/completion", {"textDocument": {"uri": uri}, "position": at("  chunk 5", offset=2)}).get("result")
labels = [i["label"] for i in c or []]
check(all(w in labels for w in ("train", "dt", "solver", "seed")) and "activation" not in labels,
      f"completion in the data block: {labels[:30]}")

# what it does not answer, and a message that is not JSON: errors, and it goes on
check(request(4, "textDocument/rename", {}).get("error", {}).get("code") == -32601, "an unknown method: not -32601")
send(raw=b"{not json")
check(receive().get("error", {}).get("code") == -32700, "a message that is not JSON: not -32700")

# any bytes as a document: answered (the FILEs, then each mutated: bytes flipped, cut short,
# a random run spliced in, by a seeded generator so every run sees the same documents)
rng = random.Random(1)
documents = []
for path in extra:
    data = open(path, "rb").read()
    documents.append((path, data))
    if data:
        b = bytearray(data)
        for _ in range(1 + len(b) // 200):
            b[rng.randrange(len(b))] = rng.randrange(256)
        documents.append((path + " (flipped)", bytes(b)))
        documents.append((path + " (cut)", data[:rng.randrange(len(data))]))
        at = rng.randrange(len(data))
        documents.append((path + " (spliced)", data[:at] + bytes(rng.randrange(256) for _ in range(40)) + data[at:]))
for i, (path, data) in enumerate(documents):
    data = data.decode("utf-8", "replace")
    u = "file:///fuzz/%d.phys" % i
    notify("textDocument/didOpen", {"textDocument": {"uri": u, "languageId": "phys", "version": 1, "text": data}})
    diagnostics_of(u)
    middle = {"line": data.count("\n") // 2, "character": 7}
    for k, (method, where) in enumerate((("textDocument/formatting", None), ("textDocument/documentSymbol", None),
                                         ("textDocument/hover", middle), ("textDocument/definition", middle),
                                         ("textDocument/completion", middle), ("textDocument/hover", {"line": 0, "character": 0}),
                                         ("textDocument/completion", {"line": 10 ** 6, "character": 10 ** 6}))):
        params = {"textDocument": {"uri": u}, "options": {}}
        if where:
            params["position"] = where
        r = request(100000 + 10 * i + k, method, params)
        check("result" in r, f"{path}: {method} answered {str(r)[:120]}")
    notify("textDocument/didClose", {"textDocument": {"uri": u}})
    check(diagnostics_of(u) == [], f"{path}: didClose did not clear its diagnostics")

check(request(5, "shutdown", None).get("result", 1) is None, "shutdown: not null")
notify("exit", None)
try:
    rc = proc.wait(timeout=10)
except subprocess.TimeoutExpired:
    proc.kill()
    rc = None
check(rc == 0, f"exit after shutdown: status {rc}")
if bad:
    print("\n".join(bad))
    sys.exit(1)
print("lsp session: " + ", ".join(f"{m} {1e3 * max(v):.1f} ms" for m, v in timings.items()) +
      f" (largest of each; {len(documents)} documents of any bytes answered)")
