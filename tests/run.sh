#!/usr/bin/env bash
# Runs every test layer and ends with one line "N passed, N failed".
#   --build DIR        the build to test (physc, tests/*)
#   --asan DIR         also run the layers with the ASan+UBSan build in DIR
#   --fuzz BIN         also run the front-end fuzzer BIN for --fuzz-seconds (default 30)
#   --only 'LAYER ARG' run one layer function alone, e.g. --only 'malformed_layer build/physc'
# Golden diagnostics: tests/errors/NAME.phys with NAME.expected (the diagnostic lines).
# Example summaries: examples/NAME.phys with tests/examples/NAME.expected (physc check's output).
# Golden IR: tests/ir/NAME.phys with NAME.expected (physc dump-ir's output).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=build asan="" fuzz="" fuzz_seconds=30 only=""
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --asan) asan=$2; shift 2 ;;
    --fuzz) fuzz=$2; shift 2 ;;
    --fuzz-seconds) fuzz_seconds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "tests/run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
export PHYSC_STDLIB=$root/stdlib
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PHYSC_CACHE_DIR=$tmp/jit-cache # compiled kernels: the suite's own cache, not the user's
passed=0 failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
# timed LABEL CMD...: runs CMD and notes its wall time; the slowest layers are printed at
# the end, so a suite that outgrows its budget on some CPU shows where.
timings=""
timed() {
  local label=$1 start=$SECONDS; shift
  "$@"
  timings+="$((SECONDS - start)) $label"$'\n'
}

# A run is a crash if it died of a signal (exit >= 128) or a sanitizer spoke.
crashed() { [ "$1" -ge 124 ] || grep -q -e 'Sanitizer' -e 'runtime error:' "$2"; }

unit_layer() { # $1 = build dir
  # two tests at a time (they are independent programs, mostly on one core), the longest
  # first so that the rest run beside it: test_loop_form JIT-compiles 100-link chains
  local out=$tmp/unit-$(basename "$1") t name
  mkdir -p "$out"
  { echo "$1/tests/test_loop_form"; ls "$1"/tests/* | grep -v '/test_loop_form$'; } |
    while read -r t; do [ -x "$t" ] && printf '%s\0' "$t"; done |
    xargs -0 -P 2 -I{} sh -c '"$1" > "$2/${1##*/}.out" 2>&1; echo $? > "$2/${1##*/}.rc"' _ {} "$out"
  for t in "$1"/tests/*; do
    [ -x "$t" ] || continue
    name=${t##*/}
    if [ "$(cat "$out/$name.rc" 2> /dev/null)" = 0 ]; then pass; else fail "unit test $t"; cat "$out/$name.out"; fi
  done
}

errors_layer() { # $1 = physc
  local physc=$1 f name exp rc
  for f in tests/errors/*.phys; do
    name=$(basename "$f" .phys)
    exp=tests/errors/$name.expected
    if [ ! -f "$exp" ]; then fail "$f has no $name.expected"; continue; fi
    (cd tests/errors && timeout 20 "$root/$physc" check "$name.phys") > "$tmp/out" 2> "$tmp/err"
    rc=$?
    grep -E '^[^ ].*:[0-9]+:[0-9]+: (error|warning|note): ' "$tmp/err" > "$tmp/got"
    local want_rc=0
    grep -q ': error: ' "$exp" && want_rc=1
    if crashed $rc "$tmp/err"; then fail "$f crashed (exit $rc)"; cat "$tmp/err"
    elif [ $rc -ne $want_rc ]; then fail "$f: exit $rc, expected $want_rc"; cat "$tmp/err"
    elif ! diff -u "$exp" "$tmp/got" > "$tmp/diff"; then fail "$f: diagnostics differ"; cat "$tmp/diff"
    else pass; fi
    # the JSON form says the same (tests/diag_json.py), with the same exit status and nothing else
    (cd tests/errors && timeout 20 "$root/$physc" check --diagnostics-format json "$name.phys") > /dev/null 2> "$tmp/json"
    rc=$?
    if [ $rc -ne $want_rc ]; then fail "$f: --diagnostics-format json: exit $rc, expected $want_rc"
    elif ! /usr/bin/python3 tests/diag_json.py "$exp" < "$tmp/json" > "$tmp/diff" 2>&1; then fail "$f: its JSON diagnostics"; head -20 "$tmp/diff"
    else pass; fi
  done
  expect "--diagnostics-format xml" 2 "bad value 'xml' for --diagnostics-format \\(text or json\\)" -- \
    "$physc" check --diagnostics-format xml tests/errors/name-unknown-did-you-mean.phys
  expect "--diagnostics-format json: a missing file" 1 '^\{"file": null, "line": null, .*"message": "cannot read' -- \
    "$physc" check --diagnostics-format json tests/errors/no-such-file.phys
}

ir_layer() { # $1 = physc: golden IR dumps of small systems
  local physc=$1 f
  for f in tests/ir/*.phys; do
    timeout 20 "$physc" dump-ir "$f" > "$tmp/out" 2> "$tmp/err"
    if [ $? -ne 0 ]; then fail "$f: dump-ir failed"; cat "$tmp/err"
    elif ! diff -u "${f%.phys}.expected" "$tmp/out" > "$tmp/diff"; then fail "$f: IR differs"; head -40 "$tmp/diff"
    else pass; fi
  done
}

examples_layer() { # $1 = physc
  local physc=$1 f name exp rc
  for f in examples/*.phys; do
    name=$(basename "$f" .phys)
    exp=tests/examples/$name.expected
    (cd examples && timeout 20 "$root/$physc" check "$name.phys") > "$tmp/out" 2> "$tmp/err"
    rc=$?
    if [ $rc -ne 0 ] || [ -s "$tmp/err" ]; then fail "$f: physc check exit $rc"; cat "$tmp/err"
    elif [ ! -f "$exp" ]; then fail "$f has no $exp"
    elif ! diff -u "$exp" "$tmp/out" > "$tmp/diff"; then fail "$f: summary differs"; cat "$tmp/diff"
    else pass; fi
  done
}

# expect NAME EXIT PATTERN -- CMD...: the command exits EXIT and its output matches PATTERN.
expect() {
  local name=$1 want=$2 pattern=$3; shift 4
  timeout "${expect_timeout:-30}" "$@" > "$tmp/o" 2>&1
  local rc=$?
  if crashed $rc "$tmp/o" && [ "$want" -lt 124 ]; then fail "$name crashed (exit $rc)"; head -20 "$tmp/o"
  elif [ $rc -ne "$want" ]; then fail "$name: exit $rc, expected $want"; head -20 "$tmp/o"
  elif ! grep -q -E -e "$pattern" "$tmp/o"; then fail "$name: output lacks /$pattern/"; head -20 "$tmp/o"
  else pass; fi
}

# metric_keys NAME BUILD METRICS_JSON [so3] [known]: metrics.json has each key the table of
# metrics (runtime/train/metrics.h) gives such a run exactly once, and no other metric's (test_metrics
# --keys lists them from the table's columns).
metric_keys() {
  local name=$1 b=$2 json=$3 k n bad=""; shift 3
  local want; want=$("$b/tests/test_metrics" --keys "$@")
  for k in $("$b/tests/test_metrics" --keys so3 rigid known); do
    n=$(grep -c "^  \"$k\": " "$json")
    if grep -q -x -F "$k" <<< "$want"; then [ "$n" -eq 1 ] || bad="$bad $k($n)"; else [ "$n" -eq 0 ] || bad="$bad $k($n)"; fi
  done
  if [ -n "$want" ] && [ -z "$bad" ]; then pass; else fail "$name: metrics.json's metric keys, each once (count):$bad"; fi
}

# The cache of compiled kernels (compiler/jit_cache.h), in a folder of its own.
cache_tests() { # $1 = physc
  local p=$1 d s=examples/pendulum2.phys; d=$(mktemp -d "$tmp/cache-tests.XXXXXX")
  local c="$d/cache"; mkdir -p "$d"
  entries() { find "$c" -name '*.jit' 2> /dev/null | wc -l; }
  expect "cache: a first compile" 0 '\(LLVM JIT\)$' -- env PHYSC_CACHE_DIR="$c" "$p" simulate --n 2 --steps 30 --out "$d/a.csv" "$s"
  [ "$(entries)" -eq 1 ] && pass || fail "cache: a compile left $(entries) entries, not 1"
  expect "cache: the same system again" 0 '\(code from the cache\)$' -- env PHYSC_CACHE_DIR="$c" "$p" simulate --n 2 --steps 30 --out "$d/b.csv" "$s"
  cmp -s "$d/a.csv" "$d/b.csv" && pass || fail "cache: the cached code's trajectories differ from the compiled code's"
  # one constant changed in its last bit: another key
  sed 's/^const g = 9.81$/const g = 9.810000000000002/' "$s" > "$d/g.phys"
  expect "cache: a changed constant misses" 0 '\(LLVM JIT\)$' -- env PHYSC_CACHE_DIR="$c" "$p" simulate --n 2 --steps 30 --out "$d/g.csv" "$d/g.phys"
  ! cmp -s "$d/a.csv" "$d/g.csv" && [ "$(entries)" -eq 2 ] && pass || fail "cache: the changed constant's run is not its own"
  expect "cache: --no-cache compiles" 0 '\(LLVM JIT\)$' -- env PHYSC_CACHE_DIR="$c" "$p" simulate --no-cache --n 2 --steps 30 --out "$d/n.csv" "$s"
  cmp -s "$d/a.csv" "$d/n.csv" && [ "$(entries)" -eq 2 ] && pass || fail "cache: --no-cache wrote an entry or changed the result"
  # a garbled entry (a crash mid-write would leave none: entries are renamed into place) reads as a miss and is rewritten
  local e; e=$(ls -t "$c"/*.jit | tail -1)
  head -c 3000 "$e" > "$d/cut" && cp "$d/cut" "$e"
  expect "cache: a truncated entry" 0 '\(LLVM JIT\)$' -- env PHYSC_CACHE_DIR="$c" "$p" simulate --n 2 --steps 30 --out "$d/t.csv" "$s"
  cmp -s "$d/a.csv" "$d/t.csv" && pass || fail "cache: the run after a truncated entry differs"
  expect "cache: rewritten" 0 '\(code from the cache\)$' -- env PHYSC_CACHE_DIR="$c" "$p" simulate --n 2 --steps 30 --out "$d/t.csv" "$s"
  # a writer's temporary (a writer killed before its rename) goes once a day old; a fresh one stays
  local k; k=$(basename "$e")
  touch -d '2 days ago' "$c/$k.Stale1"; touch "$c/$k.Fresh1"
  env PHYSC_CACHE_DIR="$c" "$p" simulate --n 1 --steps 2 examples/pendulum1.phys > /dev/null 2>&1 # a new entry: trims
  [ ! -e "$c/$k.Stale1" ] && [ -e "$c/$k.Fresh1" ] && pass || { fail "cache: a day-old temporary kept, or a fresh one removed"; ls -la "$c"; }
  # a cache that cannot be made is no cache, not an error
  expect "cache: an unusable folder" 0 '\(LLVM JIT\)$' -- env PHYSC_CACHE_DIR=/proc/no/cache "$p" simulate --n 2 --steps 30 --out "$d/u.csv" "$s"
  # bounded: past $PHYSC_CACHE_MAX_MB the entries used longest ago go (a hit counts as a use)
  local b="$d/bound"
  env PHYSC_CACHE_DIR="$b" "$p" simulate --n 1 --steps 2 examples/pendulum1.phys > /dev/null 2>&1
  env PHYSC_CACHE_DIR="$b" "$p" simulate --n 1 --steps 2 examples/pendulum3.phys > /dev/null 2>&1
  env PHYSC_CACHE_DIR="$b" "$p" simulate --n 1 --steps 2 examples/pendulum1.phys > /dev/null 2>&1 # a hit: pendulum1 used last
  # a bound that holds pendulum1's and pendulum2's entries (their sizes from a cache of their own), not pendulum3's too
  env PHYSC_CACHE_DIR="$d/sizes" "$p" simulate --n 1 --steps 2 examples/pendulum1.phys > /dev/null 2>&1
  env PHYSC_CACHE_DIR="$d/sizes" "$p" simulate --n 1 --steps 2 examples/pendulum2.phys > /dev/null 2>&1
  local bytes; bytes=$(stat -c %s "$d/sizes"/*.jit | awk '{ s += $1 } END { print s }')
  env PHYSC_CACHE_DIR="$b" PHYSC_CACHE_MAX_MB=$(awk -v b="$bytes" 'BEGIN { printf "%.9f", (b + 16) / 1048576 }') \
    "$p" simulate --n 1 --steps 2 examples/pendulum2.phys > /dev/null 2>&1
  expect "cache: the entry used last is kept" 0 '\(code from the cache\)$' -- env PHYSC_CACHE_DIR="$b" "$p" simulate --n 1 --steps 2 examples/pendulum1.phys
  expect "cache: the entry used longest ago went" 0 '\(LLVM JIT\)$' -- env PHYSC_CACHE_DIR="$b" "$p" simulate --n 1 --steps 2 examples/pendulum3.phys
  # two runs filling an empty cache at once: both finish with the same trajectories, one entry
  env PHYSC_CACHE_DIR="$d/two" "$p" simulate --n 2 --steps 30 --out "$d/x.csv" "$s" > /dev/null 2>&1 & local pid=$!
  env PHYSC_CACHE_DIR="$d/two" "$p" simulate --n 2 --steps 30 --out "$d/y.csv" "$s" > /dev/null 2>&1; local rc=$?
  wait $pid && [ $rc -eq 0 ] && cmp -s "$d/a.csv" "$d/x.csv" && cmp -s "$d/a.csv" "$d/y.csv" &&
    [ "$(find "$d/two" -name '*.jit' | wc -l)" -eq 1 ] && [ -z "$(find "$d/two" -name '*.jit.*')" ] && pass ||
    fail "cache: two runs at once"
}

cli_layer() { # $1 = physc
  local p=$1
  cache_tests "$p"
  expect "--help" 0 'usage: physc COMMAND' -- "$p" --help
  expect "check --help" 0 'usage: physc check' -- "$p" check --help
  expect "dump-ir --help" 0 'usage: physc dump-ir' -- "$p" dump-ir --help
  expect "dump-ir one kernel" 0 '^kernel DPhi' -- "$p" dump-ir --kernel DPhi examples/pendulum3.phys
  expect "dump-ir a generalized-coordinate kernel" 0 '^kernel CoordInverse\(inputs 2, params 0\) -> 2 outputs' -- "$p" dump-ir --kernel CoordInverse examples/pendulum-dg.phys
  expect "dump-ir unknown kernel" 2 "no kernel named 'Nope'" -- "$p" dump-ir --kernel Nope examples/pendulum3.phys
  expect "dump-ir bad input" 1 'error:' -- "$p" dump-ir tests/errors/shape-add-vec2-vec3.phys
  expect "simulate --help" 0 'usage: physc simulate' -- "$p" simulate --help
  expect "simulate pendulum3" 0 'relative energy drift \(max\): [0-9.]+e-0[6-9]' -- "$p" simulate --n 2 examples/pendulum3.phys
  # H(0) = 0 (released at rest on the pivot's level): the drift is measured against the kinetic energy
  expect "simulate from H(0) = 0" 0 'relative energy drift \(max\): [0-9.]+e-0[5-9]' -- "$p" simulate --n 1 tests/physics/chain-level.phys
  expect "simulate to CSV" 0 "wrote $tmp/traj.csv" -- "$p" simulate --n 2 --steps 5 --out "$tmp/traj.csv" examples/pendulum2.phys
  if [ "$(head -1 "$tmp/traj.csv")" = "traj,t,bob[1].x,bob[1].y,bob[2].x,bob[2].y,bob[1].vx,bob[1].vy,bob[2].vx,bob[2].vy" ] &&
     [ "$(wc -l < "$tmp/traj.csv")" -eq 13 ]; then pass; else fail "simulate CSV layout"; head -3 "$tmp/traj.csv"; fi
  expect "simulate to an unwritable CSV" 1 'cannot write /nonexistent/traj.csv: No such file' -- "$p" simulate --n 2 --steps 5 --out /nonexistent/traj.csv examples/pendulum2.phys
  expect "simulate rattle" 0 'constraint violation \(max \|Phi\|\): [0-9.]+e-1[0-9]' -- "$p" simulate --integrator rattle --n 2 examples/pendulum3.phys
  # axis restrictions: d - 1 independent rows, so the hinge and the 2-D rod simulate
  expect "simulate axis hinge" 0 'relative energy drift \(max\): [0-9.]+e-(0[7-9]|1[0-9])' -- "$p" simulate --n 4 tests/physics/hinge-axis.phys
  expect "simulate axis hinge rattle" 0 'constraint violation \(max \|Phi\|\): [0-9.]+e-1[0-9]' -- "$p" simulate --integrator rattle --n 4 tests/physics/hinge-axis.phys
  expect "simulate axis 2-D rod" 0 'dopri5: rtol [^,]*, atol [^,]*, [1-9][0-9]* steps' -- "$p" simulate --n 4 tests/physics/rod-fall.phys
  # dim 1: a point on a line on a spring, against x0 cos(2t) + v0/2 sin(2t); emit-c the same numbers
  expect "simulate 1-D oscillator" 0 "wrote $tmp/osc.csv" -- "$p" simulate --n 3 --out "$tmp/osc.csv" tests/physics/oscillator-1d.phys
  if [ "$(head -1 "$tmp/osc.csv")" = "traj,t,bob.x,bob.vx" ] && [ "$(wc -l < "$tmp/osc.csv")" -eq 604 ] &&
     awk -F, 'NR > 1 { if ($2 == 0) { x0[$1] = $3; v0[$1] = $4 } c = cos(2 * $2); s = sin(2 * $2)
                       dx = x0[$1] * c + v0[$1] / 2 * s - $3; dv = -2 * x0[$1] * s + v0[$1] * c - $4
                       e = e > dx * dx + dv * dv ? e : dx * dx + dv * dv } END { exit !(sqrt(e) < 1e-9) }' "$tmp/osc.csv"
  then pass; else fail "simulate 1-D oscillator: columns or the closed form"; head -3 "$tmp/osc.csv"; fi
  expect "check 1-D" 0 '^system oscillator \(1-D\)$' -- "$p" check tests/physics/oscillator-1d.phys
  if grep -q -x '  coordinates:         1 (1 point x 1)' "$tmp/o" && grep -q -x '  degrees of freedom:  1' "$tmp/o"; then pass
  else fail "check 1-D: the summary"; cat "$tmp/o"; fi
  if "$p" emit-c tests/physics/oscillator-1d.phys -o "$tmp/osc.c" > /dev/null &&
     cc -O2 -std=c17 -Iruntime "$tmp/osc.c" "$build/libphysrt.a" -lm -o "$tmp/osc" && "$tmp/osc" --n 3 --out "$tmp/osc-c.csv" > /dev/null &&
     cmp -s "$tmp/osc.csv" "$tmp/osc-c.csv"; then pass
  else fail "emit-c 1-D oscillator: not the JIT's trajectories"; fi
  expect "leapfrog refuses constraints" 2 'ignores constraints' -- "$p" simulate --integrator leapfrog examples/pendulum3.phys
  expect "simulate refuses discrete_gradient" 2 'discrete_gradient is the step of learned dtlnn models' -- "$p" simulate --integrator discrete_gradient tests/physics/oscillator-1d.phys
  expect "an emitted program refuses discrete_gradient" 2 'discrete_gradient is the step of learned dtlnn models' -- "$tmp/osc" --integrator discrete_gradient
  expect "simulate unknown integrator" 2 "unknown integrator 'verlett'" -- "$p" simulate --integrator verlett examples/pendulum1.phys
  expect "simulate bad --n" 2 "bad value '0' for --n" -- "$p" simulate --n 0 examples/pendulum1.phys
  expect "simulate so3 system" 0 'relative energy drift \(max\): [0-9.]+e-(09|1[0-9])' -- "$p" simulate --n 2 examples/twobody-rigid.phys
  expect "leapfrog refuses so3" 2 'does not handle bodies with `state so3`' -- "$p" simulate --integrator leapfrog examples/twobody-rigid.phys
  # force blocks (non-conservative forces): listed by check, stepped by dopri5 and liet2, emitted alike
  expect "check force blocks" 0 '^  forces: +drag, motor \(non-conservative\)$' -- "$p" check tests/physics/forced.phys
  if "$p" simulate --integrator liet2 --n 2 --steps 50 --out "$tmp/forced.csv" tests/physics/forced.phys > /dev/null &&
     "$p" emit-c tests/physics/forced.phys -o "$tmp/forced.c" > /dev/null &&
     cc -O2 -std=c17 -Iruntime "$tmp/forced.c" "$build/libphysrt.a" -lm -o "$tmp/forced" &&
     "$tmp/forced" --integrator liet2 --n 2 --steps 50 --out "$tmp/forced-c.csv" > /dev/null && cmp -s "$tmp/forced.csv" "$tmp/forced-c.csv"
  then pass; else fail "emit-c with force blocks: not the JIT's trajectories"; fi
  # the Lie-group integrators (Lie T2 paper): R stays on SO(3); an emitted program steps the same numbers
  expect "simulate liet2" 0 'rotation error \(max \|R\^T R - I\|\): [0-9.]+e-1[3-7]' -- "$p" simulate --integrator liet2 --n 2 --steps 500 --out "$tmp/tbr.csv" examples/twobody-rigid.phys
  expect "simulate verlet drifts off SO(3)" 0 'rotation error \(max \|R\^T R - I\|\): [0-9.]+e[-+]0[0-4]' -- "$p" simulate --integrator verlet --n 2 --steps 10 examples/twobody-rigid.phys
  expect "simulate verlet diverges: an error" 1 'verlet failed: at t = .*became non-finite' -- "$p" simulate --integrator verlet --n 2 --steps 500 examples/twobody-rigid.phys
  expect "liet2 refuses constraints" 2 'liet2 ignores constraints' -- "$p" simulate --integrator liet2 examples/pendulum3.phys
  if "$p" emit-c examples/twobody-rigid.phys -o "$tmp/tbr.c" > /dev/null &&
     cc -O2 -std=c17 -Iruntime "$tmp/tbr.c" "$build/libphysrt.a" -lm -o "$tmp/tbr" &&
     "$tmp/tbr" --integrator liet2 --n 2 --steps 500 --out "$tmp/tbr-c.csv" > /dev/null && cmp -s "$tmp/tbr.csv" "$tmp/tbr-c.csv"; then pass
  else fail "emit-c liet2 on a rigid planet: not the JIT's trajectories"; fi
  expect "emit-c --help" 0 'usage: physc emit-c' -- "$p" emit-c --help
  expect "emit-c without -o" 2 'emit-c needs -o' -- "$p" emit-c examples/pendulum1.phys
  expect "emit-c unwritable" 1 "cannot write /nonexistent/x.c: No such file" -- "$p" emit-c examples/pendulum1.phys -o /nonexistent/x.c
  expect "emit-c says what it wrote" 0 "^wrote $tmp/p1.c: system pendulum1 as C" -- "$p" emit-c examples/pendulum1.phys -o "$tmp/p1.c"
  if grep -q -E "^build it: cc -O2 -std=c17 -I[^ ]*runtime $tmp/p1.c [^ ]*libphysrt.a -lm -o $tmp/p1$" "$tmp/o" &&
     eval "$(sed -n 's/^build it: //p' "$tmp/o")" && [ -x "$tmp/p1" ]; then pass
  else fail "emit-c: the build command it prints"; cat "$tmp/o"; fi
  expect "an emitted program's messages name it, not physc" 2 "^$tmp/p1: unknown integrator 'nope'" -- "$tmp/p1" --integrator nope
  # counts in the singular; times in CSVs in their shortest form, states in full
  expect "simulate one trajectory" 0 '^1 trajectory, 5 steps of 0.04 ' -- \
    "$p" simulate --n 1 --steps 5 --dt 0.04 --out "$tmp/one.csv" examples/pendulum1.phys
  if [ "$(sed -n 3p "$tmp/one.csv" | cut -d, -f2)" = 0.04 ] && [ "$(sed -n 7p "$tmp/one.csv" | cut -d, -f2)" = 0.2 ] &&
     sed -n 3p "$tmp/one.csv" | cut -d, -f3 | grep -q -E '^-?[0-9]\.[0-9]{15,16}$'; then pass
  else fail "simulate CSV: times not shortest, or states not in full"; head -3 "$tmp/one.csv"; fi
  expect "--version" 0 '^physc [0-9]+\.[0-9]+' -- "$p" --version
  expect "--version names the BLAS" 0 '^BLAS: OpenBLAS [0-9]' -- "$p" --version
  expect "no arguments" 2 'usage:' -- "$p"
  expect "unknown command" 2 "unknown command 'frobnicate'" -- "$p" frobnicate
  expect "unknown option" 2 "unknown option '--bogus'" -- "$p" check --bogus x.phys
  expect "check without file" 2 'check needs a FILE' -- "$p" check
  expect "missing file" 1 "cannot read 'no/such.phys': No such file" -- "$p" check no/such.phys
  expect "directory as file" 1 "cannot read 'tests'" -- "$p" check tests
  expect_timeout=20 expect "an endless file as the program" 1 "cannot read '/dev/zero': it is a character device" -- "$p" check /dev/zero
  # emit-c -o -: standard output is the C program alone (it compiles as it is)
  if "$p" emit-c examples/pendulum1.phys -o - > "$tmp/stdout.c" 2> /dev/null && ! grep -q '^wrote \|^build it' "$tmp/stdout.c" &&
     cc -O2 -std=c17 -Iruntime "$tmp/stdout.c" "$build/libphysrt.a" -lm -o "$tmp/stdout.bin" 2> /dev/null; then pass
  else fail "emit-c -o -: standard output is not the C program alone"; tail -3 "$tmp/stdout.c"; fi
  expect "bad --set" 2 'NAME=NUMBER' -- "$p" check --set k examples/pendulum3.phys
  expect "unknown --set param" 1 "no parameter 'nosuch'" -- "$p" check --set nosuch=1 examples/pendulum3.phys
  chmod 000 "$tmp" 2>/dev/null; [ "$(id -u)" != 0 ] && expect "unreadable file" 1 'Permission denied' -- "$p" check "$tmp/x"; chmod 700 "$tmp"
}

# What a hurried or hostile user does to the command line and to a finished run: values that
# are options, empty or repeated, numbers in other notations, outputs mixed with status
# lines, two runs into one folder, a finished run rerun or run over by another model, a
# closed terminal. Nothing is lost, nothing is guessed.
hostile_layer() { # $1 = physc
  local p=$1 s=tests/run/small.phys d; d=$(mktemp -d "$tmp/hostile.XXXXXX")
  expect "a value that is an option" 2 "--out needs a value; '--epochs' is an option" -- "$p" run --out --epochs 2 $s
  expect "an empty path" 2 '--out needs a value, not an empty string' -- "$p" run --out "" $s
  expect "an option given twice" 2 '--epochs is given twice' -- "$p" run --epochs 5 --epochs 9 $s
  expect "-o and --out both" 2 '--out is given twice' -- "$p" emit-c -o "$d/a.c" --out "$d/b.c" $s
  expect "--set of one parameter twice" 2 '--set g is given twice' -- "$p" check --set g=1 --set g=2 $s
  expect "a count in exponent notation" 2 "bad value '1e1' for --epochs \(a whole number" -- "$p" run --epochs 1e1 $s
  expect "a count in hexadecimal" 2 "bad value '0x3' for --epochs" -- "$p" run --epochs 0x3 $s
  expect "a count with a fraction" 2 "bad value '2.0' for --n" -- "$p" simulate --n 2.0 $s
  expect "an infinite step" 2 "bad value 'inf' for --dt" -- "$p" simulate --dt inf $s
  expect "--set to NaN" 2 "--set takes NAME=NUMBER .*not 'g=nan'" -- "$p" check --set g=nan $s
  # emit-c to standard output as a path: the status lines go to stderr, the C alone to stdout
  if "$p" emit-c $s -o /dev/stdout > "$d/stdout.c" 2> "$d/status" && ! grep -q '^wrote \|^build it' "$d/stdout.c" &&
     grep -q '^wrote /dev/stdout' "$d/status" && tail -1 "$d/stdout.c" | grep -q '^}$'; then pass
  else fail "emit-c -o /dev/stdout: status lines mixed into the C"; tail -3 "$d/stdout.c"; fi
  # the emitted program reads its options as physc does
  "$p" emit-c $s -o "$d/e.c" > /dev/null && cc -O2 -std=c17 -Iruntime "$d/e.c" "$build/libphysrt.a" -lm -o "$d/e"
  expect "an emitted program: an unknown option" 2 "unknown option '--frob'" -- "$d/e" --frob
  expect "an emitted program: a bad count names its option" 2 "bad value 'abc' for --n" -- "$d/e" --n abc
  expect "an emitted program: an option twice" 2 '--steps is given twice' -- "$d/e" --steps 3 --steps 4
  expect "an emitted program: a value that is an option" 2 "--out needs a value; '--n' is an option" -- "$d/e" --out --n 3
  # an output that cannot be written fails before any work, in physc and in the emitted program
  expect "simulate: an unwritable --out, before compiling" 1 'cannot write /nonexistent/x.csv' -- "$p" simulate --out /nonexistent/x.csv $s
  if ! grep -q 'compiled in' "$tmp/o"; then pass; else fail "simulate compiled before refusing its --out"; fi
  expect "an emitted program: an unwritable --out, before simulating" 1 'cannot write /nonexistent/x.csv' -- "$d/e" --out /nonexistent/x.csv
  if ! grep -q 'trajectories, ' "$tmp/o"; then pass; else fail "an emitted program simulated before refusing its --out"; fi
  # stdout and stderr into one file: the lines in the order they happened
  "$p" simulate --from "$d/nosuch.csv" $s > "$d/both.log" 2>&1
  if head -1 "$d/both.log" | grep -q '^system pendulum1: compiled' && sed -n 2p "$d/both.log" | grep -q 'nosuch.csv'; then pass
  else fail "stdout and stderr into one file: out of order"; cat "$d/both.log"; fi
  # a finished run is never replaced without --force
  "$p" run -q --epochs 2 --out "$d/r" $s > /dev/null 2>&1; cp "$d/r/params.bin" "$d/params.before"
  expect "a finished run, other epochs" 1 "r holds a finished run of model chnn \(2 epochs\): --resume --epochs N .*--force replaces it" -- \
    "$p" run --epochs 3 --out "$d/r" $s
  expect "a finished run, another model" 1 "r holds a finished run of model chnn \(epoch 2 of 2\), not of clnn: --force replaces it" -- \
    "$p" run --model clnn --epochs 2 --out "$d/r" $s
  expect "--resume of another model's run" 1 "not of clnn: .*--model chnn --resume continues it" -- \
    "$p" run --model clnn --resume --epochs 2 --out "$d/r" $s
  expect "the same run again" 0 "r holds this very run, finished \(2 epochs\): evaluating it again" -- \
    "$p" run --epochs 2 --out "$d/r" $s
  if cmp -s "$d/r/params.bin" "$d/params.before" && ! grep -q '^epoch' "$tmp/o"; then pass
  else fail "a finished run was replaced or trained again without --force"; fi
  expect "--force replaces it" 0 'wrote ' -- "$p" run --model clnn --force --epochs 2 --out "$d/r" $s
  if grep -q '"model": "clnn"' "$d/r/metrics.json"; then pass; else fail "--force did not replace the run"; fi
  # a link planted as the lock file is refused, and what it leads to is left alone
  mkdir -p "$d/planted"; echo keep > "$d/victim"; ln -s "$d/victim" "$d/planted/run.lock"
  expect "a symbolic link as the lock file" 1 'run.lock: it is a symbolic link, not physc.s lock file' -- \
    "$p" run --epochs 1 --out "$d/planted" $s
  if [ "$(cat "$d/victim")" = keep ]; then pass; else fail "the lock file's link target was written"; fi
  # one run at a time in a folder; a closed terminal (SIGHUP) keeps the epochs done. The run
  # gets SIGHUP's default action even when the suite itself runs under nohup (which physc keeps)
  env --default-signal=HUP "$p" run --epochs 100000 --out "$d/long" $s > "$d/long.out" 2>&1 &
  local lpid=$! k
  for k in $(seq 1 600); do grep -q '^epoch' "$d/long.out" && break; sleep 0.1; done
  expect "a second run into a folder in use" 1 "long is in use by another physc \(pid $lpid, model chnn\)" -- \
    "$p" run --epochs 2 --out "$d/long" $s
  expect "a compare into a run's folder in use" 1 "long is in use by another physc \(pid $lpid" -- \
    "$p" compare --models chnn --epochs 2 --out "$d/long" $s
  kill -HUP $lpid; wait $lpid; local lrc=$?
  if [ $lrc -eq 129 ] && grep -q 'SIGHUP (the terminal closed): finishing this epoch' "$d/long.out" &&
     grep -q 'stopped after epoch [0-9]* of 100000 (SIGHUP); the checkpoint is in' "$d/long.out"; then pass
  else fail "SIGHUP: exit $lrc, or no checkpoint"; tail -3 "$d/long.out"; fi
  local done_epochs; done_epochs=$(sed -n 's/.*stopped after epoch \([0-9]*\) of.*/\1/p' "$d/long.out")
  expect "a run stopped by SIGHUP resumes" 0 "stopped after epoch $((done_epochs + 1)) of 100000" -- \
    "$p" run --resume --epochs 100000 --stop-after $((done_epochs + 1)) --out "$d/long" $s
}

