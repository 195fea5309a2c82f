#!/bin/bash
# docs/scaling.md's measured table: each example with `train { shards 2 }` trained for a few
# epochs as 1 process x 1 thread, 1 process x 2 threads and 2 processes x 1 thread (mpirun),
# printing each run's s/epoch and the time split physc prints after training. Run from the
# repository's root on a quiet machine (the three configurations one after another):
#   bash docs/experiments/scaling.sh [OUT_DIR]
set -u
out=${1:-/tmp/physc-scaling}
mkdir -p "$out"
mpirun=(mpirun -np 2 --oversubscribe); [ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
for spec in "pendulum3:chnn:5" "twobody:dtlnn:2" "trappist1:liet2:1"; do
  IFS=: read -r ex model epochs <<< "$spec"
  sed -E "0,/^train \{/s//train { shards 2;/" "examples/$ex.phys" > "$out/$ex.phys"
  for conf in "1x1" "1x2" "2x1"; do
    IFS=x read -r k t <<< "$conf"
    launch=(); [ "$k" = 2 ] && launch=("${mpirun[@]}")
    log=$out/$ex-$conf.log
    /usr/bin/time -f 'wall %e s' "${launch[@]}" build/physc run --force --model "$model" --epochs "$epochs" --threads "$t" \
      --out "$out/$ex-$conf" "$out/$ex.phys" > "$log" 2>&1
    printf '%-10s %s processes x %s threads: %s | %s\n' "$ex" "$k" "$t" \
      "$(grep -o 'trained [0-9]* epochs* in .*' "$log" | head -1)" "$(grep '^time:' "$log" | head -1)"
  done
done
