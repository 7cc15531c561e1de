#!/usr/bin/env bash
# nvcc that also writes the dependency file ninja reads. Meson 1.0 (Debian 12) asks nvcc
# for none, so ninja never learnt which headers a .cu object includes, and editing one
# (reduce.cuh, convert.h, ...) left stale objects in an incremental build. For a compile
# (`-c ... -o OBJ`) this adds `-MD -MF OBJ.d`, the depfile meson names for ninja; anything
# else (the version probe, links) passes through unchanged. ccache, when installed,
# caches the compile (it restores the depfile on a hit).
#
# build.sh and tests/gpu/bundle.sh make it the CUDA compiler of a new build folder:
#   meson setup DIR $(kernels/cuda/nvcc-with-depfile.sh --native-file DIR) ...
# writes DIR/nvcc-native.ini (a meson machine file naming this script) and prints the
# `--native-file` option, or prints nothing where there is no nvcc (a CPU-only build).
set -euo pipefail

find_nvcc() {
  local n="${MIXT_REAL_NVCC:-$(command -v nvcc || true)}"
  if [ -z "$n" ] && [ -x /usr/local/cuda/bin/nvcc ]; then n=/usr/local/cuda/bin/nvcc; fi
  printf '%s' "$n"
}

if [ "${1:-}" = "--native-file" ]; then
  [ -n "$(find_nvcc)" ] || exit 0
  dir="$2"
  mkdir -p "$dir"
  self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
  printf "[binaries]\ncuda = '%s'\n" "$self" > "$dir/nvcc-native.ini"
  printf -- '--native-file %s\n' "$dir/nvcc-native.ini"
  exit 0
fi

real="$(find_nvcc)"
if [ -z "$real" ]; then
  echo "nvcc-with-depfile.sh: nvcc not found (set MIXT_REAL_NVCC)" >&2
  exit 127
fi

out="" compile=0 prev=""
for arg in "$@"; do
  [ "$prev" = "-o" ] && out="$arg"
  [ "$arg" = "-c" ] && compile=1
  prev="$arg"
done

if [ "$compile" = 1 ] && [ -n "$out" ]; then
  if command -v ccache >/dev/null 2>&1 && [ -z "${MIXT_NO_CCACHE:-}" ]; then
    exec ccache "$real" "$@" -MD -MF "$out.d"
  fi
  exec "$real" "$@" -MD -MF "$out.d"
fi
exec "$real" "$@"