# physc run on a small program (tests/run/small.phys): the report, resume bit for bit, a
# refused checkpoint, the models and settings it cannot train yet, data in and out as CSV.
run_layer() { # $1 = physc
  local p=$1 s=tests/run/small.phys o; o=$(mktemp -d "$tmp/run.XXXXXX")  # a folder per pass: a run refuses to overwrite the last pass's unfinished ones
  expect "run --help" 0 'usage: physc run' -- "$p" run --help
  expect "run small" 0 'relative state error +[0-9.]+e-0[1-9]' -- "$p" run --out "$o/a" "$s"
  if grep -q 'system pendulum1: 2 coordinates, 1 constraint; ' "$tmp/o"; then pass; else fail "run: 1 constraint"; head -1 "$tmp/o"; fi
  if grep -q -F "use the model: physc simulate $s --model chnn --params $o/a/params.bin" "$tmp/o"; then pass
  else fail "run: the line on using the model"; tail -2 "$tmp/o"; fi
  if grep -q -E 'integrator floor: .* reach a training loss of [0-9.]+e-0[5-9]$' "$tmp/o" && ! grep -q 'cannot follow' "$tmp/o" &&
     grep -q -E '^final training loss [0-9.]+e-[0-9]+: [0-9.e+]+x the integrator floor$' "$tmp/o"
  then pass; else fail "run: integrator floor line"; grep floor "$tmp/o"; fi
  # an Euler step of 0.3 s cannot follow the pendulum itself: the run says so and points to substeps
  sed -e 's/dt 0.03; steps 100/dt 0.3; steps 20/' -e 's/horizon 50;/horizon 20;/' -e 's/integrator rk4_38/integrator euler/' "$s" > "$tmp/coarse.phys"
  expect "run: a step too coarse for the system" 0 'cannot follow the system on some chunks; `train \{ substeps N \}`' -- \
    "$p" run --epochs 1 --out "$o/coarse" "$tmp/coarse.phys"
  if grep -q -E 'final training loss .*x the integrator floor \(the training step, not the network, limits the fit' "$tmp/o"
  then pass; else fail "run: the final loss against the integrator floor"; grep final "$tmp/o"; fi
  local f; for f in metrics.json errors.csv params.bin checkpoint.bin loss.svg rollout.svg error.svg energy.svg; do
    if [ -s "$o/a/$f" ]; then pass; else fail "run: $f missing"; fi; done
  if grep -q '"test_geomean_rel_error": [0-9]' "$o/a/metrics.json" && grep -q '"chaos_floor": [0-9]' "$o/a/metrics.json" &&
     grep -q '"integrator_floor": [0-9]' "$o/a/metrics.json" && grep -q '"param_count": 1186' "$o/a/metrics.json"; then pass; else fail "run: metrics.json fields"; cat "$o/a/metrics.json"; fi
  metric_keys "run" "$(dirname "$p")" "$o/a/metrics.json"
  if tail -1 "$o/a/rollout.svg" | grep -q '</svg>'; then pass; else fail "run: rollout.svg incomplete"; fi
  # the loss per epoch: 6 training and 6 validation losses in metrics.json, plotted in loss.svg
  if grep -q -E '"train_loss": \[[0-9.e-]+(, [0-9.e-]+){5}\],' "$o/a/metrics.json" &&
     grep -q -E '"valid_loss": \[[0-9.e-]+(, [0-9.e-]+){5}\]$' "$o/a/metrics.json" &&
     grep -q '>training</text>' "$o/a/loss.svg" && grep -q '>validation</text>' "$o/a/loss.svg" && grep -q '>epoch</text>' "$o/a/loss.svg"
  then pass; else fail "run: the loss per epoch in metrics.json and loss.svg"; grep loss "$o/a/metrics.json"; fi
  # loss.svg reads: the integrator floor as a line, whole-number epoch ticks, the final loss
  # and its multiple of the floor in the title
  if grep -q '>integrator floor (rk4_38)</text>' "$o/a/loss.svg" && grep -q '>final training loss [0-9.e+-]* ([0-9.]*x the floor)</text>' "$o/a/loss.svg" &&
     ! grep -q -E '>[0-9]+\.[0-9]+</text>' "$o/a/loss.svg"; then pass
  else fail "run: loss.svg lacks the floor, the final loss, or has fractional epoch ticks"; grep -o '>[^<]*</text>' "$o/a/loss.svg" | head; fi
  # rollout.svg draws every coordinate (up to six) with the truth pale under the model;
  # error.svg says how many trajectories it draws and gives the figure
  if grep -q '>bob\[1\].y</text>' "$o/a/rollout.svg" && grep -q 'stroke-opacity="0.35"' "$o/a/rollout.svg" &&
     grep -q -E '>the (first [0-9]+ of [0-9]+|[0-9]+) test trajectories</text>' "$o/a/error.svg" &&
     grep -q -E '>relative state error Err\(t\): geometric mean [0-9.e-]+</text>' "$o/a/error.svg"; then pass
  else fail "run: rollout.svg's coordinates or pale truth, or error.svg's count and figure"; fi
  # rollout.svg: a legend for truth and model, trajectories numbered as in the CSVs (from 0),
  # positions and velocities; error.svg's axis stops at 1 (the relative error cannot pass it)
  if grep -q '>truth</text>' "$o/a/rollout.svg" && grep -q '>model</text>' "$o/a/rollout.svg" &&
     grep -q '>test trajectory 0: positions</text>' "$o/a/rollout.svg" && grep -q '>test trajectory 3: velocities</text>' "$o/a/rollout.svg" &&
     ! grep -q '>test trajectory 4' "$o/a/rollout.svg" && grep -q '>bob\[1\].vx</text>' "$o/a/rollout.svg"; then pass
  else fail "run: rollout.svg's legend, numbering or velocities"; fi
  if grep -q '>1</text>' "$o/a/error.svg" && ! grep -q -E '>1e[1-9]</text>' "$o/a/error.svg" &&
     ! grep -q -E '>1e[1-9]</text>' "$o/a/energy.svg"; then pass
  else fail "run: the relative error plots' axes go past 1"; fi
  # trajectories.csv: one row per test trajectory, whose geometric mean is metrics.json's headline
  local geo; geo=$(sed -n 's/.*"test_geomean_rel_error": \([^,]*\),/\1/p' "$o/a/metrics.json")
  if [ "$(head -1 "$o/a/trajectories.csv")" = trajectory,rel_error,energy_rel_error,constraint_violation,chaos_floor ] &&
     awk -F, -v g="$geo" 'NR > 1 { s += log($2); n++ } END { m = exp(s / n); exit !(n == 16 && m > g * (1 - 1e-6) && m < g * (1 + 1e-6)) }' \
       "$o/a/trajectories.csv"; then pass; else fail "run: trajectories.csv does not match metrics.json ($geo)"; fi
  # errors.csv: 16 trajectories x 51 times (horizon 50); the trapezoid rule over its series
  # gives trajectories.csv's per-trajectory figures
  if [ "$(wc -l < "$o/a/errors.csv")" -eq $((16 * 51 + 1)) ] &&
     awk -F, 'NR == FNR { if (FNR > 1) want[$1] = $2; next }
       FNR > 1 { l = log($3 + 1e-8); if ($1 == prev) { s[$1] += 0.5 * ($2 - t) * (l + pl); T[$1] = $2 } prev = $1; t = $2; pl = l }
       END { for (k in want) { g = exp(s[k] / T[k]); if (g < want[k] * (1 - 1e-6) || g > want[k] * (1 + 1e-6)) exit 1 } }' \
       "$o/a/trajectories.csv" "$o/a/errors.csv"; then pass; else fail "run: errors.csv does not give trajectories.csv"; fi
  # the 95 % interval of the headline: t(0.975, 15) = 2.131450 standard errors of the 16 logs either side
  local ci; ci=$(sed -n 's/.*"test_geomean_rel_error_ci95": \[\(.*\)\],/\1/p' "$o/a/metrics.json")
  if awk -F, -v ci="$ci" 'NR > 1 { l[n++] = log($2); s += log($2) } END { m = s / n; for (i = 0; i < n; i++) v += (l[i] - m)^2
       h = 2.131450 * sqrt(v / (n - 1) / n); split(ci, c, ", ")
       exit !(c[1] > exp(m - h) * (1 - 1e-6) && c[1] < exp(m - h) * (1 + 1e-6) && c[2] > exp(m + h) * (1 - 1e-6) && c[2] < exp(m + h) * (1 + 1e-6)) }' \
       "$o/a/trajectories.csv"; then pass; else fail "run: the 95 % interval [$ci] does not match trajectories.csv"; fi
  expect "run in two parts" 0 'stopped after epoch 3 of 6' -- "$p" run --stop-after 3 --out "$o/b" "$s"
  # a new run does not replace an unfinished one's checkpoint unless told to
  cp "$o/b/checkpoint.bin" "$o/b-unfinished.bin"
  expect "run refuses to replace an unfinished run" 1 'holds an unfinished run \(epoch 3 of 6\): --resume continues it, --force starts afresh' -- \
    "$p" run --out "$o/b" "$s"
  if cmp -s "$o/b/checkpoint.bin" "$o/b-unfinished.bin"; then pass; else fail "run: a refused run changed the checkpoint"; fi
  expect "run --resume --force" 2 'give one' -- "$p" run --resume --force --out "$o/b" "$s"
  expect "run --resume" 0 'trained 3 epochs' -- "$p" run --resume --out "$o/b" "$s"
  expect "run --resume with no run there" 1 'resume: there is no run to continue: .*/nothing/checkpoint.bin does not exist' -- \
    "$p" run --resume --out "$o/nothing" "$s"
  if cmp -s "$o/a/params.bin" "$o/b/params.bin"; then pass; else fail "run: 6 epochs differ from 3 + --resume + 3"; fi
  # comments and layout may change between the parts
  { echo '// a note added between the parts'; sed 's/^  /    /' "$s"; } > "$o/commented.phys"
  mkdir -p "$o/commented" && cp "$o/b-unfinished.bin" "$o/commented/checkpoint.bin"
  expect "run --resume after a comment-only change" 0 'changed since the checkpoint in its comments or layout only' -- \
    "$p" run --resume --out "$o/commented" "$o/commented.phys"
  # --force starts afresh: the unfinished checkpoint is replaced by a finished run's
  mkdir -p "$o/forced" && cp "$o/b-unfinished.bin" "$o/forced/checkpoint.bin"
  expect "run --force" 0 'trained 6 epochs' -- "$p" run --force --out "$o/forced" "$s"
  if cmp -s "$o/a/params.bin" "$o/forced/params.bin"; then pass; else fail "run --force: not the fresh run's parameters"; fi
  # a finished run extended: epochs 7..10 follow the cosine schedule of a 10-epoch run,
  # lr 3e-3 (1 + cos(pi 6/10)) / 2 = 1.036e-3 at epoch 7
  cp -r "$o/b" "$o/ext"
  expect "run --resume --epochs: extend a finished run" 0 'epoch +7/10 .* lr 1\.04e-03 ' -- "$p" run --resume --epochs 10 --out "$o/ext" "$s"
  if grep -q 'trained 4 epochs' "$tmp/o" && grep -q 'extending the finished run of 6 epochs to 10' "$tmp/o" &&
     grep -q '"epochs_done": 10,' "$o/ext/metrics.json" && ! cmp -s "$o/ext/params.bin" "$o/b/params.bin"; then pass
  else fail "run --resume --epochs 10: not 4 more epochs"; grep 'trained\|epochs' "$tmp/o" "$o/ext/metrics.json"; fi
  # what changed is said, part by part
  sed 's/lr 3e-3/lr 1e-3/' "$s" > "$o/lr.phys"
  expect "run --resume, the training changed" 1 'changed since: the model or its training \(' -- "$p" run --resume --out "$o/b" "$o/lr.phys"
  # a model's own training step: trained through, and part of the model's fingerprint
  sed 's/^model chnn : chnn { potential V; mass learned }/model chnn : chnn { potential V; mass learned; integrator euler }/' "$s" > "$o/own.phys"
  expect "run --resume, the model's own integrator" 1 'changed since: the model or its training \(' -- "$p" run --resume --out "$o/b" "$o/own.phys"
  expect "run: a model's own integrator" 0 'batch 16, euler, lr 0.003' -- "$p" run --epochs 1 --out "$o/own" "$o/own.phys"
  if grep -q 'under euler reach' "$tmp/o"; then pass; else fail "run: the integrator floor not under the model's own step"; grep floor "$tmp/o"; fi
  expect "run --resume, the seed changed" 1 'changed since: the data \(the data or init block, or --seed\); --force' -- \
    "$p" run --resume --seed 5 --out "$o/b" "$s"
  sed 's/^const m = \[1.039051\]/const m = [1.2]/' "$s" > "$o/mass.phys"
  expect "run --resume, the system changed" 1 'changed since: the system \(its bodies, constraints, potentials or constants, or --kernels: the loop form.s kernels are others\); --force' -- \
    "$p" run --resume --out "$o/b" "$o/mass.phys"
  # the reference code's test protocol on the finished run: same parameters, new test rollouts
  expect "run --eval-from chunk" 0 "16 test of 101 points from a random chunk's first state" -- \
    "$p" run --resume --eval-from chunk --out "$o/b" "$s"
  if grep -q '"eval_from": "chunk"' "$o/b/metrics.json" && grep -q '"eval_from": "initial"' "$o/a/metrics.json" &&
     cmp -s "$o/a/params.bin" "$o/b/params.bin" && ! cmp -s "$o/a/trajectories.csv" "$o/b/trajectories.csv"; then pass
  else fail "run: --eval-from chunk did not evaluate the same parameters from other states"; fi
  expect "run bad --eval-from" 2 "bad value 'middle' for --eval-from" -- "$p" run --eval-from middle --out "$o/b" "$s"
  expect "run clnn" 0 'model clnn \(clnn\)' -- "$p" run --model clnn --epochs 2 --out "$o/c" --save-data "$o/data" "$s"
  if [ "$(wc -l < "$o/data/test.csv")" -eq $((16 * 101 + 1)) ]; then pass; else fail "run: --save-data test.csv rows"; fi
  # the trained model outside training: `physc simulate --params --from` the run's own test
  # set (saved by the clnn run: the same seed) reproduces the run's figures; the truth from
  # the file's first states reproduces the file
  expect "simulate a trained model from a file" 0 'learned CHNN \(1186 parameters\)' -- \
    "$p" simulate --params "$o/a/params.bin" --from "$o/data/test.csv" --steps 50 "$s"
  local want chaos; want=$(awk -v g="$geo" 'BEGIN { printf "%.3e", g }')
  chaos=$(sed -n 's/.*"chaos_floor": \([^,]*\),/\1/p' "$o/a/metrics.json" | awk '{ printf "%.3e", $1 }')
  if grep -q -E "^  relative state error +$want " "$tmp/o" && grep -q -E "^  chaos floor \(truth, 1e-4 off\) +$chaos " "$tmp/o"
  then pass; else fail "simulate --params --from: not the run's test error $want and chaos floor $chaos"; grep "error\|floor" "$tmp/o"; fi
  expect "simulate from a file" 0 "16 trajectories, 100 steps of 0.03 \(dopri5\), from the first states of $o/data/test.csv" -- \
    "$p" simulate --from "$o/data/test.csv" --out "$o/from.csv" "$s"
  if paste -d, "$o/from.csv" "$o/data/test.csv" | awk -F, 'NR == 1 { h = NF / 2; next }
       { for (i = 3; i <= h; i++) { d = $i - $(i + h); if (d < 0) d = -d; if (d > 1e-9) bad = 1 } n++ } END { exit bad || n != 16 * 101 }'
  then pass; else fail "simulate --from: the truth from the file's first states is not the file"; fi
  expect "simulate --from and --n" 2 'drop --n and --dt' -- "$p" simulate --from "$o/data/test.csv" --n 3 "$s"
  expect "simulate --from, too many steps" 1 'test.csv has trajectories of 100 steps; --steps asks for 500' -- \
    "$p" simulate --from "$o/data/test.csv" --steps 500 "$s"
  expect "simulate --model without --params" 2 '--model needs --params' -- "$p" simulate --model chnn "$s"
  expect "simulate a trained model with rk4" 2 'rolls out as physc run evaluates it' -- "$p" simulate --params "$o/a/params.bin" --integrator rk4 "$s"
  expect "simulate another model's parameters" 1 'holds 1186 parameters, which no model of the program has \(chnn [0-9]+, clnn [0-9]+\)' -- \
    "$p" simulate --params "$o/a/params.bin" tests/run/hybrid.phys
  head -c 500 "$o/a/params.bin" > "$o/cut.bin"
  expect "simulate a truncated params.bin" 1 'cut.bin is truncated' -- "$p" simulate --params "$o/cut.bin" "$s"
  expect "emit-c unknown model" 2 'no model of that name: nope' -- "$p" emit-c --model nope --params "$o/a/params.bin" -o "$o/x.c" "$s"
  expect "emit-c another model's parameters" 1 'holds 1186 parameters, which no model of the program has \(chnn [0-9]+, clnn [0-9]+\)' -- \
    "$p" emit-c --params "$o/a/params.bin" -o "$o/x.c" tests/run/hybrid.phys
  expect "emit-c a missing params.bin" 1 'cannot read /nonexistent/params.bin' -- \
    "$p" emit-c --params /nonexistent/params.bin -o "$o/x.c" "$s"
  if [ ! -e "$o/x.c" ]; then pass; else fail "emit-c wrote a program from refused parameters"; fi
  sed -e "s|chunk 5;|chunk 5; file \"$o/data/all.csv\";|" -e 's/train 64; valid 16; test 16/train 10; valid 3; test 3/' "$s" > "$o/file.phys"
  cp "$o/data/train.csv" "$o/data/all.csv"
  expect "run on a CSV file" 0 "data: $o/data/all.csv: 10 train" -- "$p" run --epochs 2 --out "$o/d" "$o/file.phys"
  expect "run --eval-from chunk on a CSV file" 1 "eval-from chunk needs generated data" -- \
    "$p" run --epochs 2 --eval-from chunk --out "$o/d2" "$o/file.phys"
  # a length left open ("taken from the initial state") is the file's first state's: the
  # same run on its own saved data gives the same metrics
  sed 's/tether bob\[1\] to origin length l\[1\]/tether bob[1] to origin/' "$s" > "$o/open.phys"
  "$p" run -q --epochs 2 --out "$o/open" --save-data "$o/open-data" "$o/open.phys" > /dev/null 2>&1
  { cat "$o/open-data/train.csv"; tail -n +2 "$o/open-data/valid.csv" | awk -F, -v OFS=, '{ $1 += 64; print }'
    tail -n +2 "$o/open-data/test.csv" | awk -F, -v OFS=, '{ $1 += 80; print }'; } > "$o/open-data/all.csv"
  sed "s|chunk 5;|chunk 5; file \"$o/open-data/all.csv\";|" "$o/open.phys" > "$o/open-file.phys"
  expect "run on a CSV file, a length left open" 0 'relative state error' -- "$p" run --epochs 2 --out "$o/open-file" "$o/open-file.phys"
  if [ -s "$o/open/metrics.json" ] &&
     [ "$(grep -E '"(test_geomean_rel_error|test_constraint_violation|chaos_floor)"' "$o/open/metrics.json")" = \
       "$(grep -E '"(test_geomean_rel_error|test_constraint_violation|chaos_floor)"' "$o/open-file/metrics.json")" ]; then pass
  else fail "run: a length left open differs between generated data and the same data from a file"; fi
  local hdr; hdr=$(head -1 "$o/data/train.csv")
  printf '%s\n0,0,1,2,3\n' "$hdr" > "$o/data/all.csv"
  expect "run on a bad CSV file" 1 'all.csv:2: expected traj,t and 4 finite numbers' -- "$p" run --out "$o/bad-csv" "$o/file.phys"
  csv_checks "$p" "$o"
  head -c 1000 "$o/a/checkpoint.bin" > "$o/a/cut" && mv "$o/a/cut" "$o/a/checkpoint.bin"
  expect "run refuses a truncated checkpoint" 1 'checkpoint.bin is truncated' -- "$p" run --resume --out "$o/a" "$s"
  expect "run --resume, fewer epochs than done" 1 'checkpoint at epoch 6 does not fit a run of 4 epochs' -- \
    "$p" run --resume --epochs 4 --out "$o/b" "$s"
  # a loss that diverges in the first epoch: no checkpoint to keep, and the message says so
  sed 's/lr 3e-3/lr 100/; s/batch 16/batch 4/' "$s" > "$o/diverge.phys"
  expect "run diverging before any checkpoint" 1 'epoch 1: the training loss became .*stopped, no checkpoint was written' -- \
    "$p" run --out "$o/diverge" "$o/diverge.phys"
  expect "run unknown model" 2 "no model of that name: nope \(models: chnn, clnn\)" -- "$p" run --model nope --out "$o/e" "$s"
  expect "simulate unknown model" 2 "no model of that name: nope" -- "$p" simulate --model nope --params "$o/a/params.bin" "$s"
  sed 's/activation tanh/activation relu/' "$s" > "$o/relu.phys"
  expect "run relu potential" 1 'relu.phys:[0-9]+:[0-9]+: error: .*relu has no second derivative' -- "$p" run --out "$o/e" "$o/relu.phys"
  # settings a model cannot train with: refused with the place in the program and the list (integrators.h)
  sed 's/integrator rk4_38/integrator leapfrog/' "$s" > "$o/leap.phys"
  expect "run: a training integrator the model cannot use" 1 \
    'leap.phys:[0-9]+:[0-9]+: error: model .chnn. \(chnn\) trains through one of: rk4, rk4_38, euler; not leapfrog' -- "$p" run --out "$o/e" "$o/leap.phys"
  sed 's/solver dopri5/solver leapfrog/' "$s" > "$o/rk.phys"
  expect "run: a data solver that cannot step the system" 1 "rk.phys:36:12: error: the data's solver leapfrog cannot step this system \\(it ignores constraints; use rattle or dopri5\\)" -- \
    "$p" run --out "$o/e" "$o/rk.phys"
  sed 's/optimizer adamw/optimizer sgd/' "$s" > "$o/sgd.phys"
  expect "run: an optimizer the model cannot use" 1 'sgd.phys:[0-9]+:[0-9]+: error: .* trains with the optimizer adamw or adam; not sgd' -- \
    "$p" run --out "$o/e" "$o/sgd.phys"
  sed 's/integrator rk4_38;/integrator rk4_38; substeps 3;/' "$s" > "$o/sub.phys"
  expect "run with substeps" 0 'rk4_38 \(3 steps per interval\)' -- "$p" run --epochs 1 --out "$o/s" "$o/sub.phys"
  "$p" run -q --epochs 1 --out "$o/s1" "$s"
  if [ -s "$o/s1/params.bin" ] && ! cmp -s "$o/s/params.bin" "$o/s1/params.bin"; then pass
  else fail "run: substeps 3 trained the same parameters as 1"; fi
  sed 's/plots rollout, error, energy/plots error/' "$s" > "$o/plots.phys"
  expect "run with one plot" 0 'params.bin, loss.svg, error.svg$' -- "$p" run --epochs 1 --out "$o/p" "$o/plots.phys"
  if [ -s "$o/p/error.svg" ] && [ ! -e "$o/p/rollout.svg" ] && [ ! -e "$o/p/energy.svg" ]; then pass
  else fail "run: the eval block's plots were not honoured"; fi
  # `trajectories 0`: no rollout.svg, and none said to be written
  sed 's/plots rollout, error, energy/plots rollout, error, energy; trajectories 0/' "$s" > "$o/t0.phys"
  expect "run plotting no trajectory" 0 'params.bin, loss.svg, error.svg, energy.svg$' -- "$p" run --epochs 1 --out "$o/t0" "$o/t0.phys"
  if [ ! -e "$o/t0/rollout.svg" ] && ! grep -q rollout.svg "$tmp/o"; then pass; else fail "run: rollout.svg said written with trajectories 0"; fi
  if grep -q '^trained 1 epoch in' "$tmp/o" && grep -q 'parameters; 1 epoch, batch' "$tmp/o"; then pass; else fail "run: 1 epoch"; fi
  # on a terminal the evaluation shows its progress (a redrawn line); -q prints nothing
  expect "run on a terminal: evaluation progress" 0 'evaluation: model rollouts, [0-9]+% in' -- \
    script -qec "$p run --epochs 1 --out $o/tty $s" /dev/null
  if [ -z "$("$p" run -q --epochs 1 --out "$o/quiet" "$s" 2>&1)" ] && [ -s "$o/quiet/metrics.json" ]; then pass
  else fail "run -q printed something"; fi
  # Ctrl-C: the epoch in progress ends, a checkpoint is written, exit 130; --resume finishes
  "$p" run --epochs 100000 --out "$o/int" "$s" > "$o/int.log" 2>&1 & local pid=$!
  local i; for i in $(seq 600); do grep -q '^epoch' "$o/int.log" 2> /dev/null && break; sleep 0.1; done  # training has begun
  kill -INT $pid; wait $pid; local rc=$?
  if [ $rc -eq 130 ] && grep -q 'continue with --resume' "$o/int.log" && [ -s "$o/int/checkpoint.bin" ]; then pass
  else fail "run: Ctrl-C gave exit $rc"; tail -3 "$o/int.log"; fi
  # SIGTERM (a batch scheduler's) as Ctrl-C: a checkpoint, and exit 143
  "$p" run --epochs 100000 --out "$o/term" "$s" > "$o/term.log" 2>&1 & pid=$!
  for i in $(seq 600); do grep -q '^epoch' "$o/term.log" 2> /dev/null && break; sleep 0.1; done
  kill -TERM $pid; wait $pid; rc=$?
  if [ $rc -eq 143 ] && grep -q 'stopped after epoch [0-9]* of 100000 (SIGTERM); the checkpoint is in' "$o/term.log" &&
     [ -s "$o/term/checkpoint.bin" ]; then pass
  else fail "run: SIGTERM gave exit $rc"; tail -3 "$o/term.log"; fi
  # under nohup a SIGHUP (the terminal closed) does not stop the epochs: they go on until SIGTERM
  nohup "$p" run --epochs 100000 --out "$o/nohup" "$s" > "$o/nohup.log" 2>&1 & pid=$!
  for i in $(seq 600); do grep -q '^epoch' "$o/nohup.log" 2> /dev/null && break; sleep 0.1; done
  kill -HUP $pid; local n0; n0=$(grep -c '^epoch' "$o/nohup.log")
  for i in $(seq 600); do [ "$(grep -c '^epoch' "$o/nohup.log")" -gt $((n0 + 5)) ] && break; sleep 0.1; done
  kill -TERM $pid; wait $pid; rc=$?
  if [ $rc -eq 143 ] && ! grep -q SIGHUP "$o/nohup.log" && grep -q 'of 100000 (SIGTERM); the checkpoint is in' "$o/nohup.log"; then pass
  else fail "run under nohup: stopped by SIGHUP (exit $rc)"; tail -3 "$o/nohup.log"; fi
  # a stop signal outside the epochs says where the run was and what it kept: before training
  # (the loss over the 2-body's 399,200 windows takes seconds) and after it (its 20 test rollouts)
  "$p" run --epochs 1 --out "$o/early" examples/twobody.phys > "$o/early.log" 2>&1 & pid=$!
  for i in $(seq 600); do grep -q '^model ' "$o/early.log" 2> /dev/null && break; sleep 0.1; done
  kill -TERM $pid; wait $pid; rc=$?
  if [ $rc -eq 143 ] && grep -q '^physc: run: stopped (SIGTERM) before training began: no epoch to keep$' "$o/early.log"; then pass
  else fail "run: SIGTERM before training: exit $rc"; tail -3 "$o/early.log"; fi
  sed -e 's/train 800;/train 8;/' -e 's/test 200;/test 20;/' examples/twobody.phys > "$o/twobody8.phys"
  "$p" run --epochs 1 --out "$o/late" "$o/twobody8.phys" > "$o/late.log" 2>&1 & pid=$!
  for i in $(seq 1200); do grep -q '^trained 1 epoch' "$o/late.log" 2> /dev/null && break; sleep 0.1; done
  kill -TERM $pid; wait $pid; rc=$?
  if [ $rc -eq 143 ] && grep -q 'stopped (SIGTERM) after training: its checkpoint in .*/late/ keeps the trained parameters' "$o/late.log" &&
     "$p" run --epochs 1 --out "$o/late" "$o/twobody8.phys" > "$o/late2.log" 2>&1 &&
     grep -q 'holds this very run, finished (1 epoch): evaluating it again' "$o/late2.log" && [ -s "$o/late/metrics.json" ]; then pass
  else fail "run: SIGTERM after training: exit $rc, or the same command did not evaluate it"; tail -3 "$o/late.log" "$o/late2.log"; fi
  expect "run f32" 0 'tanh f32, 1186 parameters' -- "$p" run --precision f32 --epochs 2 --out "$o/f" "$s"
  if grep -q '"precision": "f32"' "$o/f/metrics.json" && grep -q '"blas": "OpenBLAS' "$o/f/metrics.json"; then pass
  else fail "run: metrics.json precision or blas"; grep '"precision"\|"blas"' "$o/f/metrics.json"; fi
  expect "run bad --precision" 2 "takes f32 or f64, not 'f16'" -- "$p" run --precision f16 --out "$o/f" "$s"
  expect "run a hybrid model (known springs)" 0 'relative state error' -- "$p" run --epochs 2 --out "$o/h" tests/run/hybrid.phys
  expect "run bad --epochs" 2 "bad value '0' for --epochs" -- "$p" run --epochs 0 "$s"
  expect "run unwritable --out" 1 'cannot create directory' -- "$p" run --out /proc/nope/x "$s"
  : > "$o/afile"
  expect "run --out is a file" 1 'afile exists and is not a directory' -- "$p" run --out "$o/afile" "$s"
  sed 's/train 64; valid 16; test 16/train 64; valid 0; test 0/' "$s" > "$o/notest.phys"
  expect "run without a test set" 0 'evaluation skipped' -- "$p" run --epochs 2 --out "$o/g" "$o/notest.phys"
  if grep -q '"test_geomean_rel_error": null' "$o/g/metrics.json" && [ ! -e "$o/g/trajectories.csv" ] &&
     grep -q '"test_position_mse": null' "$o/g/metrics.json" && grep -q '"test_energy_mse": null' "$o/g/metrics.json" &&
     ! grep -v '"test_trajectories"' "$o/g/metrics.json" | grep -E -q '"test_[a-z_]*": (0|\[0)'; then pass
  else fail "run: metrics without a test set (a figure of no test trajectory is null, never 0)"; fi
}

