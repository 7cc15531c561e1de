#!/usr/bin/env bash
# The one-call GPU check: runs the bundle that tests/gpu/bundle.sh built on a CPU
# machine, on a GPU machine, in under 8 minutes, and prints one table last (pass/fail
# per group, figures); the same table goes to $OUT/gpu-check.json (or /tmp/mixt-gpu).
#
#   bash tests/gpu/run.sh [BUNDLE_DIR | BUNDLE.tar.xz]   (default: gpu-bundle)
# Groups: the host-run conversion rules; the CUDA slice; the op-coverage harness on CUDA
# against the CPU reference for every op x dtype; the GEMM engine; CUDA's autocast policy
# against its CPU rehearsal; streams and the caching allocator; training on CUDA
# (autograd, fused optimizers, grad scaler, determinism); NCCL; the demo's first steps
# (twice, --deterministic: the parameters must match bit for bit); every docs example
# with CUDA as the default device; compute-sanitizer (memcheck on the slice and the
# training test, racecheck and synccheck on the reduction and multi-tensor kernels);
# mixt-bench kernels and gemm (side by side with PyTorch when it is there).
# Exit status: 0 when every group passed (a SKIP is a failure here: the GPU must be usable).
export MIXT_REQUIRE_GPU=1
set -u

bundle=${1:-gpu-bundle}
# The bundle travels as BUNDLE.tar.xz (tests/gpu/bundle.sh): unpack it into a scratch folder.
if [ -f "$bundle" ] && [[ $bundle == *.tar.xz ]]; then
  unpack_dir=$(mktemp -d "${TMPDIR:-/tmp}/mixt-gpu-bundle.XXXXXX")
  trap 'rm -rf "$unpack_dir"' EXIT
  tar -xJf "$bundle" -C "$unpack_dir" || { echo "cannot unpack $bundle" >&2; exit 2; }
  bundle=$(find "$unpack_dir" -mindepth 1 -maxdepth 1 -type d | head -n 1)
fi
bin=$bundle/bin
# Every program under bin/ is run (the examples' loop): refuse anything but a bundle.
if [ -z "$bundle" ] || [ ! -d "$bin" ] || [ ! -f "$bundle/COMMIT" ]; then
  echo "run.sh: '${1:-gpu-bundle}' is not a bundle made by tests/gpu/bundle.sh (no bin/ and COMMIT)" >&2
  exit 2
fi
log_dir=${OUT:-/tmp/mixt-gpu}
mkdir -p "$log_dir"
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# cuBLAS/cuBLASLt/NCCL: the toolkit's, else those of the Python wheels (nvidia-*-cu13) the machine has.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(python3 -c 'import nvidia, os, glob; print(" ".join(glob.glob(os.path.join(list(nvidia.__path__)[0], "*", "lib"))))' 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
budget_end=$(( $(date +%s) + ${MIXT_GPU_CHECK_SECONDS:-460} ))

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2
echo "bundle commit: $(cat "$bundle/COMMIT" 2>/dev/null || echo unknown)"
echo "== ldd test_cuda_slice"
ldd "$bin/test_cuda_slice" 2>&1 | grep -v -E 'linux-vdso|ld-linux'

rows=()
json=()
overall=0
# record NAME STATUS SECONDS DETAILS: one row of the table and of the JSON file.
record() {
  rows+=("$(printf '%-22s %-14s %5ss  %s' "$1" "$2" "$3" "$4")")
  local d=${4//\\/\\\\}
  json+=("{\"group\": \"$1\", \"status\": \"$2\", \"seconds\": $3, \"details\": \"${d//\"/\\\"}\"}")
  [ "$2" = PASS ] || overall=1
}
# run NAME TIMEOUT CMD...: runs one group (within what is left of the budget), logs it, records its row.
run() {
  local name=$1 limit=$2
  shift 2
  local left=$((budget_end - $(date +%s)))
  if [ "$left" -le 5 ]; then record "$name" NOT-RUN 0 "out of time"; return; fi
  [ "$limit" -gt "$left" ] && limit=$left
  local log="$log_dir/$name.log" start rc status
  echo "== $name: $*"
  start=$(date +%s)
  timeout "$limit" "$@" >"$log" 2>&1
  rc=$?
  tail -n 15 "$log"
  case $rc in
    0) status=PASS ;;
    77) status=SKIP ;;
    124) status=TIMEOUT ;;
    *) status="FAIL(rc=$rc)" ;;
  esac
  record "$name" "$status" $(($(date +%s) - start)) \
    "$(grep -E 'checks, [0-9]+ failures|cases compared|ERROR SUMMARY|RACECHECK SUMMARY|examples passed|geomean|held-out' "$log" | tail -n 1)"
}
# present NAME TIMEOUT PROGRAM [ARGS...]: `run` when the program is in the bundle, else a MISSING row.
present() {
  if [ -x "$bin/$3" ]; then
    local name=$1 limit=$2 prog=$3
    shift 3
    run "$name" "$limit" "$bin/$prog" "$@"
  else
    record "$1" MISSING 0 "$3 is not in the bundle"
  fi
}

