#!/usr/bin/env bash
# Runs the front-end fuzzer for a bounded time, seeded from the examples and test inputs.
# usage: tests/fuzz/run.sh FUZZER SECONDS
set -euo pipefail
fuzzer=$1 seconds=$2
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
cp examples/*.phys stdlib/*.phys tests/errors/*.phys tests/fuzz/regressions/* "$corpus"/ 2>/dev/null || true  # (regressions: inputs the fuzzer once found)
export PHYSC_STDLIB="$PWD/stdlib"
# -max_len bounds one input; -timeout flags a hang; crashes leave crash-* files in build/.
mkdir -p build/fuzz-artifacts
exec "$fuzzer" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix=build/fuzz-artifacts/ -print_final_stats=1 "$corpus"