# physc compare on a tiny program (tests/run/compare.phys): two models x two seeds, each a
# physc run, compared from the runs' files; a second invocation reuses every run and writes
# the same comparison.json; training-set sizes share the test set; failures are reported
# in the table while the other models are compared.
compare_layer() { # $1 = physc
  local p=$1 s=tests/run/compare.phys o; o=$(mktemp -d "$tmp/compare.XXXXXX")
  expect "compare --help" 0 'usage: physc compare' -- "$p" compare --help
  expect "compare two models, two seeds" 0 '^chaos floor \(the truth started 1e-4 off' -- \
    "$p" compare --models chnn,clnn --seeds 2 --epochs 2 --out "$o/a" "$s"
  cp "$tmp/o" "$o/a.log"
  if grep -q -E '^chnn +chnn +338 +[0-9.]+ +[0-9.]+e-0[0-9] +\[[0-9.]+e-0[0-9], [0-9.]+e-0[0-9]\] ' "$o/a.log" &&
     grep -q -E '^clnn +clnn +338 ' "$o/a.log" && [ "$(grep -c '^trained 2 epochs' "$o/a.log")" -eq 4 ]; then pass
  else fail "compare: the table's rows, or not 4 runs trained"; tail -6 "$o/a.log"; fi
  local j=$o/a/comparison.json f
  if [ "$(grep -c '"status": "ok"' "$j")" -eq 4 ] && grep -q '"seeds": \[0, 1\],' "$j" && grep -q '"models": \["chnn", "clnn"\],' "$j" &&
     [ "$(grep -c '"test_trajectories": 16, "param_count": 338' "$j")" -eq 2 ] && grep -q '"dir": "'"$o"'/a/clnn-seed1"' "$j"
  then pass; else fail "compare: comparison.json lacks a model, seed or pooled figure"; head -30 "$j"; fi
  for f in fig7-rel-error.svg fig8-energy-error.svg; do
    if grep -q '>chnn</text>' "$o/a/$f" && grep -q '>clnn</text>' "$o/a/$f" && grep -q 'fill-opacity="0.18"' "$o/a/$f"; then pass
    else fail "compare: $f lacks a model's line or its band"; fi
  done
  if grep -q '>chaos floor</text>' "$o/a/fig7-rel-error.svg" && [ ! -e "$o/a/data-efficiency.svg" ]; then pass
  else fail "compare: fig7's chaos floor, or a data-efficiency plot for one size"; fi
  # chnn's pooled figure: the geometric mean of both seeds' per-trajectory errors
  local want; want=$(sed -n '/"models": \[$/,$p' "$j" | grep -m1 '"rel_error":' | sed 's/.*: \(.*\),/\1/')
  if awk -v g="$want" -F, 'FNR > 1 { s += log($2); n++ } END { m = exp(s / n); exit !(n == 16 && m > g * (1 - 1e-8) && m < g * (1 + 1e-8)) }' \
       "$o/a/chnn-seed0/trajectories.csv" "$o/a/chnn-seed1/trajectories.csv"; then pass
  else fail "compare: chnn's pooled error $want is not the geometric mean of its seeds' trajectories"; fi
  # each model's pooled 95 % intervals from its seeds' own files: t(0.975, 15) = 2.131450
  # standard errors of the 16 logs either side (of the 16 values for |Phi|, an arithmetic
  # mean, the interval clamped at 0), for each figure's time summary (trajectories.csv)
  # and over time at the horizon (errors.csv's last time)
  local m col key sec ci band tmax
  tmax=$(tail -1 "$o/a/chnn-seed0/errors.csv" | cut -d, -f2)
  for m in chnn clnn; do
    sec=$(awk -v m="$m" '/^  "models": \[$/ { on = 1 } on && /\{"model": "/ { cur = index($0, "{\"model\": \"" m "\"") > 0 } on && cur' "$j")
    for col in 2:rel_error 3:energy_error 4:constraint_violation 5:chaos_floor; do
      key=${col#*:} col=${col%%:*}
      ci=$(sed -n "s/^ *\"${key}_ci95\": \[\(.*\)\],\$/\1/p" <<< "$sec")
      band="$(sed -n "s/^ *\"${key}_ci95_lo\": \[.*, \([^,]*\)\].*/\1/p" <<< "$sec"), $(sed -n "s/^ *\"${key}_ci95_hi\": \[.*, \([^,]*\)\].*/\1/p" <<< "$sec")"
      local lin=0; [ "$key" = constraint_violation ] && lin=1
      if awk -F, -v c="$col" -v ci="$ci" -v band="$band" -v tmax="$tmax" -v lin=$lin '
           function f(x) { return lin ? x : log(x) } function finv(x) { return lin ? (x > 0 ? x : 0) : exp(x) }
           function near(x, want) { return x == 0 ? want == 0 : want > x * (1 - 1e-6) && want < x * (1 + 1e-6) }
           FNR == 1 { file++; next }
           file <= 2 { a[na++] = f($c) } file > 2 && $2 == tmax { b[nb++] = f($(c + 1)) }
           function ok(v, n, want,   i, m, s, h, w) { for (i = 0; i < n; i++) m += v[i] / n
             for (i = 0; i < n; i++) s += (v[i] - m)^2
             h = 2.131450 * sqrt(s / (n - 1) / n); split(want, w, ", ")
             return n == 16 && near(finv(m - h), w[1]) && near(finv(m + h), w[2]) }
           END { exit !(ok(a, na, ci) && ok(b, nb, band)) }' "$o/a/$m-seed0/trajectories.csv" "$o/a/$m-seed1/trajectories.csv" \
           "$o/a/$m-seed0/errors.csv" "$o/a/$m-seed1/errors.csv"
      then pass; else fail "compare: $m's pooled $key interval [$ci] (at t = $tmax: [$band]) is not the 95 % interval of its seeds' files"; fi
    done
  done
  # its |Phi|: the arithmetic mean of their trajectories' means over time (no floor), said under the table
  want=$(sed -n '/"models": \[$/,$p' "$j" | grep -m1 '"constraint_violation":' | sed 's/.*: \(.*\),/\1/')
  if awk -v g="$want" -F, 'FNR > 1 { s += $4; n++ } END { m = s / n; exit !(n == 16 && g > 0 && m > g * (1 - 1e-8) && m < g * (1 + 1e-8)) }' \
       "$o/a/chnn-seed0/trajectories.csv" "$o/a/chnn-seed1/trajectories.csv" &&
     grep -q '^|Phi|: the mean of |Phi(t)| over time and trajectories$' "$o/a.log"; then pass
  else fail "compare: chnn's pooled |Phi| $want is not the mean of its seeds' trajectories, or no definition under the table"; fi
  # the same command again: every run reused, nothing trained, the same comparison.json
  cp "$j" "$o/first.json"
  expect "compare again" 0 'reusing finished run' -- "$p" compare --models chnn,clnn --seeds 2 --epochs 2 --out "$o/a" "$s"
  if [ "$(grep -c '^reusing finished run' "$tmp/o")" -eq 4 ] && ! grep -q '^trained' "$tmp/o" && cmp -s "$j" "$o/first.json"; then pass
  else fail "compare again: not every run reused, or another comparison.json"; grep 'reusing\|trained' "$tmp/o"; fi
  # a run evaluated before the figures' present definitions (its metrics.json without
  # geomean_floor: |Phi| a geometric mean with the floor) is not pooled with the others; run
  # --resume evaluates it again, and it is taken
  cp -r "$o/a" "$o/old" && sed -i '/"geomean_floor"/d' "$o/old/chnn-seed0/metrics.json"
  expect "compare: a run evaluated before" 1 "chnn-seed0 was evaluated before the figures' present definitions: .physc run --resume --out $o/old/chnn-seed0. with the same options" -- \
    "$p" compare --models chnn --seeds 1 --epochs 2 --out "$o/old" "$s"
  "$p" run -q --resume --model chnn --epochs 2 --out "$o/old/chnn-seed0" "$s" > /dev/null 2>&1
  expect "compare: that run evaluated again" 0 'reusing finished run' -- "$p" compare --models chnn --seeds 1 --epochs 2 --out "$o/old" "$s"
  # a comment added to the program changes no figure: still reused
  { echo '// a comment'; cat "$s"; } > "$o/commented.phys"
  expect "compare after a comment-only change" 0 'reusing finished run' -- \
    "$p" compare --models chnn --seeds 2 --epochs 2 --out "$o/a" "$o/commented.phys"
  if [ "$(grep -c '^reusing finished run' "$tmp/o")" -eq 2 ] && ! grep -q '^trained' "$tmp/o"; then pass
  else fail "compare after a comment-only change: retrained"; grep 'reusing\|trained' "$tmp/o"; fi
  # --precision f32: the runs train in float, so the f64 runs (in a copy of the folder) are not
  # reused, and not replaced without --force
  cp -r "$o/a" "$o/f32"
  expect "compare --precision f32 over f64 runs" 1 'f32/chnn-seed0 holds a finished run of model chnn .*--force replaces it' -- \
    "$p" compare --models chnn --seeds 1 --epochs 2 --precision f32 --out "$o/f32" "$s"
  if cmp -s "$o/a/chnn-seed0/params.bin" "$o/f32/chnn-seed0/params.bin"; then pass
  else fail "compare --precision f32 without --force changed the f64 run"; fi
  expect "compare --precision f32" 0 'silu f32|tanh f32|softplus f32' -- \
    "$p" compare --force --models chnn --seeds 1 --epochs 2 --precision f32 --out "$o/f32" "$s"
  if ! grep -q '^reusing finished run' "$tmp/o" && grep -q '^trained 2 epochs' "$tmp/o"; then pass
  else fail "compare --precision f32 reused an f64 run"; grep 'reusing\|trained' "$tmp/o"; fi
  expect "compare --precision f16" 2 "bad value 'f16' for --precision" -- "$p" compare --precision f16 "$s"
  # --jobs 2: the same runs, two at a time in child processes, each with its log
  expect "compare --jobs 2" 0 'run 4 of 4 ended' -- "$p" compare --models chnn,clnn --seeds 2 --epochs 2 --jobs 2 --out "$o/j" "$s"
  local same=1 r
  for r in chnn-seed0 chnn-seed1 clnn-seed0 clnn-seed1; do
    cmp -s "$o/a/$r/trajectories.csv" "$o/j/$r/trajectories.csv" && cmp -s "$o/a/$r/errors.csv" "$o/j/$r/errors.csv" &&
      grep -q '^trained 2 epochs' "$o/j/$r.log" || same=0
  done
  if [ $same -eq 1 ] && grep -q '"models": \["chnn", "clnn"\],' "$o/j/comparison.json"; then pass
  else fail "compare --jobs 2: not the runs of --jobs 1, or a run's log missing"; fi
  # SIGTERM to compare --jobs 2: forwarded once to both runs, which keep their checkpoints;
  # the same command resumes them. Under nohup, a SIGHUP (the terminal closed) stops neither.
  nohup "$p" compare --models chnn,clnn --epochs 100000 --jobs 2 --out "$o/t" "$s" > "$tmp/t.out" 2>&1 &
  local cpid=$! k n0
  for k in $(seq 1 600); do
    grep -q '^epoch' "$o/t/chnn-seed0.log" 2>/dev/null && grep -q '^epoch' "$o/t/clnn-seed0.log" 2>/dev/null && break
    sleep 0.1
  done
  kill -HUP $cpid; n0=$(grep -c '^epoch' "$o/t/clnn-seed0.log")
  for k in $(seq 1 600); do [ "$(grep -c '^epoch' "$o/t/clnn-seed0.log")" -gt $((n0 + 5)) ] && break; sleep 0.1; done
  kill -TERM $cpid; wait $cpid; local crc=$?
  if [ $crc -eq 143 ] && grep -q '2 runs in progress kept their checkpoints' "$tmp/t.out" &&
     grep -q 'stopped after epoch .* (SIGTERM)' "$o/t/chnn-seed0.log" && grep -q 'stopped after epoch .* (SIGTERM)' "$o/t/clnn-seed0.log"
  then pass; else fail "compare --jobs 2 on SIGTERM: exit $crc, or a run not stopped with its checkpoint"; cat "$tmp/t.out"; fi
  expect_timeout=5 expect "compare --jobs 2 resumes both" 124 'clnn-seed0/ \(resuming its checkpoint\)' -- \
    "$p" compare --models chnn,clnn --epochs 100000 --jobs 2 --out "$o/t" "$s"
  if grep -q 'chnn-seed0/ (resuming its checkpoint)' "$tmp/o"; then pass; else fail "compare --jobs 2: chnn not resumed"; fi
  expect "compare --jobs 0" 2 "bad value '0' for --jobs" -- "$p" compare --jobs 0 "$s"
  # runs finished, but none at the largest size (terabytes of data: refused at once, on any
  # machine): the plots show that size, and the message says so instead of "no run finished"
  sed 's/dt 0.03; steps 100/dt 0.03; steps 20000/' tests/run/small.phys > "$o/long.phys"
  expect "compare: no run at the largest size" 1 'no plots: no run with 9999999 training trajectories, the size they show, finished' -- \
    "$p" compare --models chnn --train-sizes 2,9999999 --epochs 1 --out "$o/largest" "$o/long.phys"
  # a finished `physc run` in its own folder (runs/<system>-<model>) of the same fingerprint is
  # taken, its files copied, not trained again; another epoch count is not
  mkdir -p "$o/w"
  local inw=(bash -c 'cd "$0" && exec "$@"' "$o/w") pw; pw=$(realpath "$p")
  "${inw[@]}" "$pw" run -q --model chnn --epochs 2 "$root/$s" > /dev/null 2>&1
  expect "compare takes physc run's finished run" 0 'run 2 of 2 ended' -- \
    "${inw[@]}" "$pw" compare --models chnn,clnn --epochs 2 --jobs 2 "$root/$s"
  if grep -q 'reusing finished run runs/pendulum1-chnn (the same program' "$o/w/runs/pendulum1-compare/chnn-seed0.log" &&
     [ "$(grep -c 'trained 2 epochs' "$o/w/runs/pendulum1-compare/clnn-seed0.log")" -eq 1 ] &&
     cmp -s "$o/w/runs/pendulum1-chnn/trajectories.csv" "$o/w/runs/pendulum1-compare/chnn-seed0/trajectories.csv"; then pass
  else fail "compare: physc run's finished run not copied, or clnn not trained"; fi
  expect "compare does not take a run of other epochs" 0 'trained 3 epochs' -- \
    "${inw[@]}" "$pw" compare --models chnn --epochs 3 --out "$o/w/three" "$root/$s"
  if ! grep -q 'reusing' "$tmp/o"; then pass; else fail "compare: a run of other epochs was taken"; fi
  # another run's metrics.json in a finished run's folder is not taken for its own
  cp "$o/a/chnn-seed1/metrics.json" "$o/a/chnn-seed0/metrics.json"
  expect "compare evaluates again a run whose metrics.json is another's" 0 'chnn-seed0 holds this very run, finished \(2 epochs\): evaluating it again' -- \
    "$p" compare --models chnn --epochs 2 --out "$o/a" "$s"
  if cmp -s "$o/a/chnn-seed0/trajectories.csv" "$o/j/chnn-seed0/trajectories.csv" &&
     ! grep -q '"seed": 1,' "$o/a/chnn-seed0/metrics.json"; then pass
  else fail "compare: the run evaluated again does not report as before"; fi
  # another setting is refused over a finished run, and retrains with --force; an unfinished
  # run is resumed
  expect "compare with other epochs over finished runs" 1 'holds a finished run of model chnn \(2 epochs\)' -- \
    "$p" compare --models chnn --epochs 3 --out "$o/a" "$s"
  expect "compare --force with other epochs retrains" 0 'trained 3 epochs' -- "$p" compare --force --models chnn --epochs 3 --out "$o/a" "$s"
  "$p" run -q --model clnn --epochs 4 --stop-after 2 --out "$o/u/clnn-seed0" "$s" > /dev/null 2>&1
  expect "compare resumes an unfinished run" 0 'trained 2 epochs' -- "$p" compare --models clnn --epochs 4 --out "$o/u" "$s"
  if grep -q 'clnn-seed0/ (resuming its checkpoint)' "$tmp/o"; then pass; else fail "compare: the unfinished run not resumed"; fi
  # training-set sizes: the first 8 of 32 trajectories train, on the same test trajectories
  expect "compare --train-sizes" 0 '^data efficiency' -- "$p" compare -q --models chnn,clnn --train-sizes 32,8 --epochs 2 --out "$o/n" "$s"
  if grep -q -E '^8 +[0-9.]+e-0[0-9] +[0-9.]+e-0[0-9]' "$tmp/o" && grep -q -E '^32 +[0-9.]+e-0[0-9]' "$tmp/o" &&
     grep -q '"train_trajectories": 8,' "$o/n/chnn-seed0-n8/metrics.json" && grep -q '"train_trajectories": 32,' "$o/n/chnn-seed0-n32/metrics.json" &&
     grep -q '>training trajectories</text>' "$o/n/data-efficiency.svg"; then pass
  else fail "compare --train-sizes: the data-efficiency table or plot"; tail -5 "$tmp/o"; fi
  # the chaos floor depends on the test set alone: the same series for both sizes
  if [ -s "$o/n/chnn-seed0-n8/errors.csv" ] && cmp -s <(cut -d, -f1,2,6 "$o/n/chnn-seed0-n8/errors.csv") <(cut -d, -f1,2,6 "$o/n/chnn-seed0-n32/errors.csv") &&
     ! cmp -s <(cut -d, -f3 "$o/n/chnn-seed0-n8/errors.csv") <(cut -d, -f3 "$o/n/chnn-seed0-n32/errors.csv"); then pass
  else fail "compare --train-sizes: the sizes were tested on different test sets"; fi
  expect "compare --seeds 0" 2 "bad value '0' for --seeds" -- "$p" compare --seeds 0 "$s"
  expect "compare --train-sizes 0" 2 "bad value '8,0' for --train-sizes" -- "$p" compare --train-sizes 8,0 "$s"
  expect "compare --train-sizes repeated" 2 "bad value '8,8' for --train-sizes" -- "$p" compare --train-sizes 8,8 "$s"
  expect "compare --models nosuch" 2 'no model of that name: nosuch \(models: chnn \(chnn\), clnn \(clnn\), relu \(chnn\)\)' -- \
    "$p" compare --models chnn,nosuch --out "$o/x" "$s"
  expect "compare unknown option" 2 "unknown option '--resume'" -- "$p" compare --resume "$s"
  if [ ! -e "$o/x" ]; then pass; else fail "compare: a refused command line made its folder"; fi
  # every model by default: relu cannot train; chnn and clnn are still compared, exit 1
  expect "compare with a model that fails" 1 '^relu +chnn +failed \(1 of 1 run\): .*relu has no second derivative' -- \
    "$p" compare -q --epochs 2 --out "$o/f" "$s"
  if grep -q -E '^chnn +chnn +338 ' "$tmp/o" && grep -q -E '^clnn +clnn +338 ' "$tmp/o" && grep -q '1 of 3 runs failed' "$tmp/o" &&
     grep -q '"status": "failed", "failure": "learned term' "$o/f/comparison.json" && grep -q '>clnn</text>' "$o/f/fig7-rel-error.svg" &&
     ! grep -q '>relu</text>' "$o/f/fig7-rel-error.svg"; then pass
  else fail "compare: the failed model's report, or the others'"; tail -6 "$tmp/o"; fi
  # runs that diverge: each reported with its reason; no plot without a finished run
  sed 's/lr 3e-3/lr 100/; s/batch 16/batch 4/' tests/run/small.phys > "$o/diverge.phys"
  expect "compare: runs that diverge" 1 '^chnn +chnn +failed \(1 of 1 run\): epoch 1: the training loss became' -- \
    "$p" compare -q --epochs 2 --out "$o/d" "$o/diverge.phys"
  if grep -q '2 of 2 runs failed' "$tmp/o" && grep -q 'no plots: no run finished' "$tmp/o" && [ -s "$o/d/comparison.json" ] &&
     [ ! -e "$o/d/fig7-rel-error.svg" ]; then pass
  else fail "compare: diverging runs' report"; tail -4 "$tmp/o"; fi
}

# Recorded data is checked before anything trains on it or starts from it (runtime/io/dataset.c,
# prt_trajset_load, for `physc run` and `physc simulate --from` alike): the header names this
# system's columns in order, every value is finite, the trajectories are alike and ordered in
# t, the states are on the constraints. Each refusal exits 1 with what was found.
csv_checks() { # $1 = physc, $2 = the run layer's folder (data/train.csv: 64 trajectories of small.phys)
  local p=$1 o=$2 s=tests/run/small.phys c=$2/csv good=$2/data/train.csv
  mkdir -p "$c"
  sed '1s/bob\[1\]\.x,bob\[1\]\.y/bob[1].y,bob[1].x/' "$good" > "$o/data/all.csv"
  expect "run: CSV with swapped columns" 1 "all.csv:1: column 3 of the header is 'bob\\[1\\]\\.y' where 'bob\\[1\\]\\.x' is expected: this system's columns are traj,t,bob\\[1\\]\\.x,bob\\[1\\]\\.y,bob\\[1\\]\\.vx,bob\\[1\\]\\.vy" -- \
    "$p" run --epochs 1 --out "$c/r" "$o/file.phys"
  { echo 'traj,t,x,y,vx,vy'; tail -n +2 "$good"; } > "$c/names.csv"
  expect "simulate --from: CSV with made-up names" 1 "names.csv:1: column 3 of the header is 'x' where 'bob\\[1\\]\\.x' is expected" -- \
    "$p" simulate --from "$c/names.csv" "$s"
  sed '1s/,bob\[1\]\.vy$//' "$good" > "$c/short.csv"
  expect "simulate --from: a header one column short" 1 "short.csv:1: the header has 5 columns; this system's data has 6" -- \
    "$p" simulate --from "$c/short.csv" "$s"
  sed '3s/,[^,]*$/,nan/' "$good" > "$c/nan.csv"
  expect "simulate --from: NaN in a CSV" 1 'nan.csv:3: bob\[1\]\.vy is nan: every value must be a finite number' -- \
    "$p" simulate --from "$c/nan.csv" "$s"
  sed '4s/^\([0-9]*,[^,]*\),[^,]*,/\1,-inf,/' "$good" > "$c/inf.csv"
  expect "simulate --from: inf in a CSV" 1 'inf.csv:4: bob\[1\]\.x is -inf: every value must be a finite number' -- \
    "$p" simulate --from "$c/inf.csv" "$s"
  : > "$c/empty.csv"
  expect "simulate --from: an empty CSV" 1 'empty.csv: empty file' -- "$p" simulate --from "$c/empty.csv" "$s"
  head -1 "$good" > "$c/header.csv"
  expect "simulate --from: a header only" 1 'header.csv: no data rows \(only a header\)' -- "$p" simulate --from "$c/header.csv" "$s"
  expect "simulate --from: a directory" 1 "cannot read data file $c: it is a directory" -- "$p" simulate --from "$c" "$s"
  awk -F, 'NR == 1 || !($1 == 5 && $2 > 2.995)' "$good" > "$c/ragged.csv"
  expect "simulate --from: trajectories of different lengths" 1 'ragged.csv: trajectory 5 has 100 points and trajectory 0 has 101: every trajectory needs the same number' -- \
    "$p" simulate --from "$c/ragged.csv" "$s"
  awk -F, 'NR == 1 || !($1 == 0 && $2 == 0)' "$good" > "$c/order.csv"; grep -m1 '^0,0,' "$good" >> "$c/order.csv"
  expect "simulate --from: a trajectory's rows out of order in t" 1 "order.csv:[0-9]+: t = 0 comes after t = 0\.03 in trajectory 0: a trajectory's rows must come in increasing t" -- \
    "$p" simulate --from "$c/order.csv" "$s"
  awk -F, -v OFS=, 'NR > 1 && $1 == 7 && $2 > 0.25 && $2 < 0.28 { $2 = 0.28 } { print }' "$good" > "$c/uneven.csv"
  expect "simulate --from: unevenly spaced t" 1 'uneven.csv:[0-9]+: t = 0\.28 where 0\.27 is expected: points must be equally spaced in t, dt 0\.03 apart' -- \
    "$p" simulate --from "$c/uneven.csv" "$s"
  # the pendulum's positions 1.5 times too far out: 50 % off its tether, another system's data
  awk -F, -v OFS=, 'NR > 1 { $3 *= 1.5; $4 *= 1.5 } { print }' "$good" > "$c/far.csv"
  expect "simulate --from: states far off the constraints" 1 'far.csv: the states are far off this system.s constraints \(max \|Phi\| [0-9.]+ and \|Phi_dot\| [0-9.e+-]+, distances of 0\.[0-9]+ of the positions. scale' -- \
    "$p" simulate --from "$c/far.csv" "$s"
  cp "$c/far.csv" "$o/data/all.csv"
  expect "run: data far off the constraints" 1 'all.csv: the states are far off this system.s constraints' -- \
    "$p" run --epochs 1 --out "$c/r" "$o/file.phys"
  # a shift of 1e-3 (0.1 % of the length): trained on, with a warning that gives the figures
  awk -F, -v OFS=, 'NR > 1 { $3 += 1e-3 } { print }' "$good" > "$c/noisy.csv"
  expect "simulate --from: states a little off the constraints" 0 'warning: .*noisy.csv: the states are off the constraints \(max \|Phi\| 0\.00[0-9]+ and \|Phi_dot\| [0-9.e-]+, distances of 0\.000[0-9]+ of the positions. scale' -- \
    "$p" simulate --from "$c/noisy.csv" --steps 2 "$s"
  # a relative data file is the program's folder's, as imports are, whatever the working
  # directory; a missing one is reported at the setting, with the path tried
  mkdir -p "$c/prog/sub"; cp "$good" "$c/prog/sub/all.csv"
  sed 's|file "[^"]*"|file "sub/all.csv"|' "$o/file.phys" > "$c/prog/rel.phys"
  expect "run: a data file beside the program" 0 "data: $c/prog/sub/all.csv: 10 train" -- \
    "$p" run --epochs 1 --out "$c/rel" "$c/prog/rel.phys"
  # compare: sizes the file does not have are refused before anything trains
  expect "compare --train-sizes beyond the file's" 2 "--train-sizes 11: the data block's train takes 10 trajectories of .*all.csv" -- \
    "$p" compare --models chnn --train-sizes 5,11 --epochs 1 --out "$c/cmp-sizes" "$c/prog/rel.phys"
  if [ ! -e "$c/cmp-sizes" ]; then pass; else fail "compare --train-sizes beyond the file's: something trained first"; fi
  sed 's|sub/all.csv|nosuch.csv|' "$c/prog/rel.phys" > "$c/prog/missing.phys"
  expect "run: a missing data file" 1 "missing.phys:[0-9]+:[0-9]+: error: cannot read data file $c/prog/nosuch.csv: No such file" -- \
    "$p" run --epochs 1 --out "$c/missing" "$c/prog/missing.phys"
  # the file decides dt and the trajectories' length: a dt or horizon set beside it must fit
  sed 's/dt 0.03;/dt 0.05;/' "$c/prog/rel.phys" > "$c/prog/dt.phys"
  expect "run: data dt against the file's t column" 1 'dt.phys:[0-9]+:[0-9]+: error: dt 0.05 disagrees with .*sub/all.csv, whose points are 0.03 apart in t' -- \
    "$p" run --epochs 1 --out "$c/dt" "$c/prog/dt.phys"
  sed 's/horizon 50;/horizon 200;/' "$c/prog/rel.phys" > "$c/prog/horizon.phys"
  expect "run: eval horizon longer than the file's trajectories" 1 'horizon.phys:[0-9]+:8: error: horizon \(200 steps\) is longer than the trajectories of .*sub/all.csv \(100 steps\)' -- \
    "$p" run --epochs 1 --out "$c/horizon" "$c/prog/horizon.phys"
  expect "simulate --from: recorded dopri5 data is on the constraints" 0 'from the first states of' -- \
    "$p" simulate --from "$good" --steps 2 "$s"
  if ! grep -q warning "$tmp/o"; then pass; else fail "simulate --from: a warning on dopri5 data"; grep warning "$tmp/o"; fi
}

# The main job on the real 1-pendulum (800 trajectories, 3 x 256 tanh): a short run must
# reach a test error well below that of an untrained model (measured: see docs/results.md).
e2e_layer() { # $1 = physc
  local p=$1
  expect_timeout=900 expect "run pendulum1 (20 epochs)" 0 'relative state error' -- "$p" run --epochs 20 --out "$tmp/e2e" examples/pendulum1.phys
  local err; err=$(sed -n 's/.*"test_geomean_rel_error": \([^,]*\),/\1/p' "$tmp/e2e/metrics.json")
  if awk -v e="$err" 'BEGIN { exit !(e != "" && e < 2e-2) }'; then pass
  else fail "run pendulum1: test error $err is not below 2e-2"; fi
}

# Malformed input of every kind gets a diagnostic (exit 1), never a crash or a hang.
malformed_layer() { # $1 = physc
  local p=$1 d=$tmp/bad
  mkdir -p "$d"
  head -c 65536 "$root/$build/physc" > "$d/binary.phys"
  printf 'system s {\n  dim 2\0\n}\n' > "$d/nul.phys"
  printf 'system s {\n  dim 2 \xff\xfe\n}\n' > "$d/utf8.phys"
  printf 'system s \xce\xb8 {\n' > "$d/nonascii.phys"
  { printf 'const '; head -c 1000000 /dev/zero | tr '\0' a; printf ' = 1\n'; } > "$d/longident.phys"
  { printf 'const x = '; head -c 200000 /dev/zero | tr '\0' '('; printf '1'; head -c 200000 /dev/zero | tr '\0' ')'; echo; } > "$d/parens.phys"
  { printf 'const x = '; head -c 200000 /dev/zero | tr '\0' '-'; printf '1\n'; } > "$d/minus.phys"
  { printf 'const x = 1'; for i in $(seq 1 3000); do printf ' + 1'; done; echo; } > "$d/longsum.phys"
  { printf 'const x = 2'; head -c 100000 /dev/zero | tr '\0' '^' | sed 's/\^/^2/g'; echo; } > "$d/power.phys"
  printf 'const x = 1e999\n' > "$d/overflow.phys"
  printf 'const x = [1, 2\n' > "$d/unclosed.phys"
  printf '/* never closed\n' > "$d/comment.phys"
  printf 'const s = "no end\n' > "$d/string.phys"
  : > "$d/empty.phys"
  printf 'system s {\n  dim 2\n  body b : point { mass 1 }\n  for i in 1..10000 {\n    for j in 1..10000 {\n    }\n  }\n}\n' > "$d/bigloop.phys"
  printf 'fn f(x) = f(x) + 1\nconst c = f(1)\n' > "$d/recursion.phys"
  expect "binary garbage" 1 'error:' -- "$p" check "$d/binary.phys"
  expect "NUL byte" 1 'nul.phys:2:8: error: NUL byte' -- "$p" check "$d/nul.phys"
  expect "invalid UTF-8" 1 'utf8.phys:2:9: error: invalid UTF-8 byte 0xFF' -- "$p" check "$d/utf8.phys"
  expect "non-ASCII name" 1 "U\\+03B8" -- "$p" check "$d/nonascii.phys"
  expect "1 MB identifier" 1 'name is too long \(1000000 characters' -- "$p" check "$d/longident.phys"
  expect "200000 parentheses" 1 'nested too deeply' -- "$p" check "$d/parens.phys"
  expect "200000 unary minus" 1 'nested too deeply' -- "$p" check "$d/minus.phys"
  expect "3000-term sum" 1 'nested too deeply' -- "$p" check "$d/longsum.phys"
  expect "100000 powers" 1 'nested too deeply' -- "$p" check "$d/power.phys"
  expect "number overflow" 1 "overflow.phys:1:11: error: number '1e999' is too large" -- "$p" check "$d/overflow.phys"
  expect "unclosed bracket" 1 "unclosed.phys:1:11: error: '\\[' is not closed" -- "$p" check "$d/unclosed.phys"
  expect "unclosed comment" 1 "comment.phys:1:1: error: comment is not closed" -- "$p" check "$d/comment.phys"
  expect "unclosed string" 1 "string.phys:1:11: error: string is not closed" -- "$p" check "$d/string.phys"
  expect "empty file" 1 'no system declared' -- "$p" check "$d/empty.phys"
  expect "10^8 unrolled loop steps" 1 'too large to check' -- "$p" check "$d/bigloop.phys"
  expect "recursive function" 1 'is f\(\) recursive' -- "$p" check "$d/recursion.phys"
  # a lone CR ends a line (classic Mac files) as CR LF and LF do
  printf 'system s {\r  dim 2\r  body b : point { mass 1 }\r  init {\r    b.pos = [1, 0]\r    b.vel = [0, 1]\r  }\r}\r' > "$d/cr.phys"
  expect "CR line endings" 0 '^  degrees of freedom:  2$' -- "$p" check "$d/cr.phys"
  printf 'system s {\r  dim 2\r  body b : point { mass 0 }\r}\r' > "$d/cr-bad.phys"
  expect "CR line endings: the error's line" 1 'cr-bad.phys:3:' -- "$p" check "$d/cr-bad.phys"
  # an imported file that is not text: one error at the import, not one per line of it
  cp "$d/binary.phys" "$d/lib.phys"
  printf 'import "./lib.phys"\nsystem s {\n  dim 1\n  body b : point { mass 1 }\n}\n' > "$d/imports-binary.phys"
  expect "importing a binary file" 1 "imports-binary.phys:1:1: error: cannot import './lib.phys': .*lib.phys is not .phys text" -- \
    "$p" check "$d/imports-binary.phys"
  if [ "$(grep -c 'error:' "$tmp/o")" -eq 1 ]; then pass; else fail "importing a binary file: more than one error"; fi
  # --set of a parameter used as a whole number: named at its uses, no cascade
  sed '3,10s/30/N/g; s/^system chainN {/param N = 30\nsystem chain {/' tests/run/chain30.phys > "$d/chain-n.phys"
  expect "--set a count" 0 '^  degrees of freedom:  3$' -- "$p" check --set N=3 "$d/chain-n.phys"
  expect "--set a count to 2.5" 1 "range bound must be a whole number, and --set N=2.5 on the command line makes parameter 'N' 2.5" -- \
    "$p" check --set N=2.5 "$d/chain-n.phys"
  if ! grep -q 'used before it is defined' "$tmp/o"; then pass; else fail "--set N=2.5: a cascade of follow-on errors"; fi
  special_inputs "$p"
}