present convert 60 test_cuda_convert
present slice 120 test_cuda_slice
present coverage 240 test_cuda_coverage
present gemm 180 test_cuda_gemm
present rehearsal 180 test_cuda_rehearsal
present allocator 90 test_cuda_allocator
present training 120 test_cuda_training
present scan_scatter 120 test_cuda_scan_scatter
present sort 120 test_cuda_sort
present cross_entropy 90 test_cuda_cross_entropy
present nccl 90 test_nccl_gpu

# The demo's first steps on the GPU, twice with --deterministic: the same parameters, bit for bit.
if [ -x "$bin/train_charlm" ]; then
  present demo 120 train_charlm "$bundle/GPL-3" --device cuda --steps 30 --seconds 60 --deterministic --save-params "$log_dir/demo-a.safetensors"
  present demo-again 120 train_charlm "$bundle/GPL-3" --device cuda --steps 30 --seconds 60 --deterministic --save-params "$log_dir/demo-b.safetensors"
  if cmp -s "$log_dir/demo-a.safetensors" "$log_dir/demo-b.safetensors"; then
    record determinism PASS 0 "two demo runs: identical parameters"
  else
    record determinism FAIL 0 "two demo runs: parameters differ (or a run failed)"
  fi
fi

# Every docs example with CUDA as the default device of its factories (example_support.h).
examples_ok=0; examples_n=0; examples_failed=""
examples_start=$(date +%s)
for e in "$bin"/*; do
  name=$(basename "$e")
  case $name in test_*|mixt-bench|train_charlm|*.py) continue ;; esac
  [ -x "$e" ] || continue
  examples_n=$((examples_n + 1))
  if MIXT_EXAMPLE_DEVICE=cuda timeout 60 "$e" >"$log_dir/example-$name.log" 2>&1; then
    examples_ok=$((examples_ok + 1))
  else
    examples_failed="$examples_failed $name"
  fi
done
record examples "$([ "$examples_ok" -eq "$examples_n" ] && echo PASS || echo FAIL)" $(($(date +%s) - examples_start)) \
  "$examples_ok/$examples_n examples passed${examples_failed:+; failed:$examples_failed}"

# MIXT_COMPUTE_SANITIZER names another sanitizer program (the script's own test uses a stand-in).
sanitizer=${MIXT_COMPUTE_SANITIZER:-$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)}
if [ -n "$sanitizer" ]; then
  MIXT_TEST_SMALL=1 run memcheck-slice 120 "$sanitizer" --tool memcheck --error-exitcode 99 "$bin/test_cuda_slice"
  run memcheck-training 180 "$sanitizer" --tool memcheck --error-exitcode 99 "$bin/test_cuda_training"
  # The reduction and multi-tensor kernels (coverage cases whose op names start with these).
  kernels=(sum mean var std norm logsumexp amax argmax cumsum softmax log_softmax layer_norm rms_norm cross_entropy_rows
           amp_unscale_check_ amp_update_scale_ adam_step_ sgd_step_ scatter_add embedding)
  run racecheck 120 "$sanitizer" --tool racecheck --error-exitcode 99 "$bin/test_cuda_coverage" "${kernels[@]}"
  run synccheck 120 "$sanitizer" --tool synccheck --error-exitcode 99 "$bin/test_cuda_coverage" "${kernels[@]}"
else
  record sanitizer n/a 0 "compute-sanitizer not found"
fi

present bench-kernels 90 mixt-bench kernels --device cuda --json "$log_dir/bench-kernels.json"
torch_flag=()
python3 -c 'import torch' 2>/dev/null && torch_flag=(--torch)
present bench-gemm 150 mixt-bench gemm --device cuda "${torch_flag[@]}" --json "$log_dir/bench-gemm.json" \
  --csv "$log_dir/bench-gemm.csv"

{
  echo "{\"commit\": \"$(cat "$bundle/COMMIT" 2>/dev/null || echo unknown)\", \"date\": \"$(date -u +%FT%TZ)\", \"groups\": ["
  for i in "${!json[@]}"; do
    [ "$i" -gt 0 ] && echo ","
    printf '  %s' "${json[$i]}"
  done
  echo
  echo "]}"
} >"$log_dir/gpu-check.json"

echo
echo "== summary (logs and gpu-check.json in $log_dir)"
printf '%-22s %-14s %6s  %s\n' group status time details
printf '%s\n' "${rows[@]}"
exit $overall
