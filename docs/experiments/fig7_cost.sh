#!/bin/bash
# docs/scaling.md's cost of the CHNN paper's Figure 7 (8 systems x 6 models at 2000 epochs):
# each system's six models trained 3 epochs by `physc compare` on one thread, one run at a
# time, and each run's seconds per epoch (from comparison.json) scaled to 2000 epochs. Run
# from the repository's root on a quiet machine:
#   bash docs/experiments/fig7_cost.sh [OUT_DIR]
set -u
out=${1:-/tmp/physc-fig7-cost}
mkdir -p "$out"
for ex in pendulum1 pendulum2 pendulum3 pendulum5 coupled3 gyroscope magnet rotor; do
  build/physc compare -q --models chnn,clnn,node,hnn,lnn,delan --epochs 3 --threads 1 --out "$out/$ex" \
    "examples/$ex.phys" > "$out/$ex.log" 2>&1 || echo "$ex: compare failed (see $out/$ex.log)"
done
/usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
systems = ["pendulum1", "pendulum2", "pendulum3", "pendulum5", "coupled3", "gyroscope", "magnet", "rotor"]
models = ["chnn", "clnn", "node", "hnn", "lnn", "delan"]
total = 0.0
print("| system | " + " | ".join(models) + " | all six |")
print("|---|" + "---|" * (len(models) + 1))
longest = 0.0
for s in systems:
    j = json.load(open(f"{out}/{s}/comparison.json"))
    spe = {m["model"]: m.get("seconds_per_epoch") for m in j["models"]}
    hours = [2000 * spe[m] / 3600 if spe.get(m) else float("nan") for m in models]
    total += sum(h for h in hours if h == h)
    longest = max([longest] + [h for h in hours if h == h])
    print(f"| {s} | " + " | ".join(f"{h:.2f}" for h in hours) + f" | {sum(hours):.1f} |")
print(f"\ncore-hours in all: {total:.1f}; the longest run: {longest:.2f} h")
# wall time: the runs handed out longest first to the first free core (what `physc sweep`
# under mpirun does with one process a core, --threads 1; greedy, so at most 4/3 of optimal)
runs = []
for s in systems:
    j = json.load(open(f"{out}/{s}/comparison.json"))
    runs += [2000 * m["seconds_per_epoch"] / 3600 for m in j["models"] if m.get("seconds_per_epoch")]
runs.sort(reverse=True)
import heapq
for label, cores in [("this machine (2 cores)", 2), ("1 node of 32 cores", 32), ("8 nodes", 256), ("64 nodes", 2048)]:
    free = [0.0] * min(cores, len(runs))
    heapq.heapify(free)
    for h in runs:
        heapq.heappush(free, heapq.heappop(free) + h)
    print(f"{label}: {max(free):.2f} h wall")
PY