# An input that is not a regular file (a FIFO would block its open forever, a device never
# ends) is refused at once, naming it: sources, imports, data files, params, checkpoints.
special_inputs() { # $1 = physc
  local p=$1 d S=tests/run/small.phys expect_timeout=10; d=$(mktemp -d "$tmp/special.XXXXXX") # a folder per pass
  mkdir -p "$d/run"
  mkfifo "$d/fifo.phys" "$d/fifo.csv" "$d/run/checkpoint.bin"
  printf 'import "./fifo.phys"\n' > "$d/imports-fifo.phys"
  sed 's|^  train 64; valid 16; test 16; dt 0.03; steps 100|  file "fifo.csv"; train 64; valid 16; test 16|' $S > "$d/data-fifo.phys"
  expect "a FIFO as the program" 1 "cannot read '.*fifo.phys': it is a FIFO" -- "$p" check "$d/fifo.phys"
  expect "a device as the program" 1 "cannot read '/dev/zero': it is a character device" -- "$p" check /dev/zero
  expect "a FIFO imported" 1 "imports-fifo.phys:1:1: error: cannot import .*it is a FIFO" -- "$p" check "$d/imports-fifo.phys"
  expect "a FIFO as the data file" 1 "data-fifo.phys:35:3: error: cannot read data file .*fifo.csv: it is a FIFO" -- \
    "$p" run --epochs 1 --out "$d/r1" "$d/data-fifo.phys"
  expect "a FIFO as --params" 1 "cannot read .*fifo.csv: it is a FIFO" -- "$p" simulate --params "$d/fifo.csv" $S
  expect "a device as --params" 1 "cannot read /dev/urandom: it is a character device" -- "$p" emit-c --params /dev/urandom -o "$d/x.c" $S
  expect "a FIFO as --from" 1 "cannot read data file .*fifo.csv: it is a FIFO" -- "$p" simulate --from "$d/fifo.csv" $S
  expect "a FIFO as the checkpoint" 1 "cannot read .*checkpoint.bin: it is a FIFO" -- "$p" run --resume --epochs 1 --out "$d/run" $S
}

# A failed integration is an error (exit 1): when it failed and what went non-finite (or that
# the step size underflowed), no CSV and no figures computed over frozen states. Through
# `physc simulate` and through an emitted program alike.
failure_layer() { # $1 = build dir
  local b=$1 p=$1/physc d=$tmp/fail
  mkdir -p "$d"
  # radial infall into -1/r from r = 1 at rest reaches r = 0 at t = pi / (2 sqrt 2) = 1.11072
  expect "simulate: dopri5 hits a singularity" 1 'dopri5 failed: at t = 1\.1107[0-9]*, the step size underflowed.*no trajectories written' -- \
    "$p" simulate --n 1 --out "$d/infall.csv" tests/run/infall.phys
  if [ ! -e "$d/infall.csv" ] && ! grep -q 'energy drift' "$tmp/o"; then pass
  else fail "simulate: a failed dopri5 run still wrote a CSV or figures"; fi
  expect "simulate: euler goes non-finite" 1 'euler failed: at t = [0-9]+, b\.v?[xy] of trajectory 0 became non-finite' -- \
    "$p" simulate --n 1 --integrator euler --out "$d/q.csv" tests/run/quartic.phys
  if [ ! -e "$d/q.csv" ]; then pass; else fail "simulate: a failed euler run wrote a CSV"; fi
  expect "simulate: rk4 goes non-finite" 1 'rk4 failed: at t = [0-9]+, b\.v?[xy] of trajectory 0 became non-finite' -- \
    "$p" simulate --n 1 --integrator rk4 tests/run/quartic.phys
  expect "simulate: leapfrog goes non-finite" 1 'leapfrog failed: at t = [0-9]+, .* became non-finite' -- \
    "$p" simulate --n 1 --integrator leapfrog tests/run/quartic.phys
  expect "simulate: RATTLE's Newton fails" 1 "rattle failed: at t = 3 \(step 1\), RATTLE's Newton iteration did not converge" -- \
    "$p" simulate --n 2 --integrator rattle --dt 3 examples/pendulum3.phys
  # an expression that folds to inf or NaN when compiled is an error at that expression
  expect "simulate: 1 / (x - x) folds to inf" 1 'fold-inf.phys:5:20: error: this expression is inf for every state' -- \
    "$p" simulate --n 1 tests/run/fold-inf.phys
  expect "emit-c: 1 / (x - x) folds to inf" 1 'fold-inf.phys:5:20: error: this expression is inf for every state' -- \
    "$p" emit-c tests/run/fold-inf.phys -o "$d/fold.c"
  sed 's|1 / (b.pos.x - b.pos.x)|b.pos.y / (b.pos.x - b.pos.x) + 1 / b.pos.y|' tests/run/fold-inf.phys > "$d/fold-grad.phys"
  expect "simulate: a derivative folds to inf" 1 'fold-grad.phys:5:20: error: the derivative of this expression is inf for every state' -- \
    "$p" simulate --n 1 "$d/fold-grad.phys"
  sed 's|potential gravity = .*|& + 0 / (bob[1].pos.x - bob[1].pos.x)|' tests/run/small.phys > "$d/small-nan.phys"
  expect "run: 0 / (x - x) folds to NaN" 1 'small-nan.phys:[0-9]+:[0-9]+: error: this expression is NaN for every state' -- \
    "$p" run --epochs 1 --out "$d/nan" "$d/small-nan.phys"
  # an init block too far from the constraints for the projection: the farthest row named
  # (tests/run/chain30.phys's init stretches every link 4 %: at 300 links Newton does not converge)
  sed 's/30/300/g' tests/run/chain30.phys > "$d/chain300.phys"
  expect "simulate: init too far from the constraints" 1 \
    "chain300.phys:9:3: Newton's projection of the init block's states onto the constraints did not converge: they are up to [0-9.e+-]+ off \`link [0-9]+ \(line 7\)\`" -- \
    "$p" simulate --n 1 --kernels loop "$d/chain300.phys"
  # a non-finite initial state is the init block's fault (named), not the projection's
  expect "simulate: NaN from init" 1 'init-nan.phys:7:3: the init block gave a non-finite value \(inf or NaN\) for b\.vy of state [0-9]+' -- \
    "$p" simulate --n 4 tests/run/init-nan.phys
  sed 's|b.pos = \[1, 0\]|b.pos = [sqrt(normal(0, 1)), 0]|; s|log(normal(0, 1))|1|' tests/run/init-nan.phys > "$d/init-pos.phys"
  expect "simulate: NaN position from init" 1 'init-pos.phys:7:3: the init block gave a non-finite value \(inf or NaN\) for b\.x of state [0-9]+' -- \
    "$p" simulate --n 4 "$d/init-pos.phys"
  sed 's|theta = normal(0, 1, N)|theta = log(normal(0, 1, N))|' tests/run/small.phys > "$d/init-run.phys"
  expect "run: NaN from init" 1 'init-run.phys:[0-9]+:3: the init block gave a non-finite value \(inf or NaN\) for bob\[1\]\.x of state [0-9]+' -- \
    "$p" run --epochs 1 --out "$d/init-run" "$d/init-run.phys"
  if "$p" emit-c tests/run/init-nan.phys -o "$d/init-nan.c" > "$tmp/err" 2>&1 &&
     cc -O2 -std=c17 -Iruntime "$d/init-nan.c" "$b/libphysrt.a" -lm -o "$d/init-nan" >> "$tmp/err" 2>&1; then
    expect "emitted program: NaN from init" 1 'init-nan.phys:7:3: the init block gave a non-finite value \(inf or NaN\) for b\.vy' -- "$d/init-nan"
  else fail "emit-c tests/run/init-nan.phys does not build"; head -5 "$tmp/err"; fi
  if "$p" emit-c tests/run/infall.phys -o "$d/infall.c" > "$tmp/err" 2>&1 &&
     cc -O2 -std=c17 -Iruntime "$d/infall.c" "$b/libphysrt.a" -lm -o "$d/infall" >> "$tmp/err" 2>&1; then
    expect "emitted program: dopri5 hits a singularity" 1 'dopri5 failed: at t = 1\.1107[0-9]*, the step size underflowed' -- \
      "$d/infall" --out "$d/infall.c.csv"
    # Euler with dt 1 lands exactly on r = 0 at t = 2 (x = 1 - dt^2): the next step is inf
    expect "emitted program: euler goes non-finite" 1 'euler failed: at t = 3, b\.vx of trajectory 0 became non-finite' -- \
      "$d/infall" --integrator euler --dt 1
    if [ ! -e "$d/infall.c.csv" ]; then pass; else fail "emitted program: a failed run wrote a CSV"; fi
  else fail "emit-c tests/run/infall.phys does not build"; head -5 "$tmp/err"; fi
}

# Every figure printed or written is a number or says in words why there is none (issue 43):
# a body at rest at the kink of V = |x| (tests/run/kink.phys) has states and energies of 0,
# whose relative errors are 0 (they agree), not 0 / 0; a system without constraints has no
# violation; the data at rest no scale. Through run, simulate --params, an emitted program
# and compare, their outputs and files. An energy that is NaN where a rollout goes (a log(x)
# term at x < 0) is an error naming the figure, the trajectory and the time (exit 1).
figures_layer() { # $1 = build dir
  local b=$1 p=$1/physc d=$tmp/figures f
  mkdir -p "$d"
  expect "kink: run" 0 '^  constraint violation \|Phi\| +none: the system has no constraints$' -- \
    "$p" run --out "$d/kink" tests/run/kink.phys
  if ! grep -q -i -w nan "$tmp/o" "$d/kink/"{metrics.json,trajectories.csv,errors.csv,first-rollout.csv} &&
     [ "$(grep -c -E '^  relative (state|energy) error +[0-9.]+e[-+][0-9]+ +\[' "$tmp/o")" -eq 2 ] &&
     grep -q '^  geo. mean: over the test trajectories of exp(time mean of log(e(t) + 1e-08)); 1e-08 is a floor$' "$tmp/o" &&
     grep -q '"test_constraint_violation": null,' "$d/kink/metrics.json" &&
     grep -q -E '"test_model_energy_variance": [0-9.]+(e-[0-9]+)?,' "$d/kink/metrics.json"; then pass
  else fail "kink: run printed or wrote a NaN, or no figure where there is one"; grep -i -w -m3 nan "$tmp/o" "$d/kink/"*.{json,csv}; fi
  expect "kink: simulate --params" 0 '^  relative state error +[0-9.]+e' -- \
    "$p" simulate --params "$d/kink/params.bin" --n 3 tests/run/kink.phys
  ! grep -q -i -w nan "$tmp/o" && pass || { fail "kink: simulate --params printed a NaN"; grep -i -w nan "$tmp/o"; }
  if "$p" emit-c --params "$d/kink/params.bin" -o "$d/kink.c" tests/run/kink.phys > "$tmp/err" 2>&1 &&
     cc -O2 -std=c17 -Iruntime "$d/kink.c" "$b/libphysrt.a" -lopenblas -lm -o "$d/kink.bin" >> "$tmp/err" 2>&1; then
    expect "kink: emitted program" 0 "^  variance of the model's energy +[0-9.]+e" -- "$d/kink.bin" --n 3
    ! grep -q -i -w nan "$tmp/o" && pass || { fail "kink: the emitted program printed a NaN"; grep -i -w nan "$tmp/o"; }
  else fail "emit-c --params of tests/run/kink.phys does not build"; head -5 "$tmp/err"; fi
  expect "kink: compare" 0 '^\|Phi\|: the mean of \|Phi\(t\)\| over time and trajectories \(none: the system has no constraints\)$' -- \
    "$p" compare -q --epochs 2 --out "$d/kcmp" tests/run/kink.phys
  if ! grep -q -i -w nan "$tmp/o" "$d/kcmp/comparison.json" && grep -q -E '^chnn +chnn .* none$' "$tmp/o"; then pass
  else fail "kink: compare printed or wrote a NaN"; grep -i -w nan "$tmp/o" "$d/kcmp/comparison.json" | head -3; fi
  # V = x^2 / 2 + 1e-30 log(x): a finite force everywhere, an energy that is NaN for x < 0
  sed 's|abs(b.pos.x)|0.5 * b.pos.x^2 + 1e-30 * log(b.pos.x)|; s|b.pos = \[0\]|b.pos = [1]|; s/steps 10/steps 40/; s/horizon 10/horizon 40/' \
    tests/run/kink.phys > "$d/lognan.phys"
  expect "NaN energy: simulate" 1 'the energy of trajectory 0 is NaN at t = 1.6, a state the integration reached; no trajectories written' -- \
    "$p" simulate --n 2 --out "$d/lognan.csv" "$d/lognan.phys"
  [ ! -e "$d/lognan.csv" ] && pass || fail "NaN energy: simulate wrote its trajectories"
  expect "NaN energy: run" 1 'is not a finite number: the relative energy error of test trajectory 0 is NaN at t = 1.6 \(the true energy of the test state is NaN\)' -- \
    "$p" run --out "$d/lognan" "$d/lognan.phys"
  if grep -q '"nonfinite_figure": "the relative energy error of test trajectory 0 is NaN at t = 1.6' "$d/lognan/metrics.json" &&
     grep -q -E '^  relative energy error +- ' "$tmp/o" && ! grep -q -i -w nan <(grep -v 'is NaN' "$tmp/o"); then pass
  else fail "NaN energy: run's table or metrics.json"; grep -i nan "$tmp/o" | head -3; fi
  expect "NaN energy: simulate --params" 1 'the energy of trajectory 0 is NaN at t = 1.6' -- \
    "$p" simulate --params "$d/lognan/params.bin" --n 2 "$d/lognan.phys"
  expect "run --help: the loop form's models" 0 "as for .physc simulate.; a chnn's or$" -- "$p" run --help
}

# JIT and emit-c agree: the emitted program, built against the runtime, simulates every
# example to the same numbers as `physc simulate` (to 1e-12 relative).
# Two trajectory CSVs of the same runs agree to 1e-12 relative, column by column (the
# positions and velocities: the columns after traj,t).
agree_1e12() {
  paste -d, "$1" "$2" | awk -F, 'NR == 1 { half = NF / 2; next }
    { for (i = 3; i <= half; i++) { a = $i; b = $(i + half); d = a - b; if (d < 0) d = -d;
        s = (a < 0 ? -a : a) + (b < 0 ? -b : b); if (d > 1e-12 * s + 1e-300) { bad = 1 } } }
    END { exit bad }'
}

