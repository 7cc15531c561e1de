#!/usr/bin/env bash
# .ci/build_time.py against made-up ninja logs: the slowest objects in order, the newest
# line of an output counting, the library's total against the budget (over it fails),
# and a malformed log refused.
set -euo pipefail
script="$(cd "$(dirname "$0")/.." && pwd)/.ci/build_time.py"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$dir/b"
printf '# ninja log v5\n' > "$dir/b/.ninja_log"
printf '0\t90000\t0\tlibmixt.so.p/kernels_cpu_unary.cpp.o\t1\n' >> "$dir/b/.ninja_log"
printf '0\t30000\t0\tlibmixt.so.p/kernels_cpu_binary.cpp.o\t2\n' >> "$dir/b/.ninja_log"
printf '0\t20000\t0\ttests/test_a.p/a.cpp.o\t3\n' >> "$dir/b/.ninja_log"
printf '0\t500\t0\tlibmixt.so\t4\n' >> "$dir/b/.ninja_log"
# A rebuild of unary: its newest time (10 s) replaces the 90 s.
printf '100\t10100\t0\tlibmixt.so.p/kernels_cpu_unary.cpp.o\t5\n' >> "$dir/b/.ninja_log"
echo '{"library_seconds": 45}' > "$dir/ok.json"
echo '{"library_seconds": 35}' > "$dir/tight.json"

out="$(python3 "$script" "$dir/b" --budget "$dir/ok.json" --top 2)" || fail "within budget but exit $?"
echo "$out"
first="$(echo "$out" | sed -n 2p)"; second="$(echo "$out" | sed -n 3p)"
[[ "$first" == *"30.0 s  libmixt.so.p/kernels_cpu_binary.cpp.o" ]] || fail "slowest first: $first"
[[ "$second" == *"20.0 s  tests/test_a.p/a.cpp.o" ]] || fail "second: $second"
[[ "$out" == *"library 40 s"* ]] || fail "library total 40 s expected"
[[ "$out" == *"tests 20 s"* ]] || fail "tests total 20 s expected"

set +e
python3 "$script" "$dir/b" --budget "$dir/tight.json" > "$dir/over.txt"; rc=$?
set -e
[ "$rc" = 1 ] || fail "over budget: exit $rc, expected 1"
grep -q "FAIL: the library's compiler time 40 s is over the budget of 35 s" "$dir/over.txt" || fail "over-budget message"

printf 'not a ninja log\n' > "$dir/b/.ninja_log"
set +e
python3 "$script" "$dir/b" --budget "$dir/ok.json" 2> "$dir/err.txt"; rc=$?
set -e
[ "$rc" = 2 ] || fail "malformed log: exit $rc, expected 2"
grep -q "not a ninja log" "$dir/err.txt" || fail "malformed-log message"
echo "build_time.py: all checks passed"
