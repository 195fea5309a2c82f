#!/usr/bin/env python3
# reference_convention.py -- an experiment behind docs/results.md (commit 1adad61), not part of
# physc: re-summarizes a `physc run`'s errors.csv the way the CHNN reference code's notebook
# summarizes its test rollouts, so that physc's figures can be set beside the paper's
# per-trajectory results like for like.
#
# physc (the paper's definition): exp( trapz(log(Err + 1e-8)) over the observation times
#   0, dt, ..., T  /  T ).
# reference notebook: the same trapezoid sum over its observation times 0, dt, ..., T - dt
#   (torch.arange(0, T, dt): one point fewer), divided by T all the same.
# Both then take the geometric mean over the test trajectories. Standard library only.
# usage: reference_convention.py RUN_DIR [RUN_DIR ...]
import csv, math, os, sys


def series(path):
    """{trajectory: [(t, rel_error, chaos_floor), ...]} in time order"""
    out = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            out.setdefault(int(row["trajectory"]), []).append(
                (float(row["t"]), float(row["rel_error"]), float(row["chaos_floor"])))
    return out


def time_summary(values, dt, T):
    logs = [math.log(v + 1e-8) for v in values]
    return math.exp(sum(0.5 * dt * (a + b) for a, b in zip(logs, logs[1:])) / T)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


for run in sys.argv[1:]:
    trajs = series(os.path.join(run, "errors.csv"))
    any_traj = next(iter(trajs.values()))
    dt = any_traj[1][0] - any_traj[0][0]
    T = any_traj[-1][0]
    figures = {}
    for col, name in ((1, "model"), (2, "chaos floor")):
        paper = [time_summary([p[col] for p in s], dt, T) for s in trajs.values()]
        ref = [time_summary([p[col] for p in s[:-1]], dt, T) for s in trajs.values()]
        figures[name] = (geomean(paper), geomean(ref))
    print(f"{run}: {len(trajs)} trajectories, T = {T:g}")
    for name, (paper, ref) in figures.items():
        print(f"  {name:12s} paper's definition {paper:.4e}   reference code's {ref:.4e}   ratio {ref / paper:.3f}")