emitc_layer() { # $1 = build dir
  local b=$1 f name
  for f in examples/*.phys; do
    name=$(basename "$f" .phys)
    if ! "$b/physc" emit-c "$f" -o "$tmp/$name.c" > "$tmp/err" 2>&1 ||
       ! cc -O2 -std=c17 -Iruntime "$tmp/$name.c" "$b/libphysrt.a" -lm -o "$tmp/$name" > "$tmp/err" 2>&1; then
      fail "emit-c $f does not build"; head -20 "$tmp/err"; continue
    fi
    "$tmp/$name" --n 3 --steps 20 --out "$tmp/$name.c.csv" > /dev/null 2> "$tmp/err" &&
      "$b/physc" simulate --n 3 --steps 20 --out "$tmp/$name.jit.csv" "$f" > /dev/null 2>> "$tmp/err"
    if [ $? -ne 0 ]; then fail "emit-c/JIT run of $f"; head -20 "$tmp/err"; continue; fi
    if agree_1e12 "$tmp/$name.c.csv" "$tmp/$name.jit.csv"; then pass
    else fail "emit-c and JIT trajectories of $f differ"; fi
  done
  # the loop form (runtime/system/loop_field.h) emitted: its row kernels and index tables as C
  # (pendulum3 samples with `project nearest`: the rows' nearest-point projection)
  for f in tests/run/chain30.phys examples/gyroscope.phys examples/pendulum3.phys; do
    name=$(basename "$f" .phys)-loop
    if ! "$b/physc" emit-c --kernels loop "$f" -o "$tmp/$name.c" > "$tmp/err" 2>&1 ||
       ! grep -q 'static PrtLoopField loop' "$tmp/$name.c" || ! grep -qE 'static const char \*const row_names\[[0-9]+\] = \{"(tether|rigid) ' "$tmp/$name.c" ||
       ! cc -O2 -std=c17 -Iruntime "$tmp/$name.c" "$b/libphysrt.a" -lm -o "$tmp/$name" > "$tmp/err" 2>&1; then
      fail "emit-c --kernels loop $f does not build"; head -20 "$tmp/err"; continue
    fi
    "$tmp/$name" --n 3 --steps 20 --out "$tmp/$name.c.csv" > /dev/null 2> "$tmp/err" &&
      "$b/physc" simulate --kernels loop --n 3 --steps 20 --out "$tmp/$name.jit.csv" "$f" > /dev/null 2>> "$tmp/err"
    if [ $? -ne 0 ]; then fail "emit-c/JIT run of $f in loop form"; head -20 "$tmp/err"; continue; fi
    if agree_1e12 "$tmp/$name.c.csv" "$tmp/$name.jit.csv"; then pass
    else fail "emit-c and JIT trajectories of $f in loop form differ"; fi
  done
  # emit-c's automatic choice takes the loop form from 40 rows (DRIVER_EMIT_LOOP_FORM_MIN_ROWS):
  # a 50-link chain, which `physc simulate` keeps unrolled (cc took 34 s on it unrolled)
  sed 's/30/50/g' tests/run/chain30.phys > "$tmp/chain50.phys"
  if ! "$b/physc" emit-c "$tmp/chain50.phys" -o "$tmp/chain50.c" > "$tmp/err" 2>&1 ||
     ! grep -q 'static PrtLoopField loop' "$tmp/chain50.c" ||
     ! cc -O2 -std=c17 -Iruntime "$tmp/chain50.c" "$b/libphysrt.a" -lm -o "$tmp/chain50" > "$tmp/err" 2>&1; then
    fail "emit-c of a 50-link chain: not the loop form, or does not build"; head -20 "$tmp/err"
  elif "$tmp/chain50" --n 2 --steps 10 --out "$tmp/chain50.c.csv" > /dev/null 2> "$tmp/err" &&
       "$b/physc" simulate --kernels loop --n 2 --steps 10 --out "$tmp/chain50.jit.csv" "$tmp/chain50.phys" > /dev/null 2>> "$tmp/err" &&
       agree_1e12 "$tmp/chain50.c.csv" "$tmp/chain50.jit.csv"; then pass
  else fail "emit-c and JIT trajectories of a 50-link chain in loop form differ"; head -20 "$tmp/err"; fi
}

# A trained model shipped as C: `physc emit-c --params` bakes a run's parameters into the
# program, and its rollouts agree with `physc simulate --params` (JIT) to 1e-12 relative.
# CHNN and CLNN, and a hybrid with a known potential term.
emitc_model_layer() { # $1 = build dir
  local b=$1 spec prog model name
  for spec in tests/run/small.phys:chnn tests/run/small.phys:clnn tests/run/hybrid.phys:chnn \
    tests/run/baselines.phys:node tests/run/baselines.phys:hnn tests/run/baselines.phys:hnnknown \
    tests/run/baselines.phys:lnn tests/run/baselines.phys:delan tests/run/baselines.phys:sonode \
    tests/run/baselines.phys:csonode; do
    prog=${spec%:*} model=${spec#*:} name=$(basename "$prog" .phys)-$model
    if ! "$b/physc" run -q --epochs 2 --model "$model" --out "$tmp/$name" "$prog" > "$tmp/err" 2>&1 ||
       ! "$b/physc" emit-c --model "$model" --params "$tmp/$name/params.bin" -o "$tmp/$name.c" "$prog" >> "$tmp/err" 2>&1 ||
       ! cc -O2 -std=c17 -Iruntime "$tmp/$name.c" "$b/libphysrt.a" -lopenblas -lm -o "$tmp/$name.bin" >> "$tmp/err" 2>&1; then
      fail "emit-c of the trained $name does not build"; head -20 "$tmp/err"; continue
    fi
    "$tmp/$name.bin" --n 5 --steps 40 --out "$tmp/$name.c.csv" > "$tmp/$name.c.out" 2> "$tmp/err" &&
      "$b/physc" simulate --model "$model" --params "$tmp/$name/params.bin" --n 5 --steps 40 --out "$tmp/$name.jit.csv" \
        "$prog" > "$tmp/$name.jit.out" 2>> "$tmp/err"
    if [ $? -ne 0 ]; then fail "emit-c/JIT rollout of the trained $name"; head -20 "$tmp/err"; continue; fi
    # the same OpenBLAS kernels in both (runtime/core/blas_cpu.c), whatever this CPU: the same bits
    if grep -q '^BLAS: OpenBLAS' "$tmp/$name.c.out" &&
       [ "$(grep '^BLAS:' "$tmp/$name.c.out")" = "$(grep '^BLAS:' "$tmp/$name.jit.out")" ] &&
       [ "$(grep '^BLAS:' "$tmp/$name.c.out")" = "$("$b/physc" --version | grep '^BLAS:')" ]; then pass
    else fail "the emitted $name and physc run other OpenBLAS kernels"; grep '^BLAS' "$tmp/$name.c.out" "$tmp/$name.jit.out"; fi
    # (and the variance of the model's own energy, which every family but the NODEs has: the known terms' in it too)
    if grep -q 'relative state error' "$tmp/$name.c.out" &&
       grep -q -E "variance of the model's energy +([0-9.]+e[-+][0-9]+|none: a C?NODE(\+SO)? model)" "$tmp/$name.c.out" &&
       [ "$(grep -E "state error|model's energy" "$tmp/$name.c.out")" = "$(grep -E "state error|model's energy" "$tmp/$name.jit.out")" ] &&
       paste -d, "$tmp/$name.c.csv" "$tmp/$name.jit.csv" | awk -F, 'NR == 1 { half = NF / 2; next }
         { for (i = 3; i <= half; i++) { a = $i; b = $(i + half); d = a - b; if (d < 0) d = -d;
             s = (a < 0 ? -a : a) + (b < 0 ? -b : b); if (d > 1e-12 * s + 1e-300) { bad = 1 } } n++ }
         END { exit bad || n != 5 * 41 }'; then pass
    else fail "emit-c and JIT rollouts of the trained $name differ"; fi
  done
  # a trained CHNN in loop form (emit-c's own choice from 40 constraint rows; here asked for):
  # the emitted program and `simulate --kernels loop` bit for bit, the unrolled rollout to 1e-12
  if "$b/physc" emit-c --kernels loop --model chnn --params "$tmp/small-chnn/params.bin" -o "$tmp/small-loop.c" \
       tests/run/small.phys > "$tmp/err" 2>&1 && grep -q 'in loop form' "$tmp/small-loop.c" &&
     cc -O2 -std=c17 -Iruntime "$tmp/small-loop.c" "$b/libphysrt.a" -lopenblas -lm -o "$tmp/small-loop.bin" >> "$tmp/err" 2>&1 &&
     "$tmp/small-loop.bin" --n 5 --steps 40 --out "$tmp/small-loop.csv" > /dev/null 2>> "$tmp/err" &&
     "$b/physc" simulate --kernels loop --model chnn --params "$tmp/small-chnn/params.bin" --n 5 --steps 40 \
       --out "$tmp/small-loop.jit.csv" tests/run/small.phys > /dev/null 2>> "$tmp/err" &&
     cmp -s "$tmp/small-loop.csv" "$tmp/small-loop.jit.csv" &&
     paste -d, "$tmp/small-loop.csv" "$tmp/small-chnn.jit.csv" | awk -F, 'NR == 1 { half = NF / 2; next }
       { for (i = 3; i <= half; i++) { a = $i; b = $(i + half); d = a - b; if (d < 0) d = -d;
           s = (a < 0 ? -a : a) + (b < 0 ? -b : b); if (d > 1e-12 * s + 1e-300) { bad = 1 } } n++ }
       END { exit bad || n != 5 * 41 }'; then pass
  else fail "a trained CHNN emitted in loop form does not build or does not agree"; head -5 "$tmp/err"; fi
  expect "emit-c --kernels loop of a CLNN" 2 'only a chnn' -- "$b/physc" emit-c --kernels loop --model clnn \
    --params "$tmp/small-clnn/params.bin" -o "$tmp/small-clnn-loop.c" tests/run/small.phys
  expect "emitted model with rk4" 2 'rolls out as physc run evaluates it' -- "$tmp/small-chnn.bin" --integrator rk4
  # without OpenBLAS: the plain GEMM of build/libgemm_plain.a differs by rounding only
  if cc -O2 -std=c17 -Iruntime "$tmp/small-chnn.c" "$b/libphysrt.a" "$b/libgemm_plain.a" -lm -o "$tmp/small-chnn-plain" \
       > "$tmp/err" 2>&1 && ! ldd "$tmp/small-chnn-plain" | grep -q blas &&
     "$tmp/small-chnn-plain" --n 5 --steps 40 --out "$tmp/small-chnn.plain.csv" > "$tmp/plain.out" 2>&1 &&
     grep -q '^BLAS: no OpenBLAS linked' "$tmp/plain.out" &&
     [ "$(grep 'state error' "$tmp/plain.out")" = "$(grep 'state error' "$tmp/small-chnn.jit.out")" ] &&
     paste -d, "$tmp/small-chnn.plain.csv" "$tmp/small-chnn.jit.csv" | awk -F, 'NR == 1 { half = NF / 2; next }
       { for (i = 3; i <= half; i++) { a = $i; b = $(i + half); d = a - b; if (d < 0) d = -d;
           s = (a < 0 ? -a : a) + (b < 0 ? -b : b); if (d > 1e-8 * s + 1e-12) { bad = 1 } } n++ }
       END { exit bad || n != 5 * 41 }'; then pass
  else fail "an emitted model without OpenBLAS (libgemm_plain.a) does not build or does not agree"; head -5 "$tmp/err"; fi
  # from recorded states: the emitted program and the JIT agree there too
  "$b/physc" simulate --n 3 --steps 30 --out "$tmp/rec.csv" tests/run/small.phys > /dev/null 2>&1
  "$tmp/small-chnn.bin" --from "$tmp/rec.csv" --out "$tmp/rec.c.csv" > "$tmp/rec.c.out" 2>&1 &&
    "$b/physc" simulate --params "$tmp/small-chnn/params.bin" --from "$tmp/rec.csv" --out "$tmp/rec.jit.csv" \
      tests/run/small.phys > /dev/null 2>&1
  if [ $? -eq 0 ] && grep -q 'against the recorded data' "$tmp/rec.c.out" && cmp -s "$tmp/rec.c.csv" "$tmp/rec.jit.csv" &&
     [ "$(wc -l < "$tmp/rec.c.csv")" -eq $((3 * 31 + 1)) ]; then pass
  else fail "emit-c and JIT rollouts of a trained model from a file differ"; head -5 "$tmp/rec.c.out"; fi
}

# The README's set-up line runs as root without sudo, and as a user through sudo (apt-get,
# sudo and make stubbed: nothing is installed); .ci/run runs that very line.
readme_layer() {
  local line d=$tmp/setup; line=$(grep -m1 'apt-get update' README.md)
  mkdir -p "$d/bin"
  printf '#!/bin/sh\necho "apt-get $*" >> %s/log\n' "$d" > "$d/bin/apt-get"
  printf '#!/bin/sh\necho "make $*" >> %s/log\n' "$d" > "$d/bin/make"
  printf '#!/bin/sh\necho "npm $*" >> %s/log\n' "$d" > "$d/bin/npm"
  chmod +x "$d/bin/apt-get" "$d/bin/make" "$d/bin/npm"
  : > "$d/log"; PATH=$d/bin "$BASH" -c "$line" > /dev/null 2>&1
  if [ $? -eq 0 ] && grep -q '^apt-get update$' "$d/log" && grep -q '^apt-get install -y build-essential' "$d/log" &&
     grep -q '^make $' "$d/log" && grep -q '^npm ci --prefix tests/editors ' "$d/log"; then pass
  else fail "README set-up line without sudo (as root)"; echo "$line"; cat "$d/log"; fi
  printf '#!/bin/sh\necho "sudo $*" >> %s/log\n' "$d" > "$d/bin/sudo"; chmod +x "$d/bin/sudo"
  : > "$d/log"; PATH=$d/bin "$BASH" -c "$line" > /dev/null 2>&1
  if [ $? -eq 0 ] && grep -q '^sudo apt-get update$' "$d/log" && grep -q '^sudo apt-get install -y build-essential' "$d/log"
  then pass; else fail "README set-up line with sudo"; cat "$d/log"; fi
  if grep -q -F "grep -m1 '^\$(command -v sudo) apt-get update' README.md" .ci/run && grep -q '^eval "\$setup"$' .ci/run &&
     grep -q '^make test$' .ci/run && [ "$(grep -c apt-get .ci/run)" -eq 1 ]; then pass
  else fail ".ci/run does not run the README's set-up line and test command"; fi
}

# Outputs are written whole or not at all, with the OS's reason on failure; symbolic links
# are followed (the file they lead to is replaced, the link stays), character devices and
# FIFOs written through, directories refused; one failed output of a run does not lose the
# others, and the run exits 1.
outputs_layer() { # $1 = physc
  local p=$1 d
  d=$(mktemp -d "$tmp/outputs.XXXXXX") # fresh for each build the layers run on
  ln -s /dev/full "$d/full"
  expect "simulate --out /dev/full" 1 'cannot write /dev/full: No space left on device' -- \
    "$p" simulate --n 2 --steps 5 --out /dev/full examples/pendulum2.phys
  echo old > "$d/old.csv"
  expect "simulate --out over the file size limit" 1 "cannot write $d/old.csv: File too large" -- \
    bash -c 'trap "" XFSZ; ulimit -f 4; exec "$@"' limited "$p" simulate --n 2 --steps 100 --out "$d/old.csv" examples/pendulum2.phys
  if [ "$(cat "$d/old.csv")" = old ] && [ ! -e "$d/old.csv.tmp" ]; then pass
  else fail "a failed simulate --out left a partial CSV"; head -c 200 "$d/old.csv"; fi
  expect "emit-c through a link to /dev/full" 1 "cannot write $d/full: No space left on device" -- \
    "$p" emit-c examples/pendulum1.phys -o "$d/full"
  if [ -L "$d/full" ]; then pass; else fail "emit-c replaced a symbolic link to a device"; fi
  echo old > "$d/real.c"; ln -s real.c "$d/link.c"
  if "$p" emit-c examples/pendulum1.phys -o "$d/link.c" && [ -L "$d/link.c" ] && grep -q '^int main' "$d/real.c"; then pass
  else fail "emit-c -o LINK did not replace the file the link leads to"; ls -l "$d"; fi
  expect "emit-c -o DIR" 1 "cannot write $d: it is a directory" -- "$p" emit-c examples/pendulum1.phys -o "$d"
  ln -s nothing "$d/dangling"
  expect "emit-c -o a dangling link" 1 'symbolic link to a file that does not exist' -- \
    "$p" emit-c examples/pendulum1.phys -o "$d/dangling"
  expect "emit-c -o -" 0 '^int main\(int argc' -- "$p" emit-c examples/pendulum1.phys -o -
  mkfifo "$d/fifo"
  (timeout 20 cat "$d/fifo" > "$d/via-fifo") &
  local reader=$!
  "$p" emit-c examples/pendulum1.phys -o "$d/fifo"
  local rc=$?
  wait "$reader"
  if [ $rc -eq 0 ] && [ -p "$d/fifo" ] && grep -q '^int main' "$d/via-fifo"; then pass
  else fail "emit-c -o FIFO: not written through"; fi
  # a FIFO that nothing reads: refused after a bounded wait, not waited on forever
  mkfifo "$d/unread"
  expect_timeout=20 expect "emit-c -o a FIFO nothing reads" 1 'unread: it is a FIFO that no process reads' -- \
    "$p" emit-c examples/pendulum1.phys -o "$d/unread"
  # physc run: a checkpoint on a full disk; then metrics.json on a full disk
  local s=tests/run/small.phys
  mkdir -p "$d/ck" "$d/mj"
  ln -s /dev/full "$d/ck/checkpoint.bin"
  # (--force: the link reads as a truncated checkpoint, which a new run would refuse to replace)
  expect "run: checkpoint on a full disk" 1 "cannot write $d/ck/checkpoint.bin: No space left on device \(training goes on\)" -- \
    "$p" run --force --epochs 2 --out "$d/ck" "$s"
  if [ -s "$d/ck/params.bin" ] && [ -s "$d/ck/metrics.json" ] && [ -s "$d/ck/error.svg" ] && grep -q '1 output could not be written' "$tmp/o"
  then pass; else fail "run: a failed checkpoint lost the other outputs"; ls "$d/ck"; tail -3 "$tmp/o"; fi
  ln -s /dev/full "$d/mj/metrics.json"
  expect "run: metrics.json on a full disk" 1 "cannot write $d/mj/metrics.json: No space left on device" -- \
    "$p" run --epochs 2 --out "$d/mj" "$s"
  if [ -s "$d/mj/params.bin" ] && [ -s "$d/mj/errors.csv" ] && [ -s "$d/mj/trajectories.csv" ] && [ -s "$d/mj/rollout.svg" ]
  then pass; else fail "run: a failed metrics.json lost the other outputs"; ls "$d/mj"; fi
  # an unwritable folder (root writes anywhere: skipped)
  if [ "$(id -u)" != 0 ]; then
    mkdir -p "$d/ro" && chmod 500 "$d/ro"
    expect "simulate --out into a read-only folder" 1 "cannot write $d/ro/x.csv: Permission denied" -- \
      "$p" simulate --n 2 --steps 5 --out "$d/ro/x.csv" examples/pendulum2.phys
    chmod 700 "$d/ro"
  fi
}

# Sizes from the program or the flags that the machine cannot hold are refused up front with
# the size and what to reduce (exit 1), never a crash. Under an address-space limit of 8 GB
# (which the memory limit honours), so the sizes are too big on every machine; not under
# ASan, whose shadow memory needs more address space than that.
limits_layer() { # $1 = build dir
  local b=$1 s=tests/run/small.phys d=$tmp/limits
  mkdir -p "$d"
  local limited=(bash -c 'ulimit -v 8000000 && exec "$@"' limited)
  sed 's/steps 100$/steps 100000000/' "$s" > "$d/steps.phys"
  sed 's/hidden \[32, 32\]/hidden [65536, 65536]/' "$s" > "$d/hidden.phys"
  sed 's/train 64;/train 10000000;/' "$s" > "$d/train.phys"
  expect "simulate --steps 10^9" 1 'need 256\.0 GB of memory \(256000000256 bytes\), more than .*; reduce --steps or --n' -- \
    "${limited[@]}" "$b/physc" simulate --steps 1000000000 examples/pendulum2.phys
  expect "data steps 10^8" 1 'of 100000001 points of 4 numbers need [0-9.]+ GB of memory .*; reduce train, valid, test or steps' -- \
    "${limited[@]}" "$b/physc" run --out "$d/r" "$d/steps.phys"
  expect "hidden [65536, 65536]" 1 '4295294977 network parameters, .* need [0-9.]+ GB of memory .*; reduce the hidden widths' -- \
    "${limited[@]}" "$b/physc" run --out "$d/r" "$d/hidden.phys"
  expect "data train 10^7" 1 '10000000 \+ 16 \+ 16 trajectories .* need [0-9.]+ GB of memory .*; reduce train, valid, test or steps' -- \
    "${limited[@]}" "$b/physc" run --out "$d/r" "$d/train.phys"
  # a minibatch whose gradient's tape (37000 windows through 400 Lie T2 substeps, held in
  # segments of about 0.5 MB a window) would not fit: refused after a measured probe of 8
  # chunks, before training
  sed -e 's/  batch 64; loss l2; integrator liet2; precision f64/  batch 100000; loss l2; integrator liet2; precision f64; substeps 400/' \
    -e 's/train 16;/train 1000;/' tests/run/liet2.phys > "$d/batch.phys"
  expect "a minibatch too large for memory" 1 'a minibatch of 37000 chunks, held on the tape for its gradient \([0-9.]+ [KM]B a chunk, measured\), need [0-9.]+ GB of memory .*; reduce .batch.' -- \
    "${limited[@]}" "$b/physc" run --epochs 1 --out "$d/r" "$d/batch.phys"
  if "$b/physc" emit-c examples/pendulum2.phys -o "$d/p2.c" > "$tmp/err" 2>&1 &&
     cc -O2 -std=c17 -Iruntime "$d/p2.c" "$b/libphysrt.a" -lm -o "$d/p2" >> "$tmp/err" 2>&1; then
    expect "emitted --steps 10^9" 1 'need 256\.0 GB of memory .*; reduce --steps or --n' -- "${limited[@]}" "$d/p2" --steps 1000000000
  else fail "emit-c of pendulum2 does not build"; head -5 "$tmp/err"; fi
  # Large systems (docs/performance.md, "How large a system physc compiles"). A chain's
  # constraint graph is a path: its L D L^T has no fill-in and a 100-link chain compiles in
  # about a second and simulates with the examples' bounds. A hub, every
  # constraint on one body, has a dense Gram matrix: unrolled, its factorization grows as the
  # cube of the constraints, and 300 of them are refused at the instruction limit, quickly,
  # as is running out of memory; by default physc then compiles the loop form, which factors
  # it at run time, and simulates it.
  local n
  for n in 100; do
    { echo 'import "gravity"'
      echo "system chain$n {"
      echo '  dim 2'
      echo "  body bob[i in 1..$n] : point { mass 1 }"
      echo '  tether bob[1] to origin length 1'
      echo "  for i in 2..$n { link bob[i-1] to bob[i] length 1 }"
      echo "  potential gravity = sum(i in 1..$n, uniform_gravity(1, 9.81, bob[i].pos))"
      echo "  init { for i in 1..$n { bob[i].pos = [i, 0] + 0.1 * normal(0, 1, dim); bob[i].vel = normal(0, 1, dim) } }"
      echo '}'; } > "$d/chain$n.phys"
  done
  { echo 'import "gravity"'
    echo 'system hub300 {'
    echo '  dim 2'
    echo '  body hub : point { mass 1 }'
    echo '  body bob[i in 1..300] : point { mass 1 }'
    echo '  tether hub to origin length 1'
    echo '  for i in 1..300 { link hub to bob[i] length 1 }'
    echo '  potential gravity = sum(i in 1..300, uniform_gravity(1, 9.81, bob[i].pos))'
    echo '  init { hub.pos = [1, 0]; for i in 1..300 { bob[i].pos = [1 + cos(i), sin(i)]; bob[i].vel = normal(0, 1, dim) } }'
    echo '}'; } > "$d/hub300.phys"
  expect_timeout=60 expect "a 300-constraint hub is refused unrolled" 1 "too large to compile: its kernel Field passed the limit of 8000000 IR instructions .* constraints that share bodies.* loop form without this limit \(--kernels loop" -- \
    "${limited[@]}" "$b/physc" simulate --kernels unrolled --n 1 --steps 1 "$d/hub300.phys"
  expect_timeout=60 expect "a 300-constraint hub simulates in loop form" 0 'relative energy drift \(max\): [0-9.]+e-1[0-9]' -- \
    "${limited[@]}" "$b/physc" simulate --n 2 --steps 10 --dt 0.01 "$d/hub300.phys"
  grep -q -E 'constraint violation \(max \|Phi\|\): [0-9.]+e-1[0-9]' "$tmp/o" && pass ||
    { fail "a 300-constraint hub in loop form: constraint violation"; tail -3 "$tmp/o"; }
  # the compiler out of memory (400 MB of address space: LLVM and OpenBLAS take about 250 MB
  # of it, the hub's IR the rest): a message and exit 1, not an abort or a hang
  expect "the compiler out of memory" 1 'physc: out of memory: [0-9]+ bytes \([0-9.]+ GB\) while compiling' -- \
    bash -c 'ulimit -v 400000 && exec "$@"' limited "$b/physc" dump-ir "$d/hub300.phys"
  # the loop form's kernels shown: a chain's two row classes, whatever its length
  expect "dump-ir of the loop form" 0 '^kernel Row1\(inputs 8, params 0\) -> 9 outputs' -- \
    "$b/physc" dump-ir --kernels loop tests/run/chain30.phys
  [ "$(grep -c '^kernel Row' "$tmp/o")" = 2 ] && pass || { fail "dump-ir --kernels loop: not two row kernels"; grep '^kernel' "$tmp/o"; }
  # constraint independence past 512 rows is checked by a sparse L D L^T of the Gram matrix
  # (compiler/rank.c) instead of a dense Gram-Schmidt: a redundant tether after a 600-link
  # chain gets the message a small system gets (tests/errors/phys-redundant-constraint.phys)
  { echo 'import "gravity"'
    echo 'system chain600 {'
    echo '  dim 2'
    echo '  body bob[i in 1..600] : point { mass 1 }'
    echo '  tether bob[1] to origin length 1'
    echo '  for i in 2..600 { link bob[i-1] to bob[i] length 1 }'
    echo '  body rod : rigid1 { mass 1; moments [0.25] }'
    echo '  joint rod.at([-1]) to origin'
    echo '  tether rod.at([1]) to origin length 2'
    echo '  potential gravity = sum(i in 1..600, uniform_gravity(1, 9.81, bob[i].pos))'
    echo '  init { for i in 1..600 { bob[i].pos = [i, 0]; bob[i].vel = [0, 0] }; rod.pos = [1, 0] }'
    echo '}'; } > "$d/redundant600.phys"
  expect "a redundant tether among 600 rows" 1 'redundant600.phys:9:3: error: this tether is redundant \(it follows from the rigidity of rod and the joint at 8:3, at the first sampled initial state\)' -- \
    "$b/physc" check "$d/redundant600.phys"
  grep -v 'tether rod' "$d/redundant600.phys" > "$d/independent600.phys"
  expect "600 independent rows" 0 'degrees of freedom: +601' -- "$b/physc" check "$d/independent600.phys"
  # dopri5 at the examples' tolerances, RATTLE at a step its Newton iteration converges at
  # (the chain's random initial velocities whip its far end): energy and constraints held;
  # on a 1 MB stack (DPhi's 20,000 output rows, padded for its last block, are not on it)
  local how name flags drift viol small_stack=(bash -c 'ulimit -v 8000000 -s 1024 && exec "$@"' limited)
  for how in "dopri5:--steps 20:e-(0[6-9]|1[0-9]):e-(0[89]|1[0-9])" "rattle:--steps 100 --dt 0.001 --integrator rattle:e-(0[4-9]|1[0-9]):e-(1[0-9])"; do
    IFS=: read -r name flags drift viol <<< "$how"
    # shellcheck disable=SC2086 # flags are words
    expect_timeout=120 expect "a 100-link chain: $name" 0 "relative energy drift \(max\): [0-9.]+$drift" -- \
      "${small_stack[@]}" "$b/physc" simulate --n 2 $flags "$d/chain100.phys"
    grep -q -E "constraint violation \(max \|Phi\|\): [0-9.]+$viol" "$tmp/o" && pass ||
      { fail "a 100-link chain: $name: constraint violation"; tail -3 "$tmp/o"; }
  done
  # an 80-link chain whose init block stretches every link by 4 %: damped Newton alone stalls
  # (about 190 iterations a state), continuation from the sampled state projects it
  sed 's/30/80/g' tests/run/chain30.phys > "$d/chain80.phys"
  sed 's/^data {/data {\n  project nearest/' "$d/chain80.phys" > "$d/chain80-nearest.phys"
  local chain
  for chain in chain80 chain80-nearest; do
    expect_timeout=120 expect "projection of a stretched 80-link chain ($chain)" 0 'constraint violation \(max \|Phi\|\): [0-9.]+e-(09|1[0-9])' -- \
      "$b/physc" simulate --n 4 --steps 2 "$d/$chain.phys"
  done
  # a CHNN trains on a 30-link chain (tests/run/chain30.phys): its loss falls and its rollouts
  # keep the constraints
  expect_timeout=120 expect "run: a 30-link chain" 0 'constraint violation \|Phi\| +[0-9.]+e-(09|1[0-9]) \[' -- \
    "$b/physc" run --out "$d/chain30" tests/run/chain30.phys
  awk '/^epoch +1\// { first = $4 } /^epoch +30\// { last = $4 } END { exit !(first > 0 && last < 0.97 * first) }' "$tmp/o" &&
    pass || { fail "run: a 30-link chain: the training loss did not fall 3 %"; grep '^epoch' "$tmp/o" | sed -n '1p;$p'; }
  # the same in loop form (the system's data, projections and truth, and the CHNN's field,
  # trained through the loop form's reverse pass): the same losses and metrics to the digits
  # printed; the violation, rounding (5e-11), its mean but not its interval (a difference of
  # rounding-level numbers)
  local form
  for form in unrolled loop; do
    expect_timeout=120 expect "run --kernels $form: a 30-link chain" 0 '^epoch +3/3' -- \
      "$b/physc" run --kernels "$form" --epochs 3 --out "$d/chain30-$form" tests/run/chain30.phys
    grep -E '^epoch|relative state error|constraint violation' "$tmp/o" | sed 's/[0-9.]* s\/epoch.*//; s/\(|Phi| *[0-9.]*e-[0-9]*\).*/\1/' > "$d/chain30-$form.txt"
  done
  cmp -s "$d/chain30-unrolled.txt" "$d/chain30-loop.txt" && [ -s "$d/chain30-loop.txt" ] && pass ||
    { fail "run --kernels loop and unrolled differ on a 30-link chain"; diff "$d/chain30-unrolled.txt" "$d/chain30-loop.txt" | head -6; }
  # and a CLNN (Eq. 7's acceleration and its reverse pass in loop form)
  sed 's/^model chnn : chnn/model clnn : clnn/' tests/run/chain30.phys > "$d/chain30-clnn.phys"
  for form in unrolled loop; do
    expect_timeout=120 expect "run --kernels $form: a CLNN of a 30-link chain" 0 '^epoch +3/3' -- \
      "$b/physc" run --kernels "$form" --epochs 3 --out "$d/chain30-clnn-$form" "$d/chain30-clnn.phys"
    grep -E '^epoch|relative state error|constraint violation' "$tmp/o" | sed 's/[0-9.]* s\/epoch.*//; s/\(|Phi| *[0-9.]*e-[0-9]*\).*/\1/' > "$d/chain30-clnn-$form.txt"
  done
  cmp -s "$d/chain30-clnn-unrolled.txt" "$d/chain30-clnn-loop.txt" && [ -s "$d/chain30-clnn-loop.txt" ] && pass ||
    { fail "run --kernels loop and unrolled differ on a CLNN of a 30-link chain"; diff "$d/chain30-clnn-unrolled.txt" "$d/chain30-clnn-loop.txt" | head -6; }
  expect "run --kernels: a bad form" 2 'kernels takes auto, unrolled or loop' -- "$b/physc" run --kernels fast tests/run/chain30.phys
  # a CHNN of a 1000-link chain trains in loop form, the automatic choice from 512 rows (1.4 s
  # and 145 MB; its unrolled Field and FieldVJP took 22 s and 1.1 GB): the loss falls and the
  # rollouts keep the constraints
  sed -e 's/30/1000/g' -e 's/\[0\.3 \* i, -i\] + 0\.05/[0, -i] + 0.01/' tests/run/chain30.phys > "$d/chain1000-run.phys"
  expect_timeout=120 expect "run: a 1000-link chain" 0 'constraint violation \|Phi\| +[0-9.]+e-(09|1[0-9]) \[' -- \
    "$b/physc" run --epochs 2 --out "$d/chain1000" "$d/chain1000-run.phys"
  awk '/^epoch +1\// { first = $4 } /^epoch +2\// { last = $4 } END { exit !(first > 0 && last < first) }' "$tmp/o" &&
    pass || { fail "run: a 1000-link chain: the training loss did not fall"; grep '^epoch' "$tmp/o"; }
}

# The paper's baselines (tests/run/baselines.phys): each trains, evaluates and writes what a
# CHNN run writes; a run in two parts equals one; the rollouts, made in the angles and mapped
# to Cartesian states by the coordinate map, hold the constraints to rounding (the mean |Phi|
# is near 1e-16, reported as it is); the model's own energy, which every family but a NODE
# has, is what its field conserves: its variance along the rollouts is rounding too.
baselines_layer() { # $1 = physc
  local p=$1 s=tests/run/baselines.phys o=$tmp/baselines m
  # (in the angles the constraints hold to rounding; csonode's Cartesian rollouts keep them to dopri5's tolerance)
  for m in node hnn hnnknown lnn delan sonode csonode; do
    if "$p" run -q --epochs 2 --model "$m" --out "$o/$m" "$s" > "$tmp/out" 2>&1 &&
       for f in metrics.json trajectories.csv errors.csv params.bin loss.svg rollout.svg error.svg energy.svg; do
         [ -s "$o/$m/$f" ] || exit 1; done &&
       awk -F'[:,]' -v m="$m" '/"test_constraint_violation":/ { found = 1
         bad = !($2 + 0 > 0 && $2 + 0 < (m == "csonode" ? 1e-6 : 1e-13)) } END { exit !found || bad }' "$o/$m/metrics.json" &&
       awk -F'[:,]' -v m="$m" '/"test_model_energy_variance":/ { found = 1; v = $2
         bad = m ~ /node$/ ? v != " null" : !(v + 0 < 1e-12 && v ~ /[0-9]/) } END { exit !found || bad }' "$o/$m/metrics.json" &&
       grep -q '"model": "'"$m"'"' "$o/$m/metrics.json"; then pass
    else fail "run --model $m: no complete report"; head -5 "$tmp/out"; fi
  done
  for m in hnn lnn; do
    "$p" run -q --stop-after 1 --out "$o/$m-parts" --epochs 2 --model "$m" "$s" > /dev/null 2>&1
    if "$p" run -q --resume --out "$o/$m-parts" --epochs 2 --model "$m" "$s" > "$tmp/out" 2>&1 &&
       cmp -s "$o/$m/params.bin" "$o/$m-parts/params.bin"; then pass
    else fail "run --model $m: 2 epochs differ from 1 + --resume + 1"; head -5 "$tmp/out"; fi
  done
  # csonode with the Eq. 9 masses: the 2 bobs' masses after the network's 484 parameters, and reported
  sed 's/^model csonode : csonode { force F }/model csonode : csonode { force F; mass learned }/' "$s" > "$o/csonode-ml.phys"
  expect "csonode with mass learned" 0 'model csonode \(csonode\): MLP force 8-16-16-4 tanh f64, 486 parameters' -- \
    "$p" run --epochs 2 --model csonode --out "$o/csonode-ml" "$o/csonode-ml.phys"
  grep -q '"learned_masses": \[[0-9.]*, [0-9.]*\],' "$o/csonode-ml/metrics.json" && pass || fail "csonode: no learned masses in metrics.json"
  # what the checker refuses (a sonode learns no Eq. 9 masses: the kinds table), and what csonode's family
  # refuses, at the declaration's place
  sed 's/^model sonode : sonode { force Aq }/model sonode : sonode { force Aq; mass learned }/' "$s" > "$o/so-mass.phys"
  expect "sonode with mass learned" 1 "so-mass.phys:[0-9]+:[0-9]+: error: model sonode \(sonode\) learns no Eq. 9 masses" -- \
    "$p" check "$o/so-mass.phys"
  sed 's/input positions, velocities }/input state }/' "$s" > "$o/so-refused.phys"
  expect "csonode with a force of the state" 1 "so-refused.phys:[0-9]+:1: error: learned force 'F' must read the positions and velocities" -- \
    "$p" run --epochs 1 --model csonode --out "$o/e" "$o/so-refused.phys"
  expect "a model's own lr and epochs" 0 '3 epochs, batch 16, rk4_38, lr 0.002' -- "$p" run --model delan --out "$o/own" "$s"
  expect "a NODE's energy: none, in words" 0 "^  variance of the model's energy none: a NODE model has no energy of its own$" -- \
    "$p" simulate --model node --params "$o/node/params.bin" --n 2 --steps 5 "$s"
  expect "a baseline in f32" 1 'trains in f64 only so far' -- "$p" run -q --precision f32 --epochs 1 --model lnn --out "$o/f32" "$s"
  # no --model: the one model whose parameter count the file holds, else the candidates
  expect "simulate an lnn run's params without --model" 0 'model lnn.s \(not the first model.s, node\): using lnn' -- \
    "$p" simulate --params "$o/lnn/params.bin" --n 2 --steps 5 "$s"
  expect "simulate params two models could hold" 1 'as models hnn, delan do: pass --model NAME' -- \
    "$p" simulate --params "$o/hnn/params.bin" --n 2 --steps 5 "$s"
}

