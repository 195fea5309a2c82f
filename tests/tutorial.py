"""tests/tutorial.py TUTORIAL BUILD: runs docs/tutorial.md as a reader would, in a fresh folder
(with `build`, `runtime` and `stdlib` linked to the checkout's): each ```phys FILE block is
written (```phys FILE append: added to it), each ```sh block's commands run in order with
bash -e; then checks what the page promises: the trained rod's relative state error below
1e-2 and its constraints within 1e-6, the page, the video, the CSV-trained run and the C
program's trajectories. Prints the first failure and exits 1, or exits 0."""
import json
import os
import re
import subprocess
import sys
import tempfile

page, build = sys.argv[1], os.path.abspath(sys.argv[2])
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
blocks = re.findall(r"^```([a-z]*)([^\n]*)\n(.*?)^```", open(page).read(), re.M | re.S)
work = tempfile.mkdtemp(prefix="physc-tutorial-")
os.symlink(build, os.path.join(work, "build"))
for name in ("runtime", "stdlib"):
    os.symlink(os.path.join(root, name), os.path.join(work, name))
ran = 0
for lang, info, body in blocks:
    args = info.split()
    if lang == "phys" and args:
        with open(os.path.join(work, args[0]), "a" if "append" in args[1:] else "w") as f:
            f.write(("\n" if "append" in args[1:] else "") + body)
    elif lang == "sh":
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", body], cwd=work, capture_output=True, text=True,
                           timeout=600)
        ran += body.count("\n")
        if r.returncode != 0:
            sys.exit(f"tutorial: a block failed (exit {r.returncode}):\n{body}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")


def need(cond, what):
    if not cond:
        sys.exit(f"tutorial: {what} (in {work})")


m = json.load(open(os.path.join(work, "runs/rod/metrics.json")))
need(m["test_geomean_rel_error"] < 1e-2, f"the rod's relative error {m['test_geomean_rel_error']}, not below 1e-2")
need(m["test_constraint_violation"] < 1e-6, f"its constraint violation {m['test_constraint_violation']}")
need(os.path.getsize(os.path.join(work, "runs/rod/view.html")) > 10000, "no page")
need(os.path.getsize(os.path.join(work, "rod.mp4")) > 1000, "no video")
mc = json.load(open(os.path.join(work, "runs/rod-csv/metrics.json")))
need(mc["train_trajectories"] == 200 and mc["test_geomean_rel_error"] < 0.5, f"the CSV-trained run: {mc.get('train_trajectories')}")
rows = open(os.path.join(work, "rod-model.csv")).read().splitlines()
need(len(rows) == 1 + 2 * 101 and rows[0].startswith("traj,t,rod.x"), f"the C program's CSV: {len(rows)} rows")
print(f"tutorial: {len(blocks)} blocks, {ran} command lines run; the rod's relative error {m['test_geomean_rel_error']:.2e}, "
      f"from its CSV {mc['test_geomean_rel_error']:.2e}")
subprocess.run(["rm", "-rf", work])
