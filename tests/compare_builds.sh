#!/usr/bin/env bash
# compare_builds.sh OLD_PHYSC NEW_PHYSC: trains the same short runs of every model family with
# two builds of physc and checks that what the trained parameters determine is the same: the
# evaluation's per-trajectory figures (trajectories.csv), its error of every trajectory at
# every time (errors.csv) and the first test rollout (first-rollout.csv), byte for byte as
# printed (10 significant digits). params.bin is
# not compared, since its header's format may differ between builds.
# For refactors that must not change a figure (e.g. the model-family interface); not part of
# `make test` (it needs a second build). Prints one line per run; exits 1 if any differ.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OLD_PHYSC NEW_PHYSC" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
cd "$(dirname "$0")/.."
export PHYSC_STDLIB=$PWD/stdlib
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
# every model family: CHNN and CLNN (and a hybrid with a known term, f32, two threads, an
# example), the baselines in generalized coordinates, the second-order NODEs, the
# discrete-time models, Lie T2
for spec in "chnn:tests/run/small.phys:" "clnn:tests/run/small.phys:--model clnn" "hybrid:tests/run/hybrid.phys:" \
            "f32:tests/run/small.phys:--precision f32" "threads:tests/run/small.phys:--threads 2" \
            "pendulum1:examples/pendulum1.phys:--epochs 3" \
            "node:tests/run/baselines.phys:--model node --epochs 2" "hnn:tests/run/baselines.phys:--model hnn --epochs 2" \
            "hnnknown:tests/run/baselines.phys:--model hnnknown --epochs 2" \
            "lnn:tests/run/baselines.phys:--model lnn --epochs 2" "delan:tests/run/baselines.phys:--model delan" \
            "sonode:tests/run/baselines.phys:--model sonode --epochs 2" \
            "csonode:tests/run/baselines.phys:--model csonode --epochs 2" \
            "dtlnn:tests/run/dtlnn.phys:--model proposed --epochs 2" \
            "leapfrog_proposed:tests/run/dtlnn.phys:--model leapfrog_proposed --epochs 2" \
            "liet2:tests/run/liet2.phys:--model liet2 --epochs 2" "liet2-forced:tests/run/liet2.phys:--model forced_v --epochs 2"; do
  IFS=: read -r name prog flags <<< "$spec"
  for which in old new; do
    # shellcheck disable=SC2086
    "${!which}" run -q $flags --out "$tmp/$which-$name" "$prog" > "$tmp/$which-$name.log" 2>&1 ||
      { echo "$name: the $which build failed"; tail -3 "$tmp/$which-$name.log"; status=1; }
  done
  if cmp -s "$tmp/old-$name/trajectories.csv" "$tmp/new-$name/trajectories.csv" &&
     cmp -s "$tmp/old-$name/errors.csv" "$tmp/new-$name/errors.csv" &&
     cmp -s "$tmp/old-$name/first-rollout.csv" "$tmp/new-$name/first-rollout.csv"; then echo "$name: identical"
  else echo "$name: DIFFERS"; status=1; fi
done
exit $status