# The dtlnn family (the discrete-time Lagrangian paper) through every command, on the
# mass-spring of tests/run/dtlnn.phys (8 trajectories of 31 points, 1-16-16-1 networks, 60
# epochs of 8 steps): physc run for its five models, a run in parts, simulate and emit-c
# --params bit-identical, compare's second table, and what the family cannot take. Physics:
# Eq. 12 (proposed, leapfrog+proposed) conserves the model's own energy to rounding where the
# leapfrog does not; symplectic Euler predicts the leapfrog's positions (Eq. 17).
liet2_layer() { # $1 = build dir: the Lie T2 learner on a rigid planet (issue 18)
  local b=$1 p=$1/physc s=tests/run/liet2.phys o; o=$(mktemp -d "$tmp/liet2.XXXXXX")
  "$p" run -q --epochs 1 --out "$o/one" "$s" > /dev/null 2>&1
  expect "liet2: run" 0 'evaluation on 4 test trajectories, 40 steps \(liet2, 1 step an interval\)' -- "$p" run --out "$o/m" "$s"
  if grep -q -E '^model liet2 \(liet2\): MLP potential 15-32-32-1 silu f64, [0-9]+ parameters; 150 epochs, batch 64, liet2,' "$tmp/o" &&
     grep -q -E '^known terms alone \(no learned correction\): a training loss of [0-9.]+e-[0-9]+, [0-9.]+ x the floor' "$tmp/o" &&
     for f in metrics.json trajectories.csv errors.csv params.bin checkpoint.bin loss.svg rollout.svg error.svg energy.svg orbit.svg; do
       [ -s "$o/m/$f" ] || exit 1; done && grep -q '"kind": "liet2",' "$o/m/metrics.json"; then pass
  else fail "liet2: run's header or outputs"; head -4 "$tmp/o"; ls "$o/m"; fi
  # orbit.svg names its bodies and draws x and y to one scale (the orbit is not squashed)
  if grep -q '>planet about star (test trajectory 0; Fig. 1)</text>' "$o/m/orbit.svg" &&
     grep -q ">x of planet less star's (the program's length unit)</text>" "$o/m/orbit.svg"; then pass
  else fail "liet2: orbit.svg's bodies by name"; grep -o '>[^<]*</text>' "$o/m/orbit.svg" | head -4; fi
  # it starts as the known gravity alone ("no corrections") and learns the planet's quadrupole from there
  local var; var() { sed -n "s/.*\"$2\": \([^,]*\),/\1/p" "$o/$1/metrics.json"; }
  if awk -v a="$(var one test_geomean_rel_error)" -v b="$(var m test_geomean_rel_error)" 'BEGIN { exit !(b > 0 && b < 0.8 * a) }'
  then pass; else fail "liet2: training does not lower the test error ($(var one test_geomean_rel_error) -> $(var m test_geomean_rel_error))"; fi
  # the paper's App. E metrics: the learned rotation error and torque residual well below no correction's
  if awk -v a="$(var one test_so3_dR)" -v b="$(var m test_so3_dR)" -v c="$(var one test_so3_dVR)" -v d="$(var m test_so3_dVR)" \
       'BEGIN { exit !(b > 0 && b < 0.5 * a && d > 0 && d < 0.8 * c) }' &&
     grep -q -E '"test_so3_dq": [0-9.e+-]+,' "$o/m/metrics.json" && grep -q -E '"test_so3_dPidot": [0-9.e+-]+,' "$o/m/metrics.json"
  then pass; else fail "liet2: App. E metrics missing or not improved by training"; grep so3 "$o/one/metrics.json" "$o/m/metrics.json"; fi
  # each run evaluates the known terms alone on its test rollouts too: the same figures after 1 epoch as after 150,
  # above the trained model's
  if [ -n "$(var m known_terms_alone_test_so3_dR)" ] && [ "$(var one known_terms_alone_test_so3_dR)" = "$(var m known_terms_alone_test_so3_dR)" ] &&
     [ "$(var one known_terms_alone_test_so3_dq)" = "$(var m known_terms_alone_test_so3_dq)" ] &&
     awk -v a="$(var m known_terms_alone_test_so3_dR)" -v b="$(var m test_so3_dR)" 'BEGIN { exit !(b > 0 && b < 0.5 * a) }' &&
     grep -q -E '^  \|dR\| geodesic \(rollout\) +[0-9.]+e[+-][0-9]+ +[0-9.]+ x the trained model.s$' "$tmp/o"
  then pass; else fail "liet2: the known terms alone are not evaluated beside the model"; grep known_terms "$o/one/metrics.json" "$o/m/metrics.json"; fi
  metric_keys "liet2: run" "$b" "$o/m/metrics.json" so3 known
  # the metrics by body: the one rigid body's are the totals; without a correction the torque's error is the true
  # residual torque itself, and training lowers it
  local arr; arr() { var "$1" "$2" | tr -d '[]'; }
  if [ -n "$(arr m test_so3_dR_by_body)" ] && [ "$(arr m test_so3_dR_by_body)" = "$(var m test_so3_dR)" ] &&
     [ "$(arr m known_terms_alone_test_so3_dR_by_body)" = "$(var m known_terms_alone_test_so3_dR)" ] &&
     [ "$(arr m known_terms_alone_test_so3_dtau_by_body)" = "$(arr m known_terms_alone_test_so3_tau_by_body)" ] &&
     awk -v a="$(arr m known_terms_alone_test_so3_dtau_by_body)" -v b="$(arr m test_so3_dtau_by_body)" 'BEGIN { exit !(b > 0 && b < 0.8 * a) }' &&
     grep -q '"test_so3_bodies": \["planet"\],' "$o/m/metrics.json"
  then pass; else fail "liet2: the metrics by body are not the totals' for one body"; grep by_body "$o/m/metrics.json"; fi
  # the means of squares beside the means: each at least its mean squared (Jensen; equal only for a constant error),
  # and the rotations' lowered by training as the mean's is
  if awk -v q="$(var m test_so3_dq)" -v qs="$(var m test_so3_dq_sq)" -v r="$(var m test_so3_dR)" -v rs="$(var m test_so3_dR_sq)" \
         -v p="$(var m test_so3_dpdot)" -v ps="$(var m test_so3_dpdot_sq)" -v k="$(var m known_terms_alone_test_so3_dR_sq)" \
       'BEGIN { exit !(qs > q * q && rs > r * r && ps > p * p && q > 0 && r > 0 && p > 0 && rs < 0.25 * k) }'
  then pass; else fail "liet2: the App. E means of squares"; grep _sq "$o/m/metrics.json"; fi
  # every phase of a run that may take long shows its progress, the same line for each (on a terminal, redrawn from
  # the start; TRAPPIST-1's took 18 to 57 s each in silence): the data, the losses over the training set, each epoch's
  # training and validation, the evaluation
  sed 's/batch 64; loss l2;/batch 64; loss l2; loss_weights balanced;/' "$s" > "$o/balanced.phys"
  script -qec "$p run --model own --epochs 2 --out $o/prog $o/balanced.phys" "$o/prog.log" > /dev/null 2>&1
  tr '\r' '\n' < "$o/prog.log" | sed 's/\x1b\[K//g' > "$o/prog.txt"
  local phase missing=""
  for phase in 'data: train trajectories' 'sizes from the training data' 'loss weights: the known terms alone on the training data' \
      'integrator floor: the system.s own dynamics on the training data' 'the loss without the learned terms on the training data' \
      'the integrator floor by state group' 'the known terms alone by state group' \
      'validation error of the known terms alone' 'epoch 1/2: training' 'epoch 1/2: validation' \
      'epoch 2/2 \(loss [0-9.]+e[+-][0-9]+, ETA [0-9hms?]+\): training' 'validation error by group' \
      'training error by state group: the trained model' 'training error by state group: the known terms alone' \
      'evaluation: model rollouts' 'evaluation: the known terms. rollouts'; do
    grep -q -E "^$phase, [0-9]+% in [0-9]+ s\$" "$o/prog.txt" || missing="$missing [$phase]"
  done
  if [ -z "$missing" ] && grep -q '^wrote ' "$o/prog.txt"; then pass; else fail "liet2: phases without a progress line:$missing"; fi
  expect "liet2: a learned force too" 0 'model forced \(liet2\): MLP potential 15-32-32-1 and force 24-16-9 silu' -- "$p" run --model forced --out "$o/f" "$s"
  # in f32 both networks' passes are sgemm (the force's VJP included): it learns as the f64 run does
  expect "liet2: a learned force in f32" 0 'model forced \(liet2\): MLP potential 15-32-32-1 and force 24-16-9 silu f32' -- \
    "$p" run --model forced --precision f32 --out "$o/f32" "$s"
  if awk -v a="$(var one test_geomean_rel_error)" -v b="$(var f test_geomean_rel_error)" -v c="$(var f32 test_geomean_rel_error)" \
       'BEGIN { exit !(c > 0 && c < 0.8 * a && c < 1.1 * b && b < 1.1 * c) }'
  then pass; else fail "liet2: the f32 force model does not learn as the f64 one ($(var one test_geomean_rel_error) -> f64 $(var f test_geomean_rel_error), f32 $(var f32 test_geomean_rel_error))"; fi
  # a run in two parts equals one run
  "$p" run -q --stop-after 60 --out "$o/parts" "$s" > /dev/null 2>&1
  expect "liet2: run --resume" 0 'trained 90 epochs' -- "$p" run --resume --out "$o/parts" "$s"
  if cmp -s "$o/m/params.bin" "$o/parts/params.bin"; then pass; else fail "liet2: 150 epochs differ from 60 + --resume + 90"; fi
  # the trained model, rolled out by simulate --params and by an emitted program: the same numbers
  if "$p" simulate --model liet2 --params "$o/m/params.bin" --n 2 --steps 30 --out "$o/sim.csv" "$s" > /dev/null &&
     "$p" emit-c --model liet2 --params "$o/m/params.bin" -o "$o/m.c" "$s" > /dev/null &&
     cc -O2 -std=c17 -Iruntime "$o/m.c" "$b/libphysrt.a" -lopenblas -lm -o "$o/m.bin" &&
     "$o/m.bin" --n 2 --steps 30 --out "$o/emit.csv" > /dev/null && cmp -s "$o/sim.csv" "$o/emit.csv"; then pass
  else fail "liet2: simulate --params and the emitted program differ"; fi
  # a force of velocities and angular velocities in the orbit's units, beside three potentials: trains, and emit-c rolls
  # it out alike
  expect "liet2: a force of velocities" 0 'model forced_v \(liet2\): MLP potential 6-16-1 and potential 15-32-32-1 and potential 3-16-1 and force 24-16-9 silu' -- \
    "$p" run --model forced_v --epochs 20 --out "$o/fv" "$s"
  if "$p" simulate --model forced_v --params "$o/fv/params.bin" --n 2 --steps 30 --out "$o/simv.csv" "$s" > /dev/null &&
     "$p" emit-c --model forced_v --params "$o/fv/params.bin" -o "$o/fv.c" "$s" > /dev/null &&
     cc -O2 -std=c17 -Iruntime "$o/fv.c" "$b/libphysrt.a" -lopenblas -lm -o "$o/fv.bin" &&
     "$o/fv.bin" --n 2 --steps 30 --out "$o/emitv.csv" > /dev/null && cmp -s "$o/simv.csv" "$o/emitv.csv"; then pass
  else fail "liet2: a force of velocities: simulate --params and the emitted program differ"; fi
  # a term per body and per rigid body (own_centres, own_frame): their gains start at the force and the torque the
  # known terms miss; it learns the spins, and emit-c rolls it out as simulate --params does
  expect "liet2: a term per rigid body" 0 'model own \(liet2\): MLP potential 5-16-1 and potential 4-16-1 silu' -- \
    "$p" run --model own --epochs 30 --out "$o/own" "$s"
  if grep -q -E '^training error by state group, trained / known terms alone: .*rotations 0\.[0-4]' "$tmp/o"; then pass
  else fail "liet2: the term per rigid body does not learn the rotations"; grep '^training error by state group' "$tmp/o"; fi
  if "$p" simulate --model own --params "$o/own/params.bin" --n 2 --steps 30 --out "$o/simo.csv" "$s" > /dev/null &&
     "$p" emit-c --model own --params "$o/own/params.bin" -o "$o/own.c" "$s" > /dev/null &&
     cc -O2 -std=c17 -Iruntime "$o/own.c" "$b/libphysrt.a" -lopenblas -lm -o "$o/own.bin" &&
     "$o/own.bin" --n 2 --steps 30 --out "$o/emito.csv" > /dev/null && cmp -s "$o/simo.csv" "$o/emito.csv"; then pass
  else fail "liet2: a term per rigid body: simulate --params and the emitted program differ"; fi
  # RK4 cannot follow TRAPPIST-1's spins at 4 steps an interval over windows of 4 intervals: the floor is said to
  # diverge, not printed as NaN
  sed -e 's/train 26; valid 6; test 6;/train 2; valid 1; test 1;/' -e 's/; chunk 3//' examples/trappist1.phys > "$o/t1.phys"
  # (the test rollout, from one trajectory's first point, stays finite: exit 0)
  expect_timeout=120 expect "liet2: an integrator floor that diverges" 0 'integrator floor: none: the system.s own dynamics under rk4 \(4 steps per interval\) diverge' -- \
    "$p" run --model rk4 --set H=4 --epochs 1 --out "$o/t1" "$o/t1.phys"
  if ! grep -E '^(integrator floor|known terms|final training loss)' "$tmp/o" | grep -q -i 'nan'; then pass
  else fail "liet2: a NaN printed for the diverging floor"; grep -i nan "$tmp/o"; fi
  # eight rigid bodies: the metrics by body, the known terms' beside them
  if grep -q '^by body: rollout means of |dq| and the geodesic dR (the known terms alone.s beside them)' "$tmp/o" &&
     [ "$(grep -c -E '^  (star|planet\[[1-7]\]) +[0-9.]+e[+-][0-9]+ ' "$tmp/o")" = 8 ]; then pass
  else fail "liet2: no table by body for TRAPPIST-1"; grep -A10 '^by body' "$tmp/o"; fi
  # a balanced loss's groups, each against the known terms alone, as training goes (here its one epoch)
  if grep -q -E '^  validation error by group, against the known terms alone: positions [0-9.e+-]+, rotations [0-9.e+-]+, momenta' "$tmp/o"
  then pass; else fail "liet2: no validation error by group while training"; grep -A1 '^epoch' "$tmp/o" | head -4; fi
  # simulate steps the data block's solver as the data are made (`solver liet2; substeps 240`: GRIT's step), and
  # the emitted program too; one step per 2.4e-3 yr interval is what --substeps 1 asks for
  if "$p" simulate --n 1 --steps 2 --out "$o/sim240.csv" "$o/t1.phys" > "$o/sim240.txt" &&
     grep -q 'liet2, 240 steps per interval' "$o/sim240.txt" && "$p" simulate --n 1 --steps 2 --substeps 1 "$o/t1.phys" > "$o/sim1.txt" &&
     grep -q 'liet2, one step per interval' "$o/sim1.txt" &&
     awk '/relative energy drift/ { d[FILENAME] = $NF } END { exit !(d[ARGV[1]] < 1e-6 && d[ARGV[2]] > 1e-3) }' "$o/sim240.txt" "$o/sim1.txt" &&
     "$p" emit-c -o "$o/t1.c" "$o/t1.phys" > /dev/null && cc -O2 -std=c17 -Iruntime "$o/t1.c" "$b/libphysrt.a" -lopenblas -lm -o "$o/t1.bin" &&
     "$o/t1.bin" --n 1 --steps 2 --out "$o/emit240.csv" > /dev/null && cmp -s "$o/sim240.csv" "$o/emit240.csv"; then pass
  else fail "liet2: simulate or the emitted program does not step the data block's substeps"; cat "$o/sim240.txt" "$o/sim1.txt"; fi
  expect "simulate --substeps 0" 2 "bad value '0' for --substeps" -- "$p" simulate --substeps 0 "$o/t1.phys"
  expect "simulate --substeps with dopri5" 2 "substeps is for fixed-step integrators; dopri5 chooses its own steps" -- \
    "$p" simulate --n 1 --steps 1 --substeps 5 --integrator dopri5 "$s"
  # the paper's integrator comparison: compare prints its App. E table
  expect "liet2: compare" 0 '^model +\|dq\| +\|dR\| +\|dpdot\| +\|dPidot\| +\|dV_q\| +\|dV_R\| \(Lie T2 paper App. E' -- \
    "$p" compare --models liet2,forced --epochs 5 --out "$o/cmp" "$s"
  if grep -q '"so3_dR": [0-9]' "$o/cmp/comparison.json" && grep -q '"so3_dq_sq": [0-9]' "$o/cmp/comparison.json" &&
     grep -q '"known_terms_so3_dR_sq": [0-9]' "$o/cmp/comparison.json" &&
     grep -q -E '^model +\|dq\|\^2 +\|dR\|\^2 +\|dpdot\|\^2 +\|dPidot\|\^2 \(means of squares\)' "$tmp/o"; then pass
  else fail "liet2: comparison.json or compare's table without the App. E means (and their squares)"; fi
  # Figure 3: the rotations' distance from SO(3) over time, in the run's violation (Lie T2: rounding)
  if grep -q 'SO(3) manifold error' "$o/cmp/fig3-manifold-error.svg" 2>/dev/null &&
     awk -F, 'NR > 1 && $5 > 1e-13 { bad = 1 } END { exit bad }' "$o/m/errors.csv"; then pass
  else fail "liet2: no fig3-manifold-error.svg, or a Lie T2 rollout off SO(3)"; fi
  # a system's force blocks are what a liet2 model's force network learns; other families refuse them
  sed 's/^  potential elastic = /  force drag { bob.force -= 0.1 * bob.vel }\n  potential elastic = /' examples/massspring.phys > "$o/drag.phys"
  expect "force blocks refused by a chnn" 1 "drag.phys:[0-9]+:[0-9]+: error: model 'chnn' \\(chnn\\): the system has .force. blocks, which only a liet2 model learns" -- \
    "$p" run --model chnn --out "$o/e" "$o/drag.phys"
  # what a liet2 model does not take
  sed 's/integrator liet2;/integrator discrete_gradient;/' "$s" > "$o/dg.phys"
  expect "liet2: the paper's six blocks only" 1 "dg.phys:45:1: error: model liet2 \\(liet2\\) trains through one of: liet2, lie_rk2, lie_rk4, verlet, rk4, euler; the train block's integrator is discrete_gradient" -- "$p" check "$o/dg.phys"
  sed 's/input state }/input state; scale 1e-3 }/' "$s" > "$o/scaled.phys"
  expect "liet2: a scaled force" 0 'trained 150 epochs' -- "$p" run --model forced --out "$o/scaled" "$o/scaled.phys"
  sed 's/activation tanh; input positions }/activation tanh; input positions; scale 2 }/' tests/run/small.phys > "$o/scale-chnn.phys"
  expect "a scale on a chnn's potential: refused" 1 "scale-chnn.phys:[0-9]+:[0-9]+: error: learned term 'V': .scale. is for liet2 models so far" -- "$p" run --out "$o/e" "$o/scale-chnn.phys"
  sed "s/activation tanh; input positions }/activation tanh; input positions; length_scale 2 }/" tests/run/small.phys > "$o/length-chnn.phys"
  expect "a length_scale on a chnn's potential: refused" 1 "length-chnn.phys:[0-9]+:[0-9]+: error: learned term .V.: .length_scale. is for liet2 models so far" -- "$p" run --out "$o/e" "$o/length-chnn.phys"
  sed "0,/length_scale a }/s//length_scale 0 }/" "$s" > "$o/length0.phys"
  expect "liet2: a zero length_scale" 1 "length0.phys:[0-9]+:[0-9]+: error: .*length_scale" -- "$p" check "$o/length0.phys"
  # data made by the model's own step (as the Lie T2 paper's GRIT made its data): the truth
  # under the same steps reproduces them to rounding
  sed 's/solver dopri5; rtol 1e-10; atol 1e-14;/solver liet2; substeps 2;/; s/^train {/train {\n  substeps 2/' "$s" > "$o/liet2-data.phys"
  expect "liet2: data by liet2 at the model's step" 0 'reach a training loss of [0-9.]+e-(2[6-9]|3[0-9])' -- \
    "$p" run --epochs 1 --out "$o/liet2-data" "$o/liet2-data.phys"
  grep -q '^data: liet2, 2 steps of dt / 2 per interval, from seed 0' "$tmp/o" && pass || fail "liet2: the data line does not name its solver"
  sed 's/solver dopri5;/solver dopri5; substeps 3;/' "$s" > "$o/dopri5-substeps.phys"
  expect "dopri5 data with substeps: refused" 1 "dopri5-substeps.phys:[0-9]+:[0-9]+: error: dopri5 chooses its own steps" -- \
    "$p" run --out "$o/e" "$o/dopri5-substeps.phys"
  sed 's/solver dopri5;/solver liet2;/' tests/run/small.phys > "$o/liet2-constrained.phys"
  expect "liet2 data on a constrained system: refused" 1 "the data's solver liet2 cannot step this system \\(it ignores constraints" -- \
    "$p" run --out "$o/e" "$o/liet2-constrained.phys"
  sed 's/length_scale a; time_scale 3e-4 }/length_scale 1e-300; time_scale 1e300 }/' "$s" > "$o/units.phys"
  expect "liet2: units that overflow the inputs" 1 "units.phys:[0-9]+:[0-9]+: error: a network's length scale 1e-300 and time scale 1e\\+300 make an input factor of inf" -- \
    "$p" run --model forced_v --out "$o/e" "$o/units.phys"
  # balanced loss weights: the known terms alone score 1; other families refuse them
  sed 's/^train {/train {\n  loss_weights balanced/' "$s" > "$o/balanced.phys"
  expect "liet2: balanced loss weights" 0 'known terms alone \(no learned correction\): a training loss of 1.000e\+00' -- \
    "$p" run --epochs 3 --out "$o/balanced" "$o/balanced.phys"
  grep -q -E '^training error by state group, trained / known terms alone: positions [0-9.e+-]+ \(.*, rotations .*, momenta .*, angular momenta [0-9.e+-]+ \(' "$tmp/o" \
    && pass || fail "liet2: no training error by state group"
  # the floor by group: the true dynamics under the model's step miss the rotations by far less
  # than the known terms (which miss the torques), the orbits by most of what the known terms do
  grep -q -E '^  by state group, floor / known terms alone: positions 0\.[5-9][0-9]* \(.*, rotations 0\.0[0-9]* \(.*, momenta .*, angular momenta 0\.0[0-9]* \(' "$tmp/o" \
    && pass || fail "liet2: the integrator floor by state group"
  sed 's/^train {/train {\n  loss_weights balanced/' tests/run/small.phys > "$o/balanced-chnn.phys"
  expect "balanced loss weights on a chnn: refused" 1 "loss_weights balanced is for liet2 models so far" -- "$p" run --out "$o/e" "$o/balanced-chnn.phys"
}

dtlnn_layer() { # $1 = build dir
  local b=$1 p=$1/physc s=tests/run/dtlnn.phys o m f; o=$(mktemp -d "$tmp/dtlnn.XXXXXX")
  expect "dtlnn: run proposed" 0 'evaluation on 4 test trajectories, 30 steps \(discrete_gradient from the first 2 positions\)' -- \
    "$p" run --out "$o/proposed" --save-data "$o/data" "$s"
  if grep -q '8 train trajectories (all 232 windows of 3 points), 2 valid, 4 test of 31 points' "$tmp/o" &&
     grep -q "^scheme: trained through discrete_gradient on every window of 3 consecutive observed points; predicts with discrete_gradient (Newton's method, to steps below 1e-13 of 1 + |q|) from each test trajectory's first 2 positions$" "$tmp/o" &&
     grep -q -E "^integrator floor: .* under discrete_gradient reach a training loss of [0-9.]+e-0[0-9] \(with the data's noise\); the true V's discrete gradient taken as grad V at the midpoint" "$tmp/o" &&
     grep -q -F "use the model: physc simulate $s --model proposed --params $o/proposed/params.bin" "$tmp/o"; then pass
  else fail "dtlnn: run proposed's header (windows, scheme, prediction step, floor)"; head -6 "$tmp/o"; fi
  for m in euler symplectic_euler leapfrog leapfrog_proposed; do
    "$p" run -q --model "$m" --out "$o/$m" "$s" > "$tmp/out" 2>&1 || { fail "dtlnn: run --model $m"; head -5 "$tmp/out"; }
  done
  # every model's report, with the paper's metrics; the proposed model learns the spring
  # (an untrained one is 50 % off) and conserves its energy to rounding
  for m in proposed euler symplectic_euler leapfrog leapfrog_proposed; do
    if for f in metrics.json trajectories.csv errors.csv params.bin checkpoint.bin loss.svg rollout.svg error.svg energy.svg; do
         [ -s "$o/$m/$f" ] || exit 1; done &&
       grep -q '"model": "'"$m"'",' "$o/$m/metrics.json" && grep -q '"kind": "dtlnn",' "$o/$m/metrics.json" &&
       grep -q '"train_trajectories": 8,' "$o/$m/metrics.json" && grep -q '"rollout_failed": false,' "$o/$m/metrics.json" &&
       grep -q -E '"test_position_mse": [0-9.e+-]+,' "$o/$m/metrics.json" && grep -q -E '"test_energy_mse": [0-9.e+-]+,' "$o/$m/metrics.json" &&
       grep -q -E '"test_model_energy_variance": [0-9.e+-]+,' "$o/$m/metrics.json"; then pass
    else fail "dtlnn: run --model $m: no complete report"; ls "$o/$m"; fi
  done
  local var; var() { sed -n "s/.*\"$2\": \([^,]*\),/\1/p" "$o/$1/metrics.json"; }
  if awk -v e="$(var proposed test_geomean_rel_error)" -v v="$(var proposed test_model_energy_variance)" \
       -v lp="$(var leapfrog_proposed test_model_energy_variance)" -v l="$(var leapfrog test_model_energy_variance)" \
       'BEGIN { exit !(e < 5e-2 && v < 1e-20 && lp < 1e-20 && l > 1e-12) }'; then pass
  else fail "dtlnn: the proposed model's error or the energy variances (Eq. 12 to rounding, the leapfrog not)"; grep -h 'rel_error"\|variance' "$o"/*/metrics.json; fi
  # Eq. 12 conserves the modelled energy exactly at any step, up to Newton's tolerance: at
  # 2.5 times the trained step, where Newton has more to do, the variance stays at rounding
  # (about 1e-30; a tolerance of 1e-4 instead of 1e-13 leaves 1e-17)
  local mev
  for m in proposed leapfrog_proposed; do
    "$p" simulate --model "$m" --params "$o/$m/params.bin" --n 8 --steps 30 --dt 0.5 "$s" > "$tmp/out" 2>&1
    mev=$(sed -n "s/^  variance of the model's energy *//p" "$tmp/out")
    if awk -v v="$mev" 'BEGIN { exit !(v != "" && v + 0 < 1e-26) }'; then pass
    else fail "dtlnn: $m at dt 0.5: the variance of the model's energy ${mev:-missing} is not at rounding (< 1e-26)"; tail -3 "$tmp/out"; fi
  done
  # --precision f32: the network's passes in float, in training and in prediction, Newton to
  # 1e-6 (not to double's 1e-13, which float rounding would not let it reach), the rollout's
  # positions rounded to float each step: the same fit as
  # f64 to a per cent, and the modelled energy conserved to float rounding (about 5e-14 here;
  # the paper's Table 3 is an f32 figure), not double's; simulate --precision f32 reproduces
  # the run's figures, and without it (the program's f64) predicts at double's rounding
  expect "dtlnn: run --precision f32" 0 "predicts with discrete_gradient \(Newton's method, to steps below 1e-06 of 1 \+ \|q\|\)" -- \
    "$p" run --precision f32 --out "$o/f32" "$s"
  if grep -q -F "use the model: physc simulate $s --model proposed --params $o/f32/params.bin --precision f32;" "$tmp/o" &&
     grep -q '"precision": "f32"' "$o/f32/metrics.json" &&
     awk -v e="$(var f32 test_geomean_rel_error)" -v e64="$(var proposed test_geomean_rel_error)" -v v="$(var f32 test_model_energy_variance)" \
       'BEGIN { exit !(e > 0.99 * e64 && e < 1.01 * e64 && v > 1e-20 && v < 1e-11) }'; then pass
  else fail "dtlnn: f32's error or energy variance (float rounding expected)"; grep -h 'rel_error"\|variance' "$o/f32/metrics.json"; fi
  local g32 v32; g32=$(awk -v g="$(var f32 test_geomean_rel_error)" 'BEGIN { printf "%.3e", g }')
  v32=$(awk -v g="$(var f32 test_model_energy_variance)" 'BEGIN { printf "%.3e", g }')
  expect "dtlnn: simulate --precision f32" 0 "^  variance of the model's energy +$v32$" -- \
    "$p" simulate --model proposed --params "$o/f32/params.bin" --precision f32 --from "$o/data/test.csv" "$s"
  if grep -q -E "^  relative state error +$g32 " "$tmp/o"; then pass; else fail "dtlnn: simulate --precision f32 differs from the run"; fi
  # an f32 rollout holds its positions in float (as a float32 program does), an f64 one not
  "$p" simulate -q --model proposed --params "$o/f32/params.bin" --precision f32 --from "$o/data/test.csv" --out "$o/f32.csv" "$s"
  "$p" simulate -q --model proposed --params "$o/f32/params.bin" --precision f64 --from "$o/data/test.csv" --out "$o/f64.csv" "$s"
  if /usr/bin/python3 -c 'import numpy as np, sys
x = [np.loadtxt(f, delimiter=",", skiprows=1)[:, 2] for f in sys.argv[1:]]
sys.exit(not (len(x[0]) == 124 and np.all(np.float32(x[0]) == x[0]) and np.mean(np.float32(x[1]) != x[1]) > 0.9))' "$o/f32.csv" "$o/f64.csv"
  then pass; else fail "dtlnn: an f32 rollout's positions are not float, or an f64 one's are"; fi
  # emit-c --precision f32: the emitted program predicts in float, as simulate --precision f32
  if "$p" emit-c -q --model proposed --params "$o/f32/params.bin" --precision f32 -o "$o/p32.c" "$s" > "$tmp/err" 2>&1 &&
     cc -O2 -std=c17 -Iruntime "$o/p32.c" "$b/libphysrt.a" -lopenblas -lm -o "$o/p32.bin" >> "$tmp/err" 2>&1 &&
     "$o/p32.bin" --n 3 --steps 20 --out "$o/p32.c.csv" > /dev/null 2>&1 &&
     "$p" simulate -q --model proposed --params "$o/f32/params.bin" --precision f32 --n 3 --steps 20 --out "$o/p32.jit.csv" "$s" &&
     "$p" simulate -q --model proposed --params "$o/f32/params.bin" --precision f64 --n 3 --steps 20 --out "$o/p64.jit.csv" "$s" &&
     cmp -s "$o/p32.c.csv" "$o/p32.jit.csv" && ! cmp -s "$o/p32.c.csv" "$o/p64.jit.csv"; then pass
  else fail "dtlnn: emit-c --precision f32 does not predict as simulate --precision f32"; head -5 "$tmp/err"; fi
  expect "dtlnn: simulate an f32 model in f64" 0 "^  variance of the model's energy +[0-9.]+e-(2[1-9]|3[0-9])$" -- \
    "$p" simulate --model proposed --params "$o/f32/params.bin" --from "$o/data/test.csv" "$s"
  expect "dtlnn: simulate --precision without --params" 2 "give --params too" -- "$p" simulate --precision f32 "$s"
  if [ -n "$(var leapfrog test_position_mse)" ] && [ "$(var leapfrog test_position_mse)" = "$(var symplectic_euler test_position_mse)" ] &&
     [ "$(var leapfrog test_energy_mse)" != "$(var symplectic_euler test_energy_mse)" ]; then pass
  else fail "dtlnn: symplectic Euler does not predict the leapfrog's positions with other velocities"; fi
  # a model that trains as another (leapfrog + proposed as the leapfrog) takes its finished
  # training and only evaluates: the same parameters and figures as training it again
  expect "dtlnn: run --trained-by" 0 'training: that of .*/leapfrog \(the same training; leapfrog_proposed predicts with discrete_gradient\)' -- \
    "$p" run --model leapfrog_proposed --trained-by "$o/leapfrog" --out "$o/lfp-by" "$s"
  if cmp -s "$o/leapfrog_proposed/params.bin" "$o/lfp-by/params.bin" && [ -n "$(var lfp-by test_position_mse)" ] &&
     [ "$(var leapfrog_proposed test_position_mse)" = "$(var lfp-by test_position_mse)" ] &&
     [ "$(var leapfrog_proposed test_model_energy_variance)" = "$(var lfp-by test_model_energy_variance)" ]; then pass
  else fail "dtlnn: --trained-by differs from training leapfrog_proposed itself"; fi
  expect "dtlnn: --trained-by a run that trains otherwise" 1 "--trained-by: .*/proposed's model proposed does not train as leapfrog_proposed" -- \
    "$p" run --model leapfrog_proposed --trained-by "$o/proposed" --out "$o/lfp-no" "$s"
  # a run in two parts, and one stopped by Ctrl-C and resumed, equal one run
  "$p" run -q --stop-after 25 --out "$o/parts" "$s" > /dev/null 2>&1
  expect "dtlnn: run --resume" 0 'trained 35 epochs' -- "$p" run --resume --out "$o/parts" "$s"
  if cmp -s "$o/proposed/params.bin" "$o/parts/params.bin"; then pass; else fail "dtlnn: 60 epochs differ from 25 + --resume + 35"; fi
  "$p" run --epochs 100000 --out "$o/int" "$s" > "$o/int.log" 2>&1 & local pid=$!
  local i; for i in $(seq 600); do grep -q '^epoch' "$o/int.log" 2> /dev/null && break; sleep 0.1; done
  kill -INT $pid; wait $pid; local rc=$? k; k=$(sed -n 's/.*stopped after epoch \([0-9]*\) of 100000 (interrupted).*/\1/p' "$o/int.log")
  # (a constant learning rate: a run of k + 5 epochs is the interrupted one's first k + 5)
  if [ $rc -eq 130 ] && [ -n "$k" ] && "$p" run -q --resume --epochs $((k + 5)) --out "$o/int" "$s" > /dev/null 2>&1 &&
     "$p" run -q --epochs $((k + 5)) --out "$o/int-whole" "$s" > /dev/null 2>&1 && cmp -s "$o/int/params.bin" "$o/int-whole/params.bin"
  then pass; else fail "dtlnn: Ctrl-C (exit $rc at epoch $k) + --resume differs from one run"; tail -2 "$o/int.log"; fi
  # the scheme, the prediction step and M are the model's: a checkpoint of another is refused
  "$p" run -q --stop-after 2 --out "$o/fp" "$s" > /dev/null 2>&1
  sed 's/^model proposed : dtlnn { potential V; mass identity; integrator discrete_gradient }/model proposed : dtlnn { potential V; mass identity; integrator leapfrog }/' "$s" > "$o/fp-int.phys"
  sed 's/^model proposed : dtlnn { potential V; mass identity; integrator discrete_gradient }/model proposed : dtlnn { potential V; mass identity; integrator discrete_gradient; predict leapfrog }/' "$s" > "$o/fp-pred.phys"
  sed 's/^model proposed : dtlnn { potential V; mass identity;/model proposed : dtlnn { potential V; mass known;/' "$s" > "$o/fp-mass.phys"
  for f in int pred mass; do
    if cmp -s "$s" "$o/fp-$f.phys"; then fail "dtlnn: the $f edit did not apply"; continue; fi
    expect "dtlnn: run --resume, $f changed" 1 'changed since: the model or its training \(' -- "$p" run --resume --out "$o/fp" "$o/fp-$f.phys"
  done
  # the run's own test set from its saved data: simulate --params reproduces its figures
  local geo; geo=$(awk -v g="$(var proposed test_geomean_rel_error)" 'BEGIN { printf "%.3e", g }')
  expect "dtlnn: simulate --params --from the run's test set" 0 "learned DT-LNN \(321 parameters\), rolled out by discrete_gradient from the first 2 positions:" -- \
    "$p" simulate --model proposed --params "$o/proposed/params.bin" --from "$o/data/test.csv" "$s"
  if grep -q -E "^  relative state error +$geo " "$tmp/o" && grep -q -E "^  variance of the model's energy +[0-9.]+e-(2[1-9]|3[0-9])$" "$tmp/o"
  then pass; else fail "dtlnn: simulate --from does not give the run's test error $geo"; grep 'error\|variance' "$tmp/o"; fi
  # emit-c: the emitted program (Newton inside the runtime it links) and the JIT to the bit
  for m in proposed leapfrog_proposed; do
    if ! "$p" emit-c --model "$m" --params "$o/$m/params.bin" -o "$o/$m.c" "$s" > "$tmp/err" 2>&1 ||
       ! cc -O2 -std=c17 -Iruntime "$o/$m.c" "$b/libphysrt.a" -lopenblas -lm -o "$o/$m.bin" >> "$tmp/err" 2>&1; then
      fail "dtlnn: emit-c of $m does not build"; head -5 "$tmp/err"; continue
    fi
    if "$o/$m.bin" --n 3 --steps 20 --out "$o/$m.c.csv" > "$o/$m.c.out" 2>&1 &&
       "$p" simulate --model "$m" --params "$o/$m/params.bin" --n 3 --steps 20 --out "$o/$m.jit.csv" "$s" > "$o/$m.jit.out" 2>&1 &&
       grep -q "rolled out by discrete_gradient from the first 2 positions:" "$o/$m.c.out" &&
       [ "$(sed -n '/^learned/,/variance/p' "$o/$m.c.out")" = "$(sed -n '/^learned/,/variance/p' "$o/$m.jit.out")" ] &&
       [ "$(wc -l < "$o/$m.c.csv")" -eq $((3 * 21 + 1)) ] && cmp -s "$o/$m.c.csv" "$o/$m.jit.csv"; then pass
    else fail "dtlnn: emit-c and simulate --params of $m differ"; head -3 "$o/$m.c.out"; fi
  done
  # Newton failing (a step 25 times the trained one): an error at the step, through both
  expect "dtlnn: simulate, Newton fails" 1 "the learned model's rollout failed: at t = [0-9.]+, the implicit step's Newton iteration had not converged after 40 iterations" -- \
    "$p" simulate --model proposed --params "$o/proposed/params.bin" --n 4 --steps 20 --dt 5 "$s"
  expect "dtlnn: emitted program, Newton fails" 1 "the learned model's rollout failed: at t = [0-9.]+, the implicit step's Newton iteration had not converged" -- \
    "$o/proposed.bin" --n 4 --steps 20 --dt 5
  # ... and a model trained at a rate of 1 on steps of 3 s: the outputs written, exit 1
  sed 's/dt 0.2;/dt 3;/; s/lr 3e-3/lr 1/' "$s" > "$o/newton.phys"
  expect "dtlnn: run, Newton fails in the test rollouts" 1 "test rollouts failed: at t = [0-9.]+, the implicit step's Newton iteration had not converged after 40 iterations; its parameters are in" -- \
    "$p" run --epochs 6 --out "$o/newton" "$o/newton.phys"
  if grep -q '"rollout_failed": true,' "$o/newton/metrics.json" && [ -s "$o/newton/params.bin" ] && [ -s "$o/newton/rollout.svg" ] &&
     grep -q 'evaluation on 4 test trajectories, 30 steps (discrete_gradient from the first 2 positions), .* -- FAILED (below)' "$tmp/o"
  then pass; else fail "dtlnn: a failed Newton rollout's outputs"; ls "$o/newton"; fi
  # --eval-from chunk: the rollouts start from a random chunk's first two positions
  sed 's/chunk 31/chunk 10/' "$s" > "$o/chunk.phys"
  expect "dtlnn: run --eval-from chunk" 0 "4 test of 31 points from a random chunk's first state" -- \
    "$p" run --epochs 2 --eval-from chunk --out "$o/chunk" "$o/chunk.phys"
  "$p" run -q --epochs 2 --out "$o/initial" "$o/chunk.phys" > /dev/null 2>&1
  if grep -q '"eval_from": "chunk"' "$o/chunk/metrics.json" && cmp -s "$o/chunk/params.bin" "$o/initial/params.bin" &&
     ! cmp -s "$o/chunk/trajectories.csv" "$o/initial/trajectories.csv"; then pass
  else fail "dtlnn: --eval-from chunk did not evaluate the same parameters from other points"; fi
  # --threads 2: each thread's shard of the batch, summed in a fixed order: the same losses to rounding
  "$p" run -q --threads 2 --out "$o/threads" "$s" > /dev/null 2>&1
  if paste -d' ' <(grep '"train_loss"' "$o/proposed/metrics.json" | tr -d '[],' | tr ' ' '\n' | tail -n +4) \
       <(grep '"train_loss"' "$o/threads/metrics.json" | tr -d '[],' | tr ' ' '\n' | tail -n +4) |
     awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-9 * $1) bad = 1; n++ } END { exit bad || n != 60 }'; then pass
  else fail "dtlnn: --threads 2 trains another loss curve than --threads 1"; fi
  # compare: the paper's Tables 2 and 3 as a second table, and in comparison.json (each of
  # 6 runs, each of 3 models' means, and their means over the seeds with t intervals)
  expect "dtlnn: compare" 0 "^model +kind +position MSE +true energy MSE +variance of the model's energy" -- \
    "$p" compare -q --models proposed,leapfrog,leapfrog_proposed --seeds 2 --epochs 4 --out "$o/cmp" "$s"
  local j=$o/cmp/comparison.json
  if grep -q -E '^leapfrog_proposed +dtlnn +321 ' "$tmp/o" && grep -q -E '^proposed +dtlnn +[0-9.]+e[+-][0-9]+ +[0-9.]+e[+-][0-9]+ +[0-9.]+e-(2[1-9]|3[0-9])$' "$tmp/o" &&
     grep -q -E '^leapfrog +dtlnn +[0-9.]+e[+-][0-9]+ +[0-9.]+e[+-][0-9]+ +[0-9.]+e-(0[0-9]|1[0-2])$' "$tmp/o" &&
     [ "$(grep -c '"status": "ok"' "$j")" -eq 6 ] && [ "$(grep -c '"position_mse": ' "$j")" -eq 12 ] &&
     [ "$(grep -c '"energy_mse": ' "$j")" -eq 12 ] && [ "$(grep -c '"model_energy_variance": ' "$j")" -eq 12 ]; then pass
  else fail "dtlnn: compare's tables or comparison.json"; tail -8 "$tmp/o"; fi
  # a model's name longer than the column widens it: the kinds line up under "kind" (in the
  # three tables of 3 models: figures, the paper's means, the means over the seeds)
  if awk '/^model +kind/ { k = index($0, "kind"); next } k && / dtlnn / { n++; if (index($0, "dtlnn") != k) bad = 1 } END { exit bad || n != 9 }' "$tmp/o"
  then pass; else fail "dtlnn: compare's columns do not line up"; tail -8 "$tmp/o"; fi
  # what a dtlnn model cannot take: said at the place in the program (exit 1), or of the flag (exit 2)
  sed 's/^model clnn : clnn { potential V; mass learned }/model dt : dtlnn { potential V; mass identity }/' tests/run/small.phys > "$o/con.phys"
  expect "dtlnn: positions under constraints" 1 "con.phys:32:30: error: model dt \(dtlnn\) steps the positions V reads by Eq. 12, which has no constraints, but the system has 1 constraint equation" -- \
    "$p" run --model dt --out "$o/e" "$o/con.phys"
  sed -e 's/^model clnn : clnn { potential V; mass learned }/learned Vq : potential { hidden [8]; activation tanh; input coords }\nmodel dt : dtlnn { potential Vq; mass identity; integrator discrete_gradient }/' \
      -e 's|^  init {|  inverse { theta[1] = atan2(bob[1].pos.x, -bob[1].pos.y) }\n  init {|' tests/run/small.phys > "$o/coords.phys"
  expect "dtlnn: generalized coordinates" 1 "coords.phys:[0-9]+:[0-9]+: error: model dt \(dtlnn\) steps the Cartesian positions of a system without constraints; generalized coordinates are not supported" -- \
    "$p" run --model dt --out "$o/e" "$o/coords.phys"
  if ! grep -q '^data:' "$tmp/o"; then pass; else fail "dtlnn: data made for a model the family refuses"; fi
  sed 's/steps 30; chunk 31/steps 1; chunk 2/; s/horizon 30;/horizon 1;/' "$s" > "$o/steps1.phys"
  expect "dtlnn: trajectories of 2 points" 1 "steps1.phys:32:37: error: trajectories of 2 points are too short for a DT-LNN model, which learns from 3 consecutive points" -- \
    "$p" run --out "$o/e" "$o/steps1.phys"
  sed 's/horizon 30;/horizon 1;/' "$s" > "$o/h1.phys"
  expect "dtlnn: a horizon of 1 step" 1 "h1.phys:39:8: error: a horizon of 1 step predicts nothing: a DT-LNN model's rollouts start from the first 2 observed positions, so they need at least 2 steps" -- \
    "$p" run --out "$o/e" "$o/h1.phys"
  sed 's/horizon 30;/horizon 31;/' "$s" > "$o/h31.phys"
  expect "dtlnn: a horizon past the data" 1 "h31.phys:39:8: error: horizon \(31 steps\) is longer than the test trajectories \(30 steps, the data block's steps\)" -- \
    "$p" run --out "$o/e" "$o/h31.phys"
  expect "dtlnn: simulate --steps 1" 2 "--steps 1 predicts nothing: model proposed \(dtlnn\) starts from the first 2 positions of each trajectory; give --steps 2 or more" -- \
    "$p" simulate --model proposed --params "$o/proposed/params.bin" --steps 1 "$s"
  # recorded data: the run's own, whole; positions only; 2 points; a NaN
  { cat "$o/data/train.csv"; tail -n +2 "$o/data/valid.csv" | awk -F, -v OFS=, '{ $1 += 8; print }'
    tail -n +2 "$o/data/test.csv" | awk -F, -v OFS=, '{ $1 += 10; print }'; } > "$o/data/all.csv"
  cut -d, -f1-3 "$o/data/all.csv" > "$o/data/positions.csv"
  awk -F, 'NR == 1 || $2 < 0.3' "$o/data/all.csv" > "$o/data/two.csv"
  sed '5s/^\([0-9]*,[^,]*\),[^,]*,/\1,nan,/' "$o/data/all.csv" > "$o/data/nan.csv"
  for f in all positions two nan; do sed "s|noise 0.01;|noise 0.01; file \"$o/data/$f.csv\";|; s/horizon 30;//" "$s" > "$o/file-$f.phys"; done
  expect "dtlnn: run on a CSV file" 0 "data: $o/data/all.csv: 8 train trajectories \(all 232 windows of 3 points\)" -- \
    "$p" run --epochs 2 --out "$o/file" "$o/file-all.phys"
  expect "dtlnn: a CSV file of positions only" 0 "data: $o/data/positions.csv \(positions only; velocities by second-order finite differences\): 8 train trajectories \(all 232 windows of 3 points\)" -- \
    "$p" run --epochs 2 --save-data "$o/data-pos" --out "$o/file-pos" "$o/file-positions.phys"
  if [ "$(head -1 "$o/data-pos/test.csv")" = "traj,t,bob.x" ]; then pass
  else fail "dtlnn: --save-data of positions only writes estimated velocities as data"; head -2 "$o/data-pos/test.csv"; fi
  cut -d, -f1-3 "$o/data/two.csv" > "$o/data/two-pos.csv"
  expect "dtlnn: positions only, 2 points" 1 "two-pos.csv: trajectory 0 has only 2 points: the velocities of positions alone are estimated from 3 or more" -- \
    "$p" simulate --from "$o/data/two-pos.csv" "$s"
  expect "dtlnn: a CSV file of 2 points a trajectory" 1 "file-two.phys:33:15: error: trajectories of 2 points are too short for a DT-LNN model" -- \
    "$p" run --out "$o/e" "$o/file-two.phys"
  expect "dtlnn: NaN in a CSV file" 1 "file-nan.phys:33:15: error: $o/data/nan.csv:5: bob.x is nan: every value must be a finite number" -- \
    "$p" run --out "$o/e" "$o/file-nan.phys"
  expect "dtlnn: simulate --from a CSV file of 2 points" 1 "a DT-LNN model's rollout starts from the first 2 points of each trajectory: a rollout of 1 step leaves nothing to predict" -- \
    "$p" simulate --model proposed --params "$o/proposed/params.bin" --from "$o/data/two.csv" "$s"
  # recorded positions only (issue 17's users: video, motion capture): the true trajectories
  # with their velocity column cut off train the same model (noise is drawn for every
  # column, so the noisy positions are the same) and predict the same positions; the test
  # energies from velocities estimated to O(dt^2) (dt 0.05: 0.17 % of the speed) move the
  # energy MSE by far less than 5 %; a CHNN, which reads velocities, is refused
  expect "dtlnn: simulate the true trajectories" 0 "wrote $o/full.csv" -- \
    "$p" simulate --n 14 --steps 60 --dt 0.05 --out "$o/full.csv" examples/massspring.phys
  cut -d, -f1-3 "$o/full.csv" > "$o/pos.csv"
  for f in full pos; do
    sed "s|noise 0.01;|noise 0.01; file \"$o/$f.csv\";|; s/dt 0.2; steps 30;//; s/horizon 30;//; s/^model proposed : dtlnn/model chnn : chnn { potential V; mass learned }\nmodel proposed : dtlnn/" "$s" > "$o/rec-$f.phys"
  done
  expect "dtlnn: run on recorded positions" 0 "data: $o/pos.csv \(positions only; velocities by second-order finite differences\): 8 train trajectories \(all 472 windows of 3 points\), 2 valid, 4 test of 61 points, dt 0.05" -- \
    "$p" run --model proposed --epochs 20 --out "$o/rec-pos" "$o/rec-pos.phys"
  "$p" run -q --model proposed --epochs 20 --out "$o/rec-full" "$o/rec-full.phys" > "$tmp/out" 2>&1 || { fail "dtlnn: run on the whole recorded states"; head -5 "$tmp/out"; }
  local pos_full pos_pos e_full e_pos
  pos_full=$(grep -o '"test_position_mse": [^,]*' "$o/rec-full/metrics.json"); pos_pos=$(grep -o '"test_position_mse": [^,]*' "$o/rec-pos/metrics.json")
  e_full=$(grep -o '"test_energy_mse": [^,]*' "$o/rec-full/metrics.json" | cut -d' ' -f2); e_pos=$(grep -o '"test_energy_mse": [^,]*' "$o/rec-pos/metrics.json" | cut -d' ' -f2)
  if [ -n "$pos_full" ] && [ "$pos_full" = "$pos_pos" ] &&
     awk -v a="$e_full" -v b="$e_pos" 'BEGIN { exit !(a > 0 && b > 0 && b / a > 0.95 && b / a < 1.05) }'
  then pass; else fail "dtlnn: positions only train and predict otherwise ($pos_full, $pos_pos) or move the energy MSE ($e_full, $e_pos) by 5 % or more"; fi
  expect "dtlnn: a CHNN on recorded positions" 1 "rec-pos.phys:34:15: error: model chnn \(CHNN\) learns from velocities, and $o/pos.csv has positions only: give it the velocity columns too" -- \
    "$p" run --model chnn --out "$o/e" "$o/rec-pos.phys"
  expect "dtlnn: simulate --from recorded positions" 0 "note: $o/pos.csv has positions only: its velocities, the starting states' too, are estimated by second-order finite differences" -- \
    "$p" simulate --model proposed --params "$o/rec-pos/params.bin" --from "$o/pos.csv" "$o/rec-pos.phys"
}

