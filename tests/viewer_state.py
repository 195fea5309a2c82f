"""tests/viewer_state.py DOM RUN_DIR [DATA_DIR]: checks what physc view's page shows (its
physc-state element, from chromium --dump-dom) against the run's own files: at trajectory 0
the body centres of the truth and the model at time t against first-rollout.csv (float32
rounding), at any trajectory the curves' values at the cursor against errors.csv, and the
phase portrait's points: at trajectory 0 the model's position against first-rollout.csv, and
with DATA_DIR (the run's --save-data) the truth's position and velocity against test.csv.
Prints what differs and exits 1, or exits 0."""
import csv
import html
import json
import re
import sys

dom, run = open(sys.argv[1]).read(), sys.argv[2]
m = re.search(r'<pre id="physc-state"[^>]*>([^<]*)</pre>', dom)
if not m or not m.group(1).strip():
    sys.exit("the page wrote no state (its script did not run to the end)")
st = json.loads(html.unescape(m.group(1)))
bad = []
scene = json.load(open(f"{run}/scene.json"))
dim, dt = scene["dim"], scene["dt"]
if st["traj"] == 0:
    rows = list(csv.DictReader(open(f"{run}/first-rollout.csv")))
    row = rows[st["k"]]
    for b, body in enumerate(scene["bodies"]):
        f = body["first_coord"]
        names = [scene["names"][f + d] for d in range(dim)]
        want = [float(row[n]) for n in names]
        want_model = [float(row[n + "_model"]) for n in names]
        got, got_model = st["truth"][b], st["model"][0][b]
        for w, g, what in [(want, got, "truth"), (want_model, got_model, "model")]:
            if any(abs(x - y) > 1e-6 * (1 + abs(x)) for x, y in zip(w, g)):
                bad.append(f"{body['name']} {what} at t = {st['t']}: the page {g}, first-rollout.csv {w}")
for row in csv.DictReader(open(f"{run}/errors.csv")):
    if int(row["trajectory"]) == st["traj"] and abs(float(row["t"]) - st["k"] * dt) < dt / 2:
        for key, v in st["curves"].items():
            if v is not None and abs(float(row[key]) - v) > 1e-9 * (1 + abs(v)):
                bad.append(f"{key} of trajectory {st['traj']} at t = {st['t']}: the page {v}, errors.csv {row[key]}")
        break
else:
    bad.append(f"errors.csv has no row for trajectory {st['traj']} at t = {st['t']}")
ph = st.get("phase")
if "phase" in scene and scene["phase"] and not ph:
    bad.append("the page drew no phase portrait")
if ph:
    pos, vel = (scene["names"][i] for i in ph["rows"])
    close = lambda a, b: abs(a - b) <= 1e-6 * (1 + abs(a))
    if st["traj"] == 0:
        row = list(csv.DictReader(open(f"{run}/first-rollout.csv")))[st["k"]]
        if not close(float(row[pos + "_model"]), ph["model"][0][0]):
            bad.append(f"phase portrait: the model's {pos} {ph['model'][0][0]}, first-rollout.csv {row[pos + '_model']}")
    if len(sys.argv) > 3:
        for row in csv.DictReader(open(f"{sys.argv[3]}/test.csv")):
            if int(row["traj"]) == st["traj"] and abs(float(row["t"]) - st["k"] * dt) < dt / 2:
                if not (close(float(row[pos]), ph["truth"][0]) and close(float(row[vel]), ph["truth"][1])):
                    bad.append(f"phase portrait: the truth's ({pos}, {vel}) {ph['truth']}, test.csv ({row[pos]}, {row[vel]})")
                break
        else:
            bad.append(f"test.csv has no row for trajectory {st['traj']} at t = {st['t']}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
