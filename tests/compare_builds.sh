#!/usr/bin/env bash
# compare_builds.sh OLD_PHYSC NEW_PHYSC: trains the same small CHNN/CLNN runs with two builds
# of physc and checks that what the trained parameters determine is the same: the
# evaluation's per-trajectory figures (trajectories.csv) and its error of every trajectory at
# every time (errors.csv), byte for byte as printed (10 significant digits). params.bin is
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
for spec in "chnn:tests/run/small.phys:" "clnn:tests/run/small.phys:--model clnn" "hybrid:tests/run/hybrid.phys:" \
            "f32:tests/run/small.phys:--precision f32" "threads:tests/run/small.phys:--threads 2" \
            "pendulum1:examples/pendulum1.phys:--epochs 3"; do
  IFS=: read -r name prog flags <<< "$spec"
  for which in old new; do
    # shellcheck disable=SC2086
    "${!which}" run -q $flags --out "$tmp/$which-$name" "$prog" > "$tmp/$which-$name.log" 2>&1 ||
      { echo "$name: the $which build failed"; tail -3 "$tmp/$which-$name.log"; status=1; }
  done
  if cmp -s "$tmp/old-$name/trajectories.csv" "$tmp/new-$name/trajectories.csv" &&
     cmp -s "$tmp/old-$name/errors.csv" "$tmp/new-$name/errors.csv"; then echo "$name: identical"
  else echo "$name: DIFFERS"; status=1; fi
done
exit $status