# A minibatch in a fixed number of shards (train { shards S }): the trained parameters are the
# same bits whatever the threads that compute them, for every family; the same as the threads'
# own shards before (S threads); a run stopped at one thread count resumes at another. The liet2
# run balances its loss: a thread's replica of the model takes the weights the model read off the data.
shards_layer() { # $1 = build dir
  local p=$1/physc o=$tmp/shards spec name prog flags shards settings t
  mkdir -p "$o"
  for spec in "chnn:tests/run/small.phys::4" "liet2:tests/run/liet2.phys:--model forced_v --epochs 2:2:loss_weights balanced;" \
              "node:tests/run/baselines.phys:--model node --epochs 2:3" "dtlnn:tests/run/dtlnn.phys:--model proposed --epochs 2:2"; do
    IFS=: read -r name prog flags shards settings <<< "$spec"
    sed -E "0,/^train \{/s//train { shards $shards; $settings/" "$prog" > "$o/$name.phys"
    for t in 1 2 "$shards"; do
      # shellcheck disable=SC2086
      "$p" run -q $flags --threads "$t" --out "$o/$name-t$t" "$o/$name.phys" > "$o/$name-t$t.log" 2>&1 ||
        { fail "shards: $name at $t threads failed"; tail -3 "$o/$name-t$t.log"; }
    done
    local v1; v1=$(grep '"valid_loss"' "$o/$name-t1/metrics.json")
    if cmp -s "$o/$name-t1/params.bin" "$o/$name-t2/params.bin" && cmp -s "$o/$name-t1/params.bin" "$o/$name-t$shards/params.bin" &&
       [ -n "$v1" ] && [ "$v1" = "$(grep '"valid_loss"' "$o/$name-t2/metrics.json")" ] &&
       [ "$v1" = "$(grep '"valid_loss"' "$o/$name-t$shards/metrics.json")" ]; then pass
    else fail "shards: $name's parameters or validation losses differ between 1, 2 and $shards threads with $shards shards"; fi
  done
  # S shards are what S threads made before: the same bits as a run without `shards` on S threads
  "$p" run -q --threads 4 --out "$o/chnn-old4" tests/run/small.phys > /dev/null 2>&1
  cmp -s "$o/chnn-old4/trajectories.csv" "$o/chnn-t1/trajectories.csv" && cmp -s "$o/chnn-old4/errors.csv" "$o/chnn-t1/errors.csv" &&
    pass || fail "shards: 4 shards on 1 thread differ from 4 threads' own shards" # (params.bin's header names the program's text)
  expect "shards: said in the model line" 0 'batch 16 \(4 shards\), rk4_38' -- "$p" run --epochs 1 --threads 2 --out "$o/said" "$o/chnn.phys"
  # stopped on 2 threads after 3 epochs, resumed on 1: the unbroken run's bits
  "$p" run -q --threads 2 --stop-after 3 --out "$o/parts" "$o/chnn.phys" > /dev/null 2>&1
  "$p" run -q --threads 1 --resume --out "$o/parts" "$o/chnn.phys" > "$o/parts.log" 2>&1 &&
    cmp -s "$o/parts/params.bin" "$o/chnn-t1/params.bin" && pass || { fail "shards: a run resumed at another thread count differs"; tail -3 "$o/parts.log"; }
  # without `shards` the threads are the shards: a resume on other threads is refused with the
  # thread count that continues it, and `shards N` continues it on any (the unbroken run's bits)
  "$p" run -q --threads 2 --stop-after 2 --out "$o/threads" tests/run/small.phys > /dev/null 2>&1
  expect "shards: a resume on other threads names the count" 1 'trained on 2 threads.*--threads 2 continues it, or `shards 2`' \
    -- "$p" run -q --threads 1 --resume --out "$o/threads" tests/run/small.phys
  sed -E "0,/^train \{/s//train { shards 2;/" tests/run/small.phys > "$o/two.phys"
  "$p" run -q --threads 2 --out "$o/threads-whole" tests/run/small.phys > /dev/null 2>&1
  "$p" run -q --threads 1 --resume --out "$o/threads" "$o/two.phys" > "$o/threads.log" 2>&1 &&
    cmp -s "$o/threads/trajectories.csv" "$o/threads-whole/trajectories.csv" && cmp -s "$o/threads/errors.csv" "$o/threads-whole/errors.csv" && pass ||
    { fail "shards: \`shards 2\` does not continue a 2-thread run on 1 thread as the unbroken run"; tail -3 "$o/threads.log"; }
  sed -E "0,/^train \{/s//train { shards 17;/" tests/run/small.phys > "$o/seventeen.phys"
  expect "shards: at most 16" 1 "seventeen.phys:[0-9]+:[0-9]+: error: .*shards" -- "$p" check "$o/seventeen.phys"
}

