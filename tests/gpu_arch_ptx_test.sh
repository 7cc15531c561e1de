#!/usr/bin/env bash
# gpu_arch_ptx_test.sh NVCC FLAG...: the build's -gencode flags (option gpu_arch) embed
# PTX as well as machine code, so the kernels load on GPUs other than the one the SASS
# was built for (the driver compiles the PTX); without it every launch fails there with
# "no kernel image is available". Reads nvcc's own plan (--dryrun): nothing is compiled.
set -euo pipefail
nvcc="$1"
shift
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo '__global__ void k() {}' > "$tmp/k.cu"
plan="$("$nvcc" --dryrun "$@" -c "$tmp/k.cu" -o "$tmp/k.o" 2>&1)"
if ! grep -q 'kind=ptx' <<<"$plan"; then
  echo "FAIL: gpu_arch ($*) embeds no PTX: add -gencode=arch=compute_XX,code=compute_XX" >&2
  exit 1
fi
echo "ok: gpu_arch ($*) embeds PTX"
