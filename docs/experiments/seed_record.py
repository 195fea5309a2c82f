#!/usr/bin/python3
"""Keeps runs' per-seed figures in a small CSV, so that seeds run at different times (on
different machines) add up to one table.

  seed_record.py add RECORD.csv LABEL RUN_DIR...   # add (or replace) finished runs
  seed_record.py means RECORD.csv                  # means over seeds, per setup and model

A row is the label (what the runs' program was, e.g. "zero biases"), the system, the
training precision, the model, the seed, the three figures of the discrete-time paper's
Tables 2-3 (position MSE, true energy MSE, model-energy variance) from the run's
metrics.json, and the OpenBLAS kernels it ran on. Unfinished or failed runs are skipped.
Origin: issue 49's 2-body seeds (docs/results.md).
"""
import csv
import json
import math
import os
import sys

FIGURES = ["test_position_mse", "test_energy_mse", "test_model_energy_variance"]
KEY = ["label", "system", "precision", "model", "seed"]
HEADER = KEY + FIGURES + ["kernels"]


def read(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except FileNotFoundError:
        return []


def row_of(label, run_dir):
    try:
        with open(os.path.join(run_dir, "metrics.json")) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{run_dir}: skipped ({e})")
        return None
    figures = [m.get(k) for k in FIGURES]
    if m.get("epochs_done") != m.get("epochs") or m.get("rollout_failed") or \
            any(not isinstance(v, (int, float)) or not math.isfinite(v) for v in figures):
        print(f"{run_dir}: skipped (not finished, or a figure is not finite)")
        return None
    kernels = next((w for w in m.get("blas", "").split() if w.isalpha() and w[0].isupper()
                    and w not in ("OpenBLAS", "NO_LAPACKE", "DYNAMIC_ARCH", "NO_AFFINITY")), "")
    values = [label, m["system"], m["precision"], m["model"], str(m["seed"])]
    return dict(zip(HEADER, values + ["%.6e" % v for v in figures] + [kernels]))


def add(path, label, run_dirs):
    rows = {tuple(r[k] for k in KEY): r for r in read(path)}
    added = 0
    for d in run_dirs:
        r = row_of(label, d)
        if r:
            rows[tuple(r[k] for k in KEY)] = r
            added += 1
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, HEADER, lineterminator="\n")
        w.writeheader()
        for key in sorted(rows, key=lambda k: k[:4] + (int(k[4]),)):
            w.writerow(rows[key])
    os.replace(tmp, path)
    print(f"{added} runs recorded in {path}")


def means(path):
    groups = {}
    for r in read(path):
        groups.setdefault(tuple(r[k] for k in KEY[:4]), []).append(r)
    print("label | system | precision | model | seeds | position MSE | true energy MSE | model-energy variance")
    for key, rs in sorted(groups.items()):
        cells = ["%.3e" % (sum(float(r[k]) for r in rs) / len(rs)) for k in FIGURES]
        seeds = sorted(int(r["seed"]) for r in rs)
        print(" | ".join(key) + f" | {len(rs)} ({seeds[0]}-{seeds[-1]}) | " + " | ".join(cells))


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "add":
        add(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 3 and sys.argv[1] == "means":
        means(sys.argv[2])
    else:
        sys.exit(__doc__)