# Training over MPI (mpirun -np 2): the same bits as one process with the same shards, for
# chnn, a baseline, dtlnn and liet2; a 2-process checkpoint resumed in one process; a rank
# killed mid-training ends the job at once, and its checkpoint resumes. physc must be built
# with MPI here (the README's set-up installs Open MPI).
mpi_layer() { # $1 = build dir
  local p=$1/physc o=$tmp/mpi spec name prog flags mpirun=(mpirun -np 2 --oversubscribe)
  [ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
  mkdir -p "$o"
  if ! "$p" --version | grep -q '^MPI: Open MPI' || ! command -v mpirun > /dev/null; then
    fail "mpi: physc is built without MPI or mpirun is missing (the README's set-up installs libopenmpi-dev openmpi-bin)"; return
  fi
  for spec in "chnn:tests/run/small.phys:" "node:tests/run/baselines.phys:--model node --epochs 2" \
              "dtlnn:tests/run/dtlnn.phys:--model proposed --epochs 2" "liet2:tests/run/liet2.phys:--model forced_v --epochs 2"; do
    IFS=: read -r name prog flags <<< "$spec"
    sed -E "0,/^train \{/s//train { shards 2;/" "$prog" > "$o/$name.phys"
    # shellcheck disable=SC2086
    "$p" run -q $flags --out "$o/$name-1" "$o/$name.phys" > "$o/$name-1.log" 2>&1
    # shellcheck disable=SC2086
    timeout 120 "${mpirun[@]}" "$p" run -q $flags --out "$o/$name-2" "$o/$name.phys" > "$o/$name-2.log" 2>&1 &&
      cmp -s "$o/$name-1/params.bin" "$o/$name-2/params.bin" &&
      [ "$(grep '"valid_loss"' "$o/$name-1/metrics.json")" = "$(grep '"valid_loss"' "$o/$name-2/metrics.json")" ] && pass ||
      { fail "mpi: $name on 2 processes differs from one process (or failed)"; tail -5 "$o/$name-2.log"; }
  done
  # processes that cannot share the shards: refused with the counts that work
  expect "mpi: shards unset" 1 'give the train block `shards S`' -- timeout 60 "${mpirun[@]}" "$p" run -q --out "$o/unset" tests/run/small.phys
  expect "mpi: more processes than shards" 1 '3 processes but 2 shards: .* run 1 to 2 processes' -- \
    timeout 60 mpirun -np 3 --oversubscribe "${mpirun[@]:3}" "$p" run -q --out "$o/three" "$o/chnn.phys"
  # stopped after 3 epochs on 2 processes, resumed in one: the unbroken run's bits
  timeout 120 "${mpirun[@]}" "$p" run -q --stop-after 3 --out "$o/parts" "$o/chnn.phys" > /dev/null 2>&1
  "$p" run -q --resume --out "$o/parts" "$o/chnn.phys" > "$o/parts.log" 2>&1 &&
    cmp -s "$o/parts/params.bin" "$o/chnn-1/params.bin" && pass || { fail "mpi: a 2-process checkpoint resumed in one process differs"; tail -3 "$o/parts.log"; }
  # a rank killed mid-training: the job ends within seconds, and the checkpoint resumes
  ( timeout 100 "${mpirun[@]}" "$p" run -q --epochs 100000 --out "$o/killed" "$o/chnn.phys" > "$o/killed.log" 2>&1; echo "$?" > "$o/killed.rc" ) &
  local waited=0 victim=""
  while [ -z "$victim" ] && [ $waited -lt 60 ]; do
    sleep 1; waited=$((waited + 1))
    [ -f "$o/killed/checkpoint.bin" ] && victim=$(pgrep -f "^$p run -q --epochs 100000 --out $o/killed" | tail -1)
  done
  local t0=$SECONDS
  [ -n "$victim" ] && kill -9 "$victim"
  while [ ! -f "$o/killed.rc" ] && [ $((SECONDS - t0)) -lt 60 ]; do sleep 0.5; done
  if [ -n "$victim" ] && [ -f "$o/killed.rc" ] && [ "$(cat "$o/killed.rc")" != 0 ] && [ $((SECONDS - t0)) -lt 30 ]; then pass
  else fail "mpi: a killed rank did not end the job within 30 s with a failure"; tail -5 "$o/killed.log"; fi
  # what the job said: mpirun names the lost process, rank 0 where the checkpoint is
  grep -q 'process rank 1 .*exited on signal 9' "$o/killed.log" && grep -q "the last checkpoint in $o/killed/ stays" "$o/killed.log" &&
    pass || { fail "mpi: the killed job did not say which process was lost and where its checkpoint is"; tail -8 "$o/killed.log"; }
  "$p" run -q --resume --epochs 100000 --stop-after 1 --out "$o/killed" "$o/chnn.phys" > "$o/resumed.log" 2>&1
  grep -q 'stopped after epoch' "$o/resumed.log" && pass || { fail "mpi: the killed job's checkpoint does not resume"; tail -3 "$o/resumed.log"; }
  # a full disk on rank 0: its checkpoints fail (said by rank 0 alone, as often as by one
  # process), training goes on, the job ends with 1 and the trained parameters written
  mkdir -p "$o/full" "$o/full-1" && ln -s /dev/full "$o/full/checkpoint.bin" && ln -s /dev/full "$o/full-1/checkpoint.bin"
  "$p" run -q --force --out "$o/full-1" "$o/chnn.phys" > "$o/full-1.log" 2>&1
  expect_timeout=120 expect "mpi: checkpoint on a full disk" 1 "cannot write $o/full/checkpoint.bin: No space left on device \(training goes on\)" -- \
    timeout 120 "${mpirun[@]}" "$p" run -q --force --out "$o/full" "$o/chnn.phys"
  [ "$(grep -c 'No space left' "$tmp/o")" = "$(grep -c 'No space left' "$o/full-1.log")" ] && cmp -s "$o/full/params.bin" "$o/chnn-1/params.bin" &&
    pass || { fail "mpi: a full disk on rank 0 was said by other processes too, or lost the trained parameters"; tail -5 "$tmp/o"; }
}

# physc sweep: 2 models x 3 seeds of the 1-pendulum, the same bits in turn, under --jobs 2,
# under mpirun -np 2 and as a Slurm job array run task by task; runs claimed so that nothing
# runs twice; a second sweep does no work; the summary's mean over seeds is its runs'.
sweep_layer() { # $1 = build dir
  local p=$1/physc o=$tmp/sweep s=tests/run/small.phys r bad ok
  local args=(--models chnn,clnn --seeds 4..6 --epochs 2 --threads 1 --set train.size=32)
  local runs=(chnn-seed4-n32 chnn-seed5-n32 chnn-seed6-n32 clnn-seed4-n32 clnn-seed5-n32 clnn-seed6-n32)
  mkdir -p "$o"
  expect "sweep in turn" 0 '^over the seeds: the mean of each run' -- "$p" sweep "${args[@]}" --out "$o/turn" "$s"
  ok=1; for r in "${runs[@]}"; do [ -s "$o/turn/$r/params.bin" ] || ok=0; done
  [ $ok = 1 ] && [ "$(grep -c '"status": "ok"' "$o/turn/sweep.json")" = 6 ] && grep -q '"seeds": \[4, 5, 6\]' "$o/turn/sweep.json" &&
    pass || fail "sweep: not 6 runs of seeds 4..6 finished in its folder and sweep.json"
  # the mean over the seeds and its t interval, from the runs' own figures
  local want; want=$(for r in chnn-seed4-n32 chnn-seed5-n32 chnn-seed6-n32; do
    sed -n 's/^  "test_geomean_rel_error": \(.*\),$/\1/p' "$o/turn/$r/metrics.json"; done |
    awk '{x[NR]=$1; m+=$1} END {m/=NR; for (i=1;i<=NR;i++) v+=(x[i]-m)^2; h=4.302652729749464*sqrt(v/(NR-1)/NR); printf "%.4e %.4e %.4e", m, m-h, m+h}')
  local got; got=$(awk '/"model": "chnn"/ && /"runs":/ {on=1} on && /"rel_error": \[/ {sub(/.*\[/, ""); gsub(/[] ,]+/, " "); split($0, a, " "); printf "%.4e %.4e %.4e", a[1], a[2], a[3]; exit}' "$o/turn/sweep.json")
  [ -n "$want" ] && [ "$want" = "$got" ] && pass || fail "sweep: chnn's mean over seeds [95% t interval] is '$got', its runs give '$want'"
  # a second sweep does no work: every run reused, none trained, no file rewritten
  local before; before=$(stat -c %Y "$o/turn"/*/params.bin | md5sum)
  expect "sweep again" 0 'wrote .*sweep.json' -- "$p" sweep "${args[@]}" --out "$o/turn" "$s"
  [ "$(grep -c '^reusing finished run' "$tmp/o")" = 6 ] && ! grep -q '^epoch\|^trained' "$tmp/o" &&
    [ "$(stat -c %Y "$o/turn"/*/params.bin | md5sum)" = "$before" ] && pass || fail "sweep again: a run was trained or rewritten"
  # the same bits from every engine
  same_runs() { # $1 = label, $2 = folder
    bad=""; for r in "${runs[@]}"; do cmp -s "$o/turn/$r/params.bin" "$2/$r/params.bin" || bad="$bad $r"; done
    [ -z "$bad" ] && cmp -s <(grep -v 'seconds_per_epoch\|"dir"' "$o/turn/sweep.json") <(grep -v 'seconds_per_epoch\|"dir"' "$2/sweep.json") &&
      pass || fail "sweep $1: runs differ from the sweep in turn:$bad"
  }
  expect "sweep --jobs 2" 0 'wrote .*sweep.json' -- "$p" sweep "${args[@]}" --jobs 2 --out "$o/jobs" "$s"
  same_runs "--jobs 2" "$o/jobs"
  local mpirun=(mpirun -np 2 --oversubscribe); [ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
  expect_timeout=120 expect "sweep under mpirun -np 2" 0 'wrote .*sweep.json' -- "${mpirun[@]}" "$p" sweep "${args[@]}" --out "$o/mpi" "$s"
  same_runs "under mpirun" "$o/mpi"
  grep -q '(rank 0): run' "$tmp/o" && grep -q '(rank 1): run' "$tmp/o" && pass || fail "sweep under mpirun: not both processes took runs"
  # a Slurm job array: the script, then its tasks one by one (the last writes the summary)
  expect "sweep --emit-slurm" 0 'wrote .*sweep.sh: 6 runs in 6 tasks \(array 0-5, 2 at a time\)' -- \
    "$p" sweep "${args[@]}" --jobs 2 --out "$o/slurm" --emit-slurm "$o/sweep.sh" "$s"
  grep -q '^#SBATCH --array=0-5%2$' "$o/sweep.sh" && grep -q -- "--task \"\$SLURM_ARRAY_TASK_ID\"$" "$o/sweep.sh" &&
    ! grep -q -- "--jobs\|--emit-slurm" <(grep '^exec' "$o/sweep.sh") && pass || fail "sweep --emit-slurm: the script's array or command"
  expect "the Slurm script outside Slurm" 1 'run this script with sbatch' -- bash "$o/sweep.sh"
  local t; ok=1
  for t in 0 1 2 3 4 5; do
    SLURM_ARRAY_TASK_ID=$t bash "$o/sweep.sh" > "$o/task$t.log" 2>&1 || ok=0
    if [ $t -lt 5 ] && [ -e "$o/slurm/sweep.json" ]; then ok=0; fi # (only the last task writes it)
  done
  [ $ok = 1 ] && grep -q 'not finished yet' "$o/task0.log" && pass || { fail "sweep's Slurm tasks: one failed, or the summary came early"; tail -3 "$o"/task*.log; }
  same_runs "as Slurm tasks" "$o/slurm"
  expect "a Slurm task again" 0 'reusing finished run' -- env SLURM_ARRAY_TASK_ID=3 bash "$o/sweep.sh"
  ! grep -q '^epoch' "$tmp/o" && pass || fail "a Slurm task run again trained"
  # a task another process holds is not run twice
  "$p" sweep --models chnn --epochs 100000 --threads 1 --out "$o/held" --task 0 "$s" > "$o/held.log" 2>&1 &
  local hpid=$! k
  for k in $(seq 1 300); do grep -q '^epoch' "$o/held.log" 2>/dev/null && break; sleep 0.1; done
  expect "sweep: a task another process holds" 0 "run 1 of 1 \\($o/held/chnn-seed0\\) is process $hpid's: skipped" -- \
    "$p" sweep --models chnn --epochs 100000 --threads 1 --out "$o/held" "$s"
  grep -q 'chnn .*not finished' "$tmp/o" && pass || fail "sweep: the held run is not 'not finished' in the table"
  kill -TERM $hpid; wait $hpid
  # refusals
  expect "sweep --seeds 3..1" 2 "bad value '3..1' for --seeds" -- "$p" sweep --seeds 3..1 "$s"
  expect "sweep --task beyond" 2 'the sweep has 6 tasks, 0 to 5' -- "$p" sweep "${args[@]}" --task 6 --out "$o/turn" "$s"
  expect "sweep --task with --jobs" 2 'drop --jobs' -- "$p" sweep --task 0 --jobs 2 "$s"
  expect "sweep --set of a param's list" 2 'a list of values sweeps train.size only' -- "$p" sweep --set g=9.8,3.7 "$s"
  expect "sweep: sizes given twice" 2 'given twice' -- "$p" sweep --set train.size=8 --train-sizes 8 "$s"
  expect "sweep under mpirun with --jobs" 2 'under mpirun the processes take the tasks: drop --jobs' -- \
    timeout 60 "${mpirun[@]}" "$p" sweep --jobs 2 "$s"
}

# physc view: the page of a run in headless Chromium with the network closed: no console
# error; the bodies where first-rollout.csv puts them and the curves where errors.csv does,
# at the times and trajectories the address asks for; the scene drawn (its pixels); a
# compare folder's models together; folders it cannot show refused with what to do.
viewer_layer() { # $1 = build dir
  local p=$1/physc o=$tmp/viewer s=tests/run/small.phys
  mkdir -p "$o"
  if ! command -v chromium > /dev/null; then fail "viewer: chromium is missing (the README's set-up installs it)"; return; fi
  chrome() { timeout 90 chromium --headless --no-sandbox --disable-gpu --host-resolver-rules='MAP * ~NOTFOUND' \
               --proxy-server=127.0.0.1:9 --enable-logging=stderr --v=0 --window-size=1200,1000 "$@"; }
  expect "run --view" 0 "wrote $o/run/view.html \\([0-9.]+ MB, 1 run\\)" -- "$p" run --view --epochs 2 --out "$o/run" --save-data "$o/data" "$s"
  rm "$o/run/view.html"
  expect "view a run" 0 "wrote $o/run/view.html \\([0-9.]+ MB, 1 run\\)" -- "$p" view "$o/run"
  ! grep -q -E 'https?://|(src|href)=' "$o/run/view.html" && pass || fail "viewer: the page refers to something outside it"
  local at traj t
  for at in "0 0.6" "3 1.2" "0 0"; do
    read -r traj t <<< "$at"
    chrome --dump-dom "file://$o/run/view.html#traj=$traj&t=$t" > "$o/dom" 2> "$o/console"
    if grep -q 'CONSOLE' "$o/console"; then fail "viewer: the page said something on its console"; grep CONSOLE "$o/console" | head -3
    elif /usr/bin/python3 tests/viewer_state.py "$o/dom" "$o/run" "$o/data" > "$o/check" 2>&1; then pass
    else fail "viewer at trajectory $traj, t = $t: the page does not show the run's files"; head -5 "$o/check"; fi
  done
  # the picker: another trajectory, other curves (each checked against errors.csv above)
  chrome --dump-dom "file://$o/run/view.html#traj=0&t=1.2" 2> /dev/null | grep -o '"curves":{[^}]*}' > "$o/c0"
  chrome --dump-dom "file://$o/run/view.html#traj=3&t=1.2" 2> /dev/null | grep -o '"curves":{[^}]*}' > "$o/c3"
  [ -s "$o/c0" ] && ! cmp -s "$o/c0" "$o/c3" && pass || fail "viewer: trajectories 0 and 3 show the same curves"
  grep -q '"loss_epochs":2' "$o/dom" && pass || fail "viewer: the page's loss curve does not have the run's 2 epochs"
  # the first frame is drawn: the model (red) and the truth's ghost (grey) in the scene's box
  chrome --screenshot="$o/shot.png" "file://$o/run/view.html#traj=0&t=0.6" > /dev/null 2>&1
  local counts; counts=$(/usr/bin/python3 tests/viewer_pixels.py "$o/shot.png" 17 79 737 599 d1495b bbbbbb | tr '\n' ' ')
  read -r red grey <<< "$counts"
  [ "${red:-0}" -gt 40 ] && [ "${grey:-0}" -gt 40 ] && pass || fail "viewer: the scene is not drawn (model, ghost pixels: $counts)"
  # a compare folder: its models together on the truth
  "$p" compare -q --models chnn,clnn --epochs 1 --out "$o/cmp" "$s" > /dev/null 2>&1
  expect "view a compare folder" 0 'view.html \([0-9.]+ MB, 2 runs\)' -- "$p" view "$o/cmp"
  chrome --dump-dom "file://$o/cmp/view.html#traj=1&t=0.3" 2> "$o/console" | grep -q '"runs":\["chnn","clnn"\]' &&
    ! grep -q CONSOLE "$o/console" && pass || fail "viewer: a compare folder's page does not show both models"
  # a video of the scene (the page's own frames, encoded by Debian's ffmpeg): every time of the
  # trajectory asked for, 1280x720 H.264; its middle frame has the model and the ghost
  expect "view --mp4" 0 "wrote $o/run.mp4 \\([0-9.]+ MB, 51 frames at 13 a second, 1280x720: test trajectory 2, the truth a ghost" \
    -- "$p" view --mp4 "$o/run.mp4" --traj 2 "$o/run"
  ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=codec_name,width,height,nb_read_frames -of csv=p=0 \
    "$o/run.mp4" > "$o/probe" 2>&1
  ffmpeg -v error -y -ss 0.75 -i "$o/run.mp4" -frames:v 1 "$o/frame.png" > /dev/null 2>&1
  counts=$(/usr/bin/python3 tests/viewer_pixels.py "$o/frame.png" 0 44 1280 720 d1495b bbbbbb | tr '\n' ' ')
  read -r red grey <<< "$counts"
  [ "$(cat "$o/probe")" = "h264,1280,720,51" ] && [ "${red:-0}" -gt 40 ] && [ "${grey:-0}" -gt 40 ] && [ ! -e "$o/run.mp4.partial" ] &&
    pass || fail "viewer: the video (ffprobe: $(cat "$o/probe"); model, ghost pixels of its middle frame: $counts)"
  expect "view --mp4: a trajectory the run has not" 2 '--traj 16: .* has 16 test trajectories \(0 to 15\)' -- \
    "$p" view --mp4 "$o/bad.mp4" --traj 16 "$o/run"
  expect "view --mp4: a layout it has not" 2 "bad value 'diagonal' for --layout \\(overlay or side\\)" -- \
    "$p" view --mp4 "$o/bad.mp4" --layout diagonal "$o/run"
  expect "view --mp4: an output it cannot write" 1 "--mp4: cannot write $o/no/such/dir/v.mp4" -- \
    "$p" view --mp4 "$o/no/such/dir/v.mp4" "$o/run"
  expect "view --mp4 without its tools" 1 "--mp4 needs Debian's chromium and ffmpeg \\(apt-get install chromium ffmpeg\\)" -- \
    env PATH=/nonexistent "$p" view --mp4 "$o/bad.mp4" "$o/run"
  [ ! -e "$o/bad.mp4" ] && pass || fail "view --mp4: a video written where it was refused"
  # a sweep's folder: the runs chosen by --models and --seed, its table of every run and its
  # figures; a model hidden by the address; what it does not have
  "$p" sweep -q --models chnn,clnn --seeds 2 --epochs 1 --out "$o/sw" "$s" > /dev/null 2>&1
  expect "view a sweep: one model, seed 1" 0 'view.html \([0-9.]+ MB, 1 run\)' -- "$p" view --models clnn --seed 1 "$o/sw"
  chrome --dump-dom "file://$o/sw/view.html" 2> "$o/console" > "$o/dom"
  local nsvg; nsvg=$(ls "$o/sw"/*.svg | wc -l)
  grep -q '"runs":\["clnn"\]' "$o/dom" && [ "$(grep -o '<td>yes</td>' "$o/dom" | wc -l)" -eq 1 ] &&
    [ "$(grep -o '<tr><td>c[hl]nn</td>' "$o/dom" | wc -l)" -eq 4 ] && [ "$(grep -o '<figure>' "$o/dom" | wc -l)" -eq "$nsvg" ] &&
    grep -q 'clnn (seed 1)' "$o/dom" && ! grep -q CONSOLE "$o/console" && pass ||
    fail "viewer: a sweep's page (clnn's seed 1 drawn, 4 runs in its table, its $nsvg figures)"
  "$p" view -q "$o/sw" && chrome --dump-dom "file://$o/sw/view.html#hide=chnn" 2> /dev/null |
    grep -q '"runs":\["chnn","clnn"\],"visible":\["clnn"\]' && pass || fail "viewer: #hide=chnn still draws chnn"
  expect "view: a model the sweep has not" 1 'has no finished run of a model node \(its models: chnn clnn\)' -- "$p" view --models node "$o/sw"
  expect "view: a seed the sweep has not" 1 'no finished run of model chnn of seed 5 \(its runs: seed 0, seed 1\)' -- "$p" view --seed 5 "$o/sw"
  expect "view: --seed on one run" 2 'choose among a sweep.s runs; .* is one run.s folder' -- "$p" view --seed 1 "$o/run"
  # a sweep of a dozen models: eight drawn, the page says how to pick the others
  mkdir -p "$o/many"
  local i names=""; for i in $(seq 1 12); do cp -r "$o/sw/chnn-seed0" "$o/many/m$i-seed0"; names="$names\"m$i\", "; done
  printf '{"system": "pendulum1", "settings": {"models": [%s"end"]}, "runs": []}\n' "$names" > "$o/many/sweep.json"
  expect "view: a dozen models" 0 'view.html \([0-9.]+ MB, 8 runs \(4 more models not drawn: at most 8 together; --models picks them\)\)' -- "$p" view "$o/many"
  chrome --dump-dom "file://$o/many/view.html" 2> "$o/console" | grep -q '"runs":\["m1","m2","m3","m4","m5","m6","m7","m8"\]' &&
    ! grep -q CONSOLE "$o/console" && pass || fail "viewer: a dozen models' page (the sweep's first eight, in its order)"
  # a 2-pendulum: its page, and rollout.svg with all four coordinates (three before)
  "$p" run -q --epochs 1 --view --out "$o/p2" examples/pendulum2.phys > /dev/null 2>&1
  grep -q '>bob\[2\].y</text>' "$o/p2/rollout.svg" && grep -q '>bob\[2\].vy</text>' "$o/p2/phase.svg" &&
    grep -q -E 'phase portraits of test trajectory 0 \(its relative error [0-9.e-]+\)</text>' "$o/p2/phase.svg" &&
    grep -q -E '>constraint violation \|Phi\(t\)\|: mean [0-9.e-]+</text>' "$o/p2/violation.svg" && chrome --dump-dom "file://$o/p2/view.html#traj=2&t=1" 2> /dev/null > "$o/dom" &&
    /usr/bin/python3 tests/viewer_state.py "$o/dom" "$o/p2" && pass ||
    fail "viewer: the 2-pendulum's page, rollout.svg without bob[2].y, phase.svg without bob[2]'s portrait, or no violation.svg"
  # the gyroscope (a rigid body of points): the orientation error over time in errors.csv,
  # orientation.svg and the page's curves; gravity's arrow; its phase portraits
  "$p" run -q --epochs 1 --view --out "$o/gyro" --save-data "$o/gyro-data" examples/gyroscope.phys > /dev/null 2>&1
  metric_keys "viewer: gyroscope run" "$1" "$o/gyro/metrics.json" rigid
  head -1 "$o/gyro/errors.csv" | grep -q ',orientation_error,' &&
    grep -q -E '>true-to-model frame angle, summed over bodies: mean [0-9.e-]+</text>' "$o/gyro/orientation.svg" &&
    ! grep -q orientation_error "$o/p2/errors.csv" && [ ! -e "$o/p2/orientation.svg" ] && pass ||
    fail "viewer: the gyroscope's orientation error (errors.csv, orientation.svg), or one for the 2-pendulum"
  chrome --dump-dom "file://$o/gyro/view.html#traj=0&t=1.2&phase=2" 2> "$o/console" > "$o/dom"
  grep -q '"panels":\["rel_error","energy_rel_error","constraint_violation","orientation_error"\]' "$o/dom" &&
    grep -q '"gravity":\[0,0,-1\]' "$o/dom" && grep -q '"phase":{"rows":\[2,14\]' "$o/dom" && ! grep -q CONSOLE "$o/console" &&
    /usr/bin/python3 tests/viewer_state.py "$o/dom" "$o/gyro" "$o/gyro-data" && pass ||
    fail "viewer: the gyroscope's page (its curves with the orientation error, gravity, the phase portrait of top.z)"
  # a rigid body on SO(3) (Lie T2): drawn without a console error
  "$p" run -q --model forced_v --epochs 1 --out "$o/so3" tests/run/liet2.phys > /dev/null 2>&1
  "$p" view -q "$o/so3" && chrome --dump-dom "file://$o/so3/view.html#t=0.5" 2> "$o/console" | grep -q '"truth":\[\[' &&
    ! grep -q CONSOLE "$o/console" && pass || { fail "viewer: a Lie T2 run's page"; grep CONSOLE "$o/console" | head -3; }
  # a model's rollout that went non-finite (trajectory 0 from its 11th time on): drawn up to
  # there, and the page says so
  cp -r "$o/run" "$o/nan" && rm "$o/nan/view.html"
  /usr/bin/python3 -c '
import json, struct, sys
d = sys.argv[1]; sc = json.load(open(d + "/scene.json")); W, T = sc["rows"], sc["times"]
b = bytearray(open(d + "/rollouts.bin", "rb").read())
for k in range(10, T):
    for i in range(W): struct.pack_into("<f", b, ((k * 2 * W) + W + i) * 4, float("nan"))
open(d + "/rollouts.bin", "wb").write(b)' "$o/nan"
  "$p" view -q "$o/nan" && chrome --dump-dom "file://$o/nan/view.html#traj=0&t=0.6" 2> /dev/null > "$o/dom"
  grep -q '"model":\[null\]' "$o/dom" && grep -q 'the model.s rollout is not finite at this time' "$o/dom" &&
    chrome --dump-dom "file://$o/nan/view.html#traj=0&t=0.15" 2> /dev/null | grep -q '"model":\[\[\[' && pass ||
    fail "viewer: a non-finite rollout is not drawn up to where it was finite, or not said"
  # what it cannot show
  expect "view: not a run" 1 "is not a run's folder \\(no metrics.json\\)" -- "$p" view "$o"
  "$p" run -q --epochs 5 --stop-after 1 --out "$o/part" "$s" > /dev/null 2>&1
  expect "view: an unfinished run" 1 'holds an unfinished run .*physc run --resume --out' -- "$p" view "$o/part"
  cp -r "$o/run" "$o/old" && rm "$o/old/scene.json"
  expect "view: a run evaluated before scene.json" 1 'no scene.json and rollouts.bin .*evaluates it again' -- "$p" view "$o/old"
  cp -r "$o/run" "$o/cut" && rm "$o/cut/view.html" && truncate -s 1000 "$o/cut/rollouts.bin"
  expect "view: rollouts.bin cut short" 1 'rollouts.bin holds 1000 bytes where its scene.json says' -- "$p" view "$o/cut"
  [ ! -e "$o/cut/view.html" ] && pass || fail "view: a page was written from a cut rollouts.bin"
  expect "view: no folder" 2 'view needs a run.s folder' -- "$p" view
  expect "view: a file" 1 'is not a folder' -- "$p" view "$s"
}

# physc fmt: the examples and the standard library are formatted (--check); every .phys of the
# repository that parses is formatted idempotently, and only its whitespace changes (the
# layout cannot change what a file says: the lexer drops whitespace, and line ends are kept);
# a careless file comes out as tests/fmt/messy.expected (CRLF, tabs, blank lines, comments
# of three kinds); the files with syntax errors are refused untouched; the options.
fmt_layer() { # $1 = physc
  local p=$1 o=$tmp/fmt f bad="" n=0
  mkdir -p "$o"
  "$p" fmt --check examples/*.phys stdlib/*.phys > "$o/check" 2>&1 && [ ! -s "$o/check" ] && pass ||
    { fail "fmt --check: the examples and the stdlib are not formatted"; head -5 "$o/check"; }
  for f in $(find examples stdlib tests -name '*.phys' | sort); do
    "$p" fmt "$f" > "$o/once.phys" 2> /dev/null || continue
    n=$((n + 1))
    "$p" fmt "$o/once.phys" > "$o/twice.phys" 2> /dev/null
    cmp -s "$o/once.phys" "$o/twice.phys" || bad="$bad $f(not idempotent)"
    [ "$(tr -d ' \t\r\n' < "$f")" = "$(tr -d ' \t\r\n' < "$o/once.phys")" ] || bad="$bad $f(more than whitespace changed)"
  done
  [ "$n" -gt 150 ] && [ -z "$bad" ] && pass || fail "fmt on the repository's $n files that parse:$bad"
  "$p" fmt tests/fmt/messy.phys > "$o/messy" 2>&1 && cmp -s "$o/messy" tests/fmt/messy.expected && pass ||
    { fail "fmt: tests/fmt/messy.phys is not laid out as messy.expected"; diff "$o/messy" tests/fmt/messy.expected | head; }
  "$p" check tests/fmt/messy.expected > /dev/null 2>&1 && pass || fail "fmt: messy.expected does not check"
  cp tests/fmt/messy.phys "$o/w.phys"
  expect "fmt --check: a file not formatted" 1 "^$o/w.phys: not formatted \\(physc fmt -w $o/w.phys\\)" -- "$p" fmt --check "$o/w.phys"
  expect "fmt -w" 0 "^formatted $o/w.phys$" -- "$p" fmt -w "$o/w.phys"
  cmp -s "$o/w.phys" tests/fmt/messy.expected && pass || fail "fmt -w: the file is not messy.expected"
  "$p" fmt -w "$o/w.phys" > "$o/again" 2>&1 && [ ! -s "$o/again" ] && pass || fail "fmt -w wrote a formatted file again"
  cp tests/errors/syntax-unclosed-brace.phys "$o/broken.phys"
  expect "fmt: syntax errors" 1 'broken.phys:1:17: error: ' -- "$p" fmt -w "$o/broken.phys"
  grep -q 'broken.phys not formatted: it has syntax errors' "$tmp/o" && cmp -s "$o/broken.phys" tests/errors/syntax-unclosed-brace.phys &&
    pass || fail "fmt -w changed a file with syntax errors, or did not say it was not formatted"
  expect "fmt: -w and --check" 2 'two different jobs' -- "$p" fmt -w --check "$o/w.phys"
  expect "fmt: no file" 2 'fmt needs a .phys FILE' -- "$p" fmt
  expect "fmt: an unknown option" 2 "unknown option '--tabs'" -- "$p" fmt --tabs "$o/w.phys"
  expect "fmt: a missing file" 1 'fmt: .*nothing.phys: ' -- "$p" fmt "$o/nothing.phys"
}

# physc lsp: a scripted editor session (tests/lsp_session.py: diagnostics where the misspelled
# name is, with its suggestion; symbols; formatting as physc fmt; the fix clears the
# diagnostics; errors for what it does not answer and for a message that is not JSON; shutdown
# and exit 0), then every example, stdlib file, golden error input and their mutations as
# documents: each answered, none crashes it (under ASan too)
lsp_layer() { # $1 = physc
  if timeout 600 /usr/bin/python3 tests/lsp_session.py "$1" examples/*.phys stdlib/*.phys tests/errors/*.phys tests/fmt/messy.phys \
       > "$tmp/lsp" 2>&1; then pass; cat "$tmp/lsp"
  else fail "lsp: the scripted session"; tail -20 "$tmp/lsp"; fi
}

# The editors' TextMate grammar (editors/vscode) on every example, stdlib file and test program,
# with the engine VS Code runs (vscode-textmate, vscode-oniguruma: the README's set-up installs
# them from tests/editors/package-lock.json): the lexer's keywords, the builtins table's
# functions, numbers, strings and comments each in their scope (tests/editors/tokenize.js)
editors_layer() {
  if [ ! -d tests/editors/node_modules/vscode-textmate ] || ! command -v node > /dev/null; then
    fail "editors: node or tests/editors/node_modules missing (the README's set-up: npm ci --prefix tests/editors)"; return
  fi
  if node tests/editors/tokenize.js examples/*.phys stdlib/*.phys tests/run/*.phys tests/physics/*.phys tests/ir/*.phys \
       tests/fmt/*.phys > "$tmp/grammar" 2>&1; then pass; cat "$tmp/grammar"
  else fail "editors: the TextMate grammar's scopes"; head -20 "$tmp/grammar"; fi
}

# docs/tutorial.md as a reader runs it (tests/tutorial.py: its files written, its commands run
# in order, then the rod's error, its page and video, the CSV-trained run and the C program)
tutorial_layer() { # $1 = build dir
  if /usr/bin/python3 tests/tutorial.py docs/tutorial.md "$1" > "$tmp/tutorial" 2>&1; then pass; cat "$tmp/tutorial"
  else fail "the tutorial's commands"; tail -30 "$tmp/tutorial"; fi
}

# physc check --pedantic: each warning of tests/pedantic/*.phys where it is, in both forms
# (odd.phys: five kinds; fast.phys and hanging.phys: steps too long for the closed-form rates
# sqrt(k/m) = 20 and sqrt(g/l) = 6.26); none for the examples but rotor.phys's free body and
# the magnet pendulum's step (the paper's dt, 10x too long near a magnet), on purpose
pedantic_layer() { # $1 = physc
  local f p n=0
  for p in tests/pedantic/*.phys; do
    f=$(basename "$p" .phys)
    (cd tests/pedantic && "$root/$1" check --pedantic -q "$f.phys") > /dev/null 2> "$tmp/ped"
    grep -E '^[^ ]+:[0-9]+:[0-9]+: ' "$tmp/ped" > "$tmp/ped.got"
    diff -u "tests/pedantic/$f.expected" "$tmp/ped.got" > "$tmp/diff" &&
      grep -q "^$(wc -l < "tests/pedantic/$f.expected") warnings\?\$" "$tmp/ped" && pass ||
      { fail "check --pedantic: $f.phys's warnings"; cat "$tmp/diff"; }
    (cd tests/pedantic && "$root/$1" check --pedantic -q --diagnostics-format json "$f.phys") 2>&1 > /dev/null |
      /usr/bin/python3 tests/diag_json.py "tests/pedantic/$f.expected" > "$tmp/diff" 2>&1 && pass ||
      { fail "check --pedantic --diagnostics-format json: $f.phys"; head "$tmp/diff"; }
  done
  # a step that resolves the spring's motion: h omega = 0.5, no warning
  sed 's/steps 20 }/steps 20 }\ntrain { substeps 4 }/' tests/pedantic/fast.phys > "$tmp/resolved.phys"
  "$1" check --pedantic -q "$tmp/resolved.phys" > "$tmp/ped" 2>&1 && [ ! -s "$tmp/ped" ] && pass ||
    { fail "check --pedantic: the spring at 4 steps an interval"; head -3 "$tmp/ped"; }
  for f in examples/*.phys; do
    case "$f" in examples/rotor.phys | examples/magnet*.phys) continue ;; esac
    "$1" check --pedantic -q "$f" > /dev/null 2> "$tmp/ped" || n=$((n + 100))
    [ -s "$tmp/ped" ] && n=$((n + 1)) && head -3 "$tmp/ped"
  done
  [ "$n" -eq 0 ] && pass || fail "check --pedantic: warnings or errors on the examples"
  expect "check --pedantic: rotor's free body" 0 "rotor.phys:[0-9]+:3: warning: body 'rotor' is touched by no potential" -- \
    "$1" check --pedantic -q examples/rotor.phys
  for f in magnet magnet-code; do
    expect "check --pedantic: $f's step near a magnet" 0 "$f.phys:[0-9]+:35: warning: the training step h = 0.05 .* h omega = [0-9.]+, where omega = [0-9]{3} per time unit" -- \
      "$1" check --pedantic -q "examples/$f.phys"
  done
}

# physc emit-c --shared: a trained model of each family as a library with the C ABI of
# runtime/abi/physc_model.h, checked from Python (tests/abi/test_abi.py) against physc's own
# CSVs, bit for bit in a process that runs physc's OpenBLAS kernels; the header as C and C++
abi_layer() { # $1 = build dir
  local b=$1 d spec prog model core steps=20
  d=$(mktemp -d "$tmp/abi.XXXXXX")
  core=$("$b/physc" --version | sed -n 's/.*physc chose the \([A-Za-z0-9]*\) kernels.*/\1/p')
  for spec in tests/run/small.phys:chnn tests/run/small.phys:clnn tests/run/baselines.phys:hnn \
    tests/run/baselines.phys:hnnknown tests/run/baselines.phys:node tests/run/baselines.phys:delan \
    tests/run/baselines.phys:csonode \
    tests/abi/spring2.phys:proposed tests/run/dtlnn.phys:leapfrog tests/run/liet2.phys:liet2; do
    prog=${spec%:*} model=${spec#*:}
    if ! "$b/physc" run -q --epochs 2 --model "$model" --out "$d/$model" "$prog" > "$d/err" 2>&1 ||
       ! "$b/physc" emit-c -q --shared --model "$model" --params "$d/$model/params.bin" -o "$d/lib$model.so" \
         "$prog" >> "$d/err" 2>&1 ||
       ! "$b/physc" simulate --n 5 --steps $steps --out "$d/$model.truth.csv" "$prog" > /dev/null 2>> "$d/err" ||
       ! "$b/physc" simulate --model "$model" --params "$d/$model/params.bin" --n 5 --steps $steps \
         --out "$d/$model.jit.csv" "$prog" > /dev/null 2>> "$d/err"; then
      fail "emit-c --shared of the trained $model ($prog)"; head -20 "$d/err"; continue
    fi
    if env ${core:+OPENBLAS_CORETYPE=$core} /usr/bin/python3 tests/abi/test_abi.py "$d/lib$model.so" "$d/$model" \
         "$d/$model.truth.csv" "$d/$model.jit.csv" $steps bits > "$d/py.out" 2>&1; then pass
    else fail "the $model library from Python"; grep -v '^ok' "$d/py.out" | head -20; fi
  done
  # a CHNN in loop form (a 30-link chain): the rows' code as simulate's, so bit for bit too
  local c=tests/run/chain30.phys
  if "$b/physc" run -q --epochs 1 --kernels loop --model chnn --out "$d/chain" "$c" > "$d/err" 2>&1 &&
     "$b/physc" emit-c -q --shared --kernels loop --model chnn --params "$d/chain/params.bin" -o "$d/libchain.so" "$c" \
       >> "$d/err" 2>&1 &&
     "$b/physc" simulate --kernels loop --n 5 --steps $steps --out "$d/chain.truth.csv" "$c" > /dev/null 2>> "$d/err" &&
     "$b/physc" simulate --kernels loop --model chnn --params "$d/chain/params.bin" --n 5 --steps $steps \
       --out "$d/chain.jit.csv" "$c" > /dev/null 2>> "$d/err" &&
     env ${core:+OPENBLAS_CORETYPE=$core} /usr/bin/python3 tests/abi/test_abi.py "$d/libchain.so" "$d/chain" \
       "$d/chain.truth.csv" "$d/chain.jit.csv" $steps bits > "$d/py.out" 2>&1; then pass
  else fail "the library of a CHNN in loop form"; cat "$d/err"; grep -v '^ok' "$d/py.out" | head; fi
  # without physc's kernels (where OpenBLAS falls back on this CPU): a warning, and rounding only
  if [ -n "$core" ]; then
    /usr/bin/python3 tests/abi/test_abi.py "$d/libchnn.so" "$d/chnn" "$d/chnn.truth.csv" "$d/chnn.jit.csv" $steps \
      > "$d/py.out" 2>&1 && grep -q "set OPENBLAS_CORETYPE=$core" "$d/py.out" && pass ||
      { fail "the chnn library under OpenBLAS's own kernels"; grep -v '^ok' "$d/py.out" | head; }
  fi
  # a run's folder (load_run, the program's --set values replayed), two libraries, the client's ABI check
  sed 's/^const g = 9.81/param g = 9.81/' tests/run/small.phys > "$d/param.phys"
  local s2=tests/abi/spring2.phys
  if "$b/physc" run -q --epochs 2 --model chnn --out "$d/runp" --set g=9.5 "$d/param.phys" > "$d/err" 2>&1 &&
     "$b/physc" simulate --set g=9.5 --n 3 --steps 10 --out "$d/p.truth.csv" "$d/param.phys" > /dev/null 2>> "$d/err" &&
     "$b/physc" run -q --epochs 2 --precision f32 --out "$d/run32" "$s2" >> "$d/err" 2>&1 &&
     "$b/physc" simulate --n 3 --steps 10 --out "$d/s2.truth.csv" "$s2" > /dev/null 2>> "$d/err" &&
     "$b/physc" simulate --params "$d/run32/params.bin" --precision f32 --n 3 --steps 10 --out "$d/p32.jit.csv" "$s2" \
       > /dev/null 2>> "$d/err" &&
     "$b/physc" simulate --params "$d/run32/params.bin" --precision f64 --n 3 --steps 10 --out "$d/p64.jit.csv" "$s2" \
       > /dev/null 2>> "$d/err" &&
     PHYSC="$b/physc" env ${core:+OPENBLAS_CORETYPE=$core} /usr/bin/python3 tests/abi/test_client.py "$d" > "$d/py.out" 2>&1
  then pass; else fail "python/physc: load_run (f64 chnn, f32 dtlnn), two libraries, the ABI check"; cat "$d/err"; grep -v '^ok' "$d/py.out" | head; fi
  if grep -q '"predicts_in": "f32"' "$d/run32/metrics.json" && grep -q '"predicts_in": "f64"' "$d/runp/metrics.json"; then pass
  else fail "metrics.json: predicts_in"; fi
  expect "emit-c --precision f32 of a chnn" 2 'model chnn \(chnn\) rolls out in f64 whatever its training precision' -- \
    "$b/physc" emit-c --shared --precision f32 --model chnn --params "$d/chnn/params.bin" -o "$d/x.so" tests/run/small.phys
  # the header alone, as C and C++, pedantic
  cc -std=c99 -Wall -Wextra -pedantic -Werror -fsyntax-only -x c runtime/abi/physc_model.h > "$d/err" 2>&1 &&
    c++ -std=c++11 -Wall -Wextra -pedantic -Werror -fsyntax-only -x c++ runtime/abi/physc_model.h >> "$d/err" 2>&1 && pass ||
    { fail "physc_model.h as C and C++"; head "$d/err"; }
  # docs/python.md as a reader runs it
  if /usr/bin/python3 tests/python_doc.py docs/python.md "$b" > "$d/doc.out" 2>&1; then pass
  else fail "docs/python.md's blocks"; tail -20 "$d/doc.out"; fi
  expect "emit-c --shared without --params" 2 'needs --params' -- "$b/physc" emit-c --shared -o "$d/x.so" tests/run/small.phys
  expect "emit-c --shared into a missing folder" 1 'emit-c' -- "$b/physc" emit-c --shared --model chnn \
    --params "$d/chnn/params.bin" -o "$d/no/such/lib.so" tests/run/small.phys
}

run_layers() { # $1 = build dir, $2 = label
  local before=$failed
  timed "unit_layer on $2" unit_layer "$1"
  timed "errors_layer on $2" errors_layer "$1/physc"
  timed "examples_layer on $2" examples_layer "$1/physc"
  timed "ir_layer on $2" ir_layer "$1/physc"
  timed "cli_layer on $2" cli_layer "$1/physc"
  timed "hostile_layer on $2" hostile_layer "$1/physc"
  timed "malformed_layer on $2" malformed_layer "$1/physc"
  timed "run_layer on $2" run_layer "$1/physc"
  timed "baselines_layer on $2" baselines_layer "$1/physc"
  timed "compare_layer on $2" compare_layer "$1/physc"
  timed "outputs_layer on $2" outputs_layer "$1/physc"
  timed "lsp_layer on $2" lsp_layer "$1/physc"
  echo "layers on $2: done ($((failed - before)) failed)"
}

if [ -n "$only" ]; then
  eval "$only"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]; exit
fi
# The sanitizer pass (and the fuzzer) runs beside the plain one: most layers run one process
# at a time, so on two cores the second pass fills the idle core. It works in a scratch
# folder of its own (the layers' scratch names are fixed) and hands back its counts, its
# timings and its output through files, printed when the plain pass is done.
sanitizer_pass() {
  tmp=$tmp/sanitizer passed=0 failed=0 timings=""
  mkdir -p "$tmp"
  if [ -n "$asan" ]; then
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    run_layers "$asan" "$asan (ASan+UBSan)"
  fi
  if [ -n "$fuzz" ]; then
    if tests/fuzz/run.sh "$fuzz" "$fuzz_seconds" > "$tmp/fuzz.log" 2>&1; then
      pass; echo "fuzz: $(grep -E 'stat::number_of_executed_units' "$tmp/fuzz.log" | awk '{print $2}') inputs in ${fuzz_seconds}s, no crash"
    else
      fail "fuzzer found a crash"; tail -40 "$tmp/fuzz.log"
    fi
  fi
  echo "$passed $failed" > "$tmp/counts"
  printf '%s' "$timings" > "$tmp/timings"
}
sanitizer_pid=""
if [ -n "$asan$fuzz" ]; then
  sanitizer_pass > "$tmp/sanitizer.log" 2>&1 &
  sanitizer_pid=$!
  trap 'kill "$sanitizer_pid" 2> /dev/null; wait "$sanitizer_pid"; rm -rf "$tmp"' EXIT
fi
run_layers "$build" "$build"
timed failure_layer failure_layer "$build"
timed figures_layer figures_layer "$build"
timed emitc_layer emitc_layer "$build"
timed emitc_model_layer emitc_model_layer "$build"
timed abi_layer abi_layer "$build"
timed dtlnn_layer dtlnn_layer "$build"
timed liet2_layer liet2_layer "$build"
timed shards_layer shards_layer "$build"
timed mpi_layer mpi_layer "$build"
timed sweep_layer sweep_layer "$build"
timed viewer_layer viewer_layer "$build"
timed fmt_layer fmt_layer "$build/physc" # (under ASan too, through the fuzzer, which formats every input twice)
timed editors_layer editors_layer
timed tutorial_layer tutorial_layer "$build"
timed pedantic_layer pedantic_layer "$build/physc"
timed limits_layer limits_layer "$build"
timed e2e_layer e2e_layer "$build/physc"
timed readme_layer readme_layer
# the #include lines against the architecture's layers (tests/layers.sh)
if tests/layers.sh > "$tmp/layers.out" 2>&1; then pass; else fail "an include runs against the layers"; cat "$tmp/layers.out"; fi
if [ -n "$sanitizer_pid" ]; then
  wait "$sanitizer_pid"
  trap 'rm -rf "$tmp"' EXIT # ended: its pid is no longer ours to kill
  cat "$tmp/sanitizer.log"
  if [ -f "$tmp/sanitizer/counts" ]; then
    read -r sp sf < "$tmp/sanitizer/counts"
    passed=$((passed + sp)) failed=$((failed + sf))
    timings+=$(cat "$tmp/sanitizer/timings")$'\n'
  else
    fail "the sanitizer pass ended without its counts"
  fi
fi
echo "slowest layers (seconds):"
printf '%s' "$timings" | sort -rn | head -8 | sed 's/^/  /'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
