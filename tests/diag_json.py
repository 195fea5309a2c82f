"""tests/diag_json.py EXPECTED: reads `physc check --diagnostics-format json` on stdin (one JSON
object a line) and checks it says what the text form says: each located diagnostic and its
notes rendered as `file:line:col: severity: message` must be EXPECTED's lines (a golden error
test's), in order; every object has its members (a span that ends at or after it starts, a
code, fix-its whose replacement the message suggests). Prints what differs and exits 1."""
import json
import sys

want = open(sys.argv[1]).read().splitlines()
got, bad = [], []
keys = {"file", "line", "column", "end_line", "end_column", "severity", "code", "message", "notes", "fixits"}
for n, line in enumerate(sys.stdin, 1):
    try:
        d = json.loads(line)
    except ValueError as e:
        bad.append(f"line {n} is not JSON: {e}: {line[:80]}")
        continue
    if set(d) != keys:
        bad.append(f"line {n}: members {sorted(d)}")
        continue
    if d["file"] is not None:
        if (d["end_line"], d["end_column"]) < (d["line"], d["column"]):
            bad.append(f"line {n}: the span ends before it starts")
        got.append(f"{d['file']}:{d['line']}:{d['column']}: {d['severity']}: {d['message']}")
    for note in d["notes"]:
        got.append(f"{note['file']}:{note['line']}:{note['column']}: note: {note['message']}")
    for fix in d["fixits"]:
        if f"did you mean '{fix['replacement']}'" not in d["message"]:
            bad.append(f"line {n}: a fix-it '{fix['replacement']}' the message does not suggest")
    if not d["code"].startswith("P"):
        bad.append(f"line {n}: code {d['code']}")
if got != want:
    bad.append("the JSON says:\n  " + "\n  ".join(got) + "\nthe text form says:\n  " + "\n  ".join(want))
print("\n".join(bad))
sys.exit(1 if bad else 0)
