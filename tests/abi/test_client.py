"""test_client.py DIR: python/physc beyond one library (tests/run.sh abi_layer prepares DIR):
- load_run builds the run's library from metrics.json's program and --set values: the true
  trajectories with g = 9.5 equal `physc simulate --set g=9.5`'s (DIR/p.truth.csv) bit for bit,
  and a run whose program is gone is a file error;
- load_run of an f32 dtlnn run (DIR/run32) builds a library that predicts in float, as the
  run did: its rollouts equal `physc simulate --precision f32`'s (DIR/p32.jit.csv) bit for
  bit, and differ from the f64 prediction's (DIR/p64.jit.csv);
- libraries of two systems in one process, each its own model;
- a client of another ABI version is refused when it loads a library.
Run by Debian's /usr/bin/python3."""

import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import physc  # noqa: E402

d = sys.argv[1]
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += 0 if ok else 1


m = physc.load_run(os.path.join(d, "runp"))
t = m.true_trajectories(3, steps=10)
rows = np.loadtxt(os.path.join(d, "p.truth.csv"), delimiter=",", skiprows=1)
want = np.full_like(t, np.nan)
for r in rows:
    want[int(r[0]), int(round(r[1] / m.dt))] = r[2:]
check(np.array_equal(t, want) and os.path.exists(os.path.join(d, "runp", "libchnn.so")),
      "load_run: the library built from the run's program with --set g=9.5; its truth = physc simulate's")

shutil.copytree(os.path.join(d, "runp"), os.path.join(d, "moved"))
os.remove(os.path.join(d, "moved", "libchnn.so"))
os.rename(os.path.join(d, "param.phys"), os.path.join(d, "param.gone"))
try:
    physc.load_run(os.path.join(d, "moved"))
    check(False, "load_run of a run whose program is gone: no error")
except physc.Error as e:
    check(e.code == physc.ERR_FILE and "is not there" in str(e), f"load_run of a run whose program is gone ({e})")
os.rename(os.path.join(d, "param.gone"), os.path.join(d, "param.phys"))



def read_csv(path, n, steps, w):
    rows = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    out = np.full((n, steps + 1, w), np.nan)
    for r in rows:
        out[int(r[0]), int(round(r[1] / 0.2))] = r[2:]
    return out


m32 = physc.load_run(os.path.join(d, "run32"))
w = m32.state_size
p32, p64 = read_csv(os.path.join(d, "p32.jit.csv"), 3, 10, w), read_csv(os.path.join(d, "p64.jit.csv"), 3, 10, w)
truth = read_csv(os.path.join(d, "s2.truth.csv"), 3, 10, w)
pred = m32.rollout(truth[:, :2], steps=10)
check(np.array_equal(pred, p32) and not np.array_equal(pred, p64) and
      np.all(np.float32(pred[:, :, :2]) == pred[:, :, :2]),
      "load_run of an f32 dtlnn run: its rollouts = physc simulate --precision f32's (positions in float), not f64's")

a, b = physc.load(os.path.join(d, "libchnn.so")), physc.load(os.path.join(d, "libliet2.so"))
ta, tb = a.true_trajectories(2, steps=3), b.true_trajectories(2, steps=3)
check(a.system != b.system and a.rollout(ta[:, :1], steps=3).shape == (2, 4, a.state_size) and
      b.rollout(tb[:, :1], steps=3).shape == (2, 4, b.state_size), f"two libraries in one process: {a.system}, {b.system}")

physc.ABI_VERSION += 1
try:
    physc.load(os.path.join(d, "libchnn.so"))
    check(False, "a client of another ABI version: no error")
except physc.Error as e:
    check(e.code == physc.ERR_VERSION, f"a client of another ABI version is refused ({e})")
sys.exit(1 if failures else 0)
