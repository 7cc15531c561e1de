#!/usr/bin/env bash
# Runs the prebuilt CUDA test binaries on a GPU machine (the lent H200 has no fmt,
# Catch2, OpenBLAS or MPI, so the binaries are built elsewhere, statically) and
# prints a short table at the end. Logs go to $OUT (or /tmp/mixt-gpu) when set.
#
# Building the binaries to carry (on the CPU machine, from the repository root):
#   meson setup build-cuda-static -Dcuda=enabled -Dstatic_deps=true -Ddefault_library=static \
#         -Dtests=true -Dbench=false -Dbuildtype=release -Dmpi=disabled
#   ninja -C build-cuda-static tests/cuda/test_cuda_slice tests/cuda/test_cuda_convert tests/cuda/test_cuda_coverage \
#         tests/cuda/test_cuda_rehearsal tests/cuda/test_cuda_allocator tests/distributed/test_nccl_gpu
#   mkdir -p gpu-bin && cp build-cuda-static/tests/cuda/test_cuda_{slice,convert,coverage,rehearsal,allocator} gpu-bin/
#   cp build-cuda-static/tests/distributed/test_nccl_gpu gpu-bin/
#   ldd gpu-bin/test_cuda_slice    # expect only libc, libstdc++, libm, libgcc_s, libgomp
#   ldd gpu-bin/test_nccl_gpu      # the same, and libnccl.so.2 (NCCL is linked dynamically: the toolkit has
#                                  # no static NCCL, and its 200 MB do not travel; found on the GPU machine below)
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

# test_nccl_gpu needs libnccl.so.2: the system's, else the one of the NCCL wheel the
# machine's Python has (nvidia-nccl-cu13), else one carried beside the binaries.
if ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2 '; then
  nccl_dir=""
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           "$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)" \
           "$bin_dir"; do
    if [ -n "$d" ] && [ -e "$d/libnccl.so.2" ]; then nccl_dir=$d; break; fi
  done
  [ -n "$nccl_dir" ] && export LD_LIBRARY_PATH="$nccl_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "libnccl.so.2 from: ${nccl_dir:-nowhere (test_nccl_gpu will not start)}"
fi

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4
for b in "$bin_dir"/test_cuda_* "$bin_dir"/test_nccl_*; do
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
# run_present NAME TIMEOUT BINARY: runs BINARY like `run`, or records it as missing.
run_present() {
  if [ -x "$3" ]; then
    run "$1" "$2" "$3"
  else
    rows+=("$(printf '%-22s %-12s %s is not there' "$1" MISSING "$3")")
    overall=1
  fi
}
# The op-coverage harness: every case on every dtype the CUDA kernels declare.
run_present coverage 600 "$coverage"
# CUDA's casting policy on the GPU against the same policy rehearsed on the CPU.
run_present rehearsal 600 "$bin_dir/test_cuda_rehearsal"
# Streams, events, record_stream, pinned memory and the caching allocator's statistics and errors.
run_present allocator 300 "$bin_dir/test_cuda_allocator"
# The NCCL backend at world size 1: every collective against the CPU, the timeout, bandwidth.
run_present nccl 300 "$bin_dir/test_nccl_gpu"

echo
echo "== summary"
printf '%-22s %-12s %8s  %s\n' check status time details
printf '%s\n' "${rows[@]}"
exit $overall
