#!/usr/bin/env bash
# Tests tests/gpu/run.sh's own logic on a CPU machine against a fake bundle: programs
# that pass, skip (77), fail, or are missing; the demo twice with equal and with
# differing parameters; examples; a stand-in compute-sanitizer. Checks the table's
# statuses, that gpu-check.json is valid JSON with one entry per row, and the exit
# status (0 only when every group passed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
expect() {  # expect DESCRIPTION COMMAND...: one check
  if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

# make_bundle DIR DEMO_MODE: a fake bundle; DEMO_MODE same|differ decides the demo's parameters.
make_bundle() {
  local b=$1
  mkdir -p "$b/bin" "$b/lib"
  echo fake1234 > "$b/COMMIT"
  echo text > "$b/GPL-3"
  printf '#!/bin/sh\necho "All tests passed (12 assertions in 3 test cases)"\necho "All checks, 0 failures"\nexit 0\n' > "$b/bin/test_cuda_convert"
  printf '#!/bin/sh\necho "skipped: no GPU"\nexit 77\n' > "$b/bin/test_cuda_slice"
  printf '#!/bin/sh\necho "512 cases compared"\nexit 0\n' > "$b/bin/test_cuda_coverage"
  printf '#!/bin/sh\necho "boom"\nexit 3\n' > "$b/bin/test_cuda_training"
  # The demo writes its parameters to the file after --save-params.
  cat > "$b/bin/train_charlm" <<DEMO
#!/bin/sh
while [ \$# -gt 0 ]; do
  if [ "\$1" = --save-params ]; then
    if [ "$2" = same ]; then echo params > "\$2"; else date +%s%N > "\$2"; fi
  fi
  shift
done
echo "held-out loss 2.0"
DEMO
  printf '#!/bin/sh\n[ "$MIXT_EXAMPLE_DEVICE" = cuda ] || exit 9\nexit 0\n' > "$b/bin/example_ok"
  printf '#!/bin/sh\nexit 1\n' > "$b/bin/example_bad"
  printf '#!/bin/sh\nexit 0\n' > "$b/bin/mixt-bench"
  chmod +x "$b"/bin/*
}
printf '#!/bin/sh\n# a stand-in for compute-sanitizer: drops its options, runs the program\nwhile [ $# -gt 0 ]; do case $1 in --tool|--error-exitcode) shift 2 ;; *) break ;; esac; done\necho "ERROR SUMMARY: 0 errors"\nexec "$@"\n' > "$work/sanitizer"
chmod +x "$work/sanitizer"

run_check() {  # run_check DEMO_MODE: runs run.sh on a fresh fake bundle; output in $work/out-MODE
  local mode=$1
  make_bundle "$work/bundle-$mode" "$mode"
  mkdir -p "$work/out-$mode"
  OUT="$work/out-$mode" MIXT_COMPUTE_SANITIZER="$work/sanitizer" MIXT_GPU_CHECK_SECONDS=120 \
    bash "$here/run.sh" "$work/bundle-$mode" > "$work/stdout-$mode" 2>&1
  echo $? > "$work/rc-$mode"
}
run_check same
run_check differ
out=$work/stdout-same
row() { grep -E "^$1 " "$out" | tail -n 1; }

expect "a group that passes is PASS" grep -qE '^convert +PASS' "$out"
expect "a skip is not a pass on the GPU machine" grep -qE '^slice +SKIP' "$out"
expect "the coverage group keeps its details" grep -qE '^coverage +PASS .*512 cases compared' "$out"
expect "a failing program is FAIL with its exit status" grep -qE '^training +FAIL\(rc=3\)' "$out"
expect "a program not in the bundle is MISSING" grep -qE '^gemm +MISSING .*test_cuda_gemm is not in the bundle' "$out"
expect "equal demo parameters: determinism PASS" grep -qE '^determinism +PASS' "$out"
expect "differing demo parameters: determinism FAIL" grep -qE '^determinism +FAIL' "$work/stdout-differ"
expect "examples run with MIXT_EXAMPLE_DEVICE=cuda, failures named" \
  grep -qE '^examples +FAIL .*1/2 examples passed; failed: example_bad' "$out"
expect "the sanitizer groups ran through the stand-in" grep -qE '^racecheck +PASS' "$out"
expect "any non-pass group makes the exit status 1" test "$(cat "$work/rc-same")" = 1
expect "the summary table comes last" sh -c "tail -n 1 '$out' | grep -qE '^bench-gemm '"
expect "gpu-check.json is valid JSON with one entry per row and the bundle's commit" python3 - "$work/out-same/gpu-check.json" "$out" <<'PY'
import json, re, sys
doc = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read().split("== summary", 1)[1].splitlines()[2:]
rows = [l for l in table if l.strip()]
assert doc["commit"] == "fake1234", doc["commit"]
assert len(doc["groups"]) == len(rows), (len(doc["groups"]), len(rows))
for g, r in zip(doc["groups"], rows):
    assert r.startswith(g["group"] + " "), (g, r)
    assert r.split()[1] == g["status"], (g, r)
PY

# Every program passing: exit status 0.
b=$work/bundle-all
make_bundle "$b" same
for p in test_cuda_slice test_cuda_training example_bad; do printf '#!/bin/sh\nexit 0\n' > "$b/bin/$p"; done
for p in test_cuda_gemm test_cuda_rehearsal test_cuda_allocator test_cuda_scan_scatter test_cuda_sort \
         test_cuda_cross_entropy test_nccl_gpu; do
  printf '#!/bin/sh\nexit 0\n' > "$b/bin/$p"; chmod +x "$b/bin/$p"
done
mkdir -p "$work/out-all"
OUT="$work/out-all" MIXT_COMPUTE_SANITIZER="$work/sanitizer" bash "$here/run.sh" "$b" > "$work/stdout-all" 2>&1
rc=$?
expect "every group passing gives exit status 0" test "$rc" = 0
[ "$rc" = 0 ] || sed -n '/== summary/,$p' "$work/stdout-all"

# The bundle as it travels (BUNDLE.tar.xz): unpacked, then the same table.
make_bundle "$work/packed" same
(cd "$work" && tar -cJf packed.tar.xz packed)
rm -rf "$work/packed"
mkdir -p "$work/out-packed"
OUT="$work/out-packed" MIXT_COMPUTE_SANITIZER="$work/sanitizer" MIXT_GPU_CHECK_SECONDS=120 \
  bash "$here/run.sh" "$work/packed.tar.xz" > "$work/stdout-packed" 2>&1
expect "a .tar.xz bundle is unpacked and run" grep -qE '^convert +PASS' "$work/stdout-packed"
expect "the packed bundle's commit is read" grep -q 'bundle commit: fake1234' "$work/stdout-packed"

# Anything but a bundle is refused before a program runs (the examples' loop runs all of bin/).
mkdir -p "$work/empty"
(cd "$work" && tar -cJf empty.tar.xz empty)
for arg in "$work/no-such-bundle" "$work/empty" "$work/empty.tar.xz"; do
  OUT="$work/out-bad" bash "$here/run.sh" "$arg" > "$work/stdout-bad" 2>&1
  rc=$?
  expect "run.sh refuses $(basename "$arg") with exit status 2" test "$rc" = 2
  expect "run.sh names what it refused" grep -q "is not a bundle made by tests/gpu/bundle.sh" "$work/stdout-bad"
done

echo "$failures failures"
[ "$failures" = 0 ] || { sed -n '/== summary/,$p' "$out"; exit 1; }
