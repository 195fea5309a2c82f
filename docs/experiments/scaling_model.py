"""docs/scaling.md's model of one run on K processes, from the runs of scaling.sh.

Reads OUT_DIR/<example>-1x1.log (one process, one thread: the compute per step c1 and the
validation per epoch v1, steps per epoch) and <example>-2x1.log (the bytes a step received
from the other process: one shard's gradient and loss), and prints the time per epoch the
model gives at K = 1, 2, 4, 8, 16 processes with S = 16 shards on two networks:

  epoch(K) = steps * (c1 / K + x(K)) + v1 / K
  x(K)     = (K - 1) * alpha + S * (1 - 1/K) * shard / bandwidth

x is Open MPI's ring allgather of the shards' gradients (each process receives the S - S/K
shards it did not compute). Usage: /usr/bin/python3 docs/experiments/scaling_model.py [OUT_DIR]
"""
import re
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/physc-scaling"
S = 16
networks = [("InfiniBand-class (2 us, 10 GB/s)", 2e-6, 10e9), ("10 Gb Ethernet, TCP (30 us, 1.1 GB/s)", 30e-6, 1.1e9)]
for ex in ["pendulum3", "twobody", "trappist1"]:
    one = open(f"{out}/{ex}-1x1.log").read()
    two = open(f"{out}/{ex}-2x1.log").read()
    m = re.search(r"time: (\d+) epochs?, (\d+) steps: compute ([\d.]+) s, validation ([\d.]+) s", one)
    epochs, steps, compute, valid = int(m[1]), int(m[2]), float(m[3]), float(m[4])
    shard = float(re.search(r"; (\d+) bytes received", two)[1])  # K = 2, S = 2: one shard
    c1, v1, per_epoch = compute / steps, valid / epochs, steps / epochs
    print(f"\n{ex}: {per_epoch:.0f} steps an epoch, c1 = {1e3 * c1:.1f} ms a step, v1 = {v1:.3f} s an epoch, "
          f"a shard's gradient {shard / 1e6:.2f} MB")
    for name, alpha, bw in networks:
        row = []
        for K in [1, 2, 4, 8, 16]:
            x = (K - 1) * alpha + S * (1 - 1 / K) * shard / bw
            epoch = per_epoch * (c1 / K + x) + v1 / K
            row.append(f"K={K}: {epoch:.3g} s ({100 * per_epoch * x / epoch:.0f} % exchange)")
        print(f"  {name}: " + "; ".join(row))
