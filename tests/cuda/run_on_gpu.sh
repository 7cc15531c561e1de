#!/usr/bin/env bash
# Runs the prebuilt CUDA test binaries on a GPU machine (the lent H200 has no fmt,
# Catch2, OpenBLAS or MPI, so the binaries are built elsewhere, statically) and
# prints a short table at the end. Logs go to $OUT (or /tmp/mixt-gpu) when set.
#
# Building the binaries to carry (on the CPU machine, from the repository root):
#   meson setup build-cuda-static -Dcuda=enabled -Dstatic_deps=true -Ddefault_library=static \
#         -Dtests=true -Dbench=false -Dbuildtype=release
#   ninja -C build-cuda-static tests/cuda/test_cuda_slice tests/cuda/test_cuda_convert tests/cuda/test_cuda_coverage \
#         tests/cuda/test_cuda_rehearsal tests/cuda/test_cuda_allocator
#   mkdir -p gpu-bin && cp build-cuda-static/tests/cuda/test_cuda_{slice,convert,coverage,rehearsal,allocator} gpu-bin/
#   ldd gpu-bin/test_cuda_slice    # expect only libc, libstdc++, libm, libgcc_s, libgomp
#   cp "$(g++ -print-file-name=libgomp.so.1)" gpu-bin/   # in case the GPU machine lacks it
#   echo /gpu-bin/ >> .git/info/exclude                  # carried, not committed
# Then on the GPU machine (the device tool: carry ["gpu-bin"]):
#   bash tests/cuda/run_on_gpu.sh gpu-bin
#
# Usage: run_on_gpu.sh [BIN_DIR]   (default: gpu-bin). Exit status: 0 when every run passed
# (a SKIP counts as a failure here: on this machine the GPU must be usable).
# MIXT_REQUIRE_GPU=1 makes the binaries fail instead of skipping when CUDA cannot start.
export MIXT_REQUIRE_GPU=1
set -u

bin_dir=${1:-gpu-bin}
log_dir=${OUT:-/tmp/mixt-gpu}
mkdir -p "$log_dir"
# A libgomp carried beside the binaries is used only if the machine has none.
if [ -e "$bin_dir/libgomp.so.1" ] && ! ldconfig -p 2>/dev/null | grep -q 'libgomp.so.1 '; then
  export LD_LIBRARY_PATH="$bin_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4
for b in "$bin_dir"/test_cuda_*; do
  [ -x "$b" ] || continue
  echo "== ldd $(basename "$b")"
  ldd "$b" | grep -v -E 'linux-vdso|ld-linux' || true
done

rows=()
overall=0
# run NAME TIMEOUT CMD...: runs one check, logs it, records a table row.
run() {
  local name=$1 limit=$2
  shift 2
  local log="$log_dir/$name.log" start end rc status summary
  echo "== $name: $*"
  start=$(date +%s%N)
  timeout "$limit" "$@" >"$log" 2>&1
  rc=$?
  end=$(date +%s%N)
  tail -n 25 "$log"
  case $rc in
    0) status=PASS ;;
    77) status=SKIP ;;
    124) status=TIMEOUT ;;
    *) status="FAIL(rc=$rc)" ;;
  esac
  [ "$rc" -eq 0 ] || overall=1
  summary=$(grep -E 'checks, [0-9]+ failures|cases compared, [0-9]+ failures|ERROR SUMMARY' "$log" | tail -n 1)
  rows+=("$(printf '%-22s %-12s %7ss  %s' "$name" "$status" "$(((end - start) / 1000000000))" "$summary")")
}

slice="$bin_dir/test_cuda_slice"
convert="$bin_dir/test_cuda_convert"
[ -x "$convert" ] && run convert 300 "$convert"
if [ -x "$slice" ]; then
  run slice 400 "$slice"
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
  if [ -n "$sanitizer" ]; then
    MIXT_TEST_SMALL=1 run memcheck 400 "$sanitizer" --tool memcheck --error-exitcode 99 "$slice"
  else
    rows+=("memcheck               n/a          compute-sanitizer not found")
  fi
else
  rows+=("slice                  MISSING      $slice is not there")
  overall=1
fi
# run_binary NAME TIMEOUT: runs $bin_dir/test_cuda_NAME, or records it as missing.
run_binary() {
  local path="$bin_dir/test_cuda_$1"
  if [ -x "$path" ]; then
    run "$1" "$2" "$path"
  else
    rows+=("$(printf '%-22s %-12s %s' "$1" MISSING "$path is not there")")
    overall=1
  fi
}
# The op-coverage harness: every case on every dtype the CUDA kernels declare.
run_binary coverage 600
# CUDA's casting policy on the GPU against the same policy rehearsed on the CPU.
run_binary rehearsal 600
# Streams, events, record_stream, pinned memory and the caching allocator's statistics and errors.
run_binary allocator 300

echo
echo "== summary"
printf '%-22s %-12s %8s  %s\n' check status time details
printf '%s\n' "${rows[@]}"
exit $overall
