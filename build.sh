#!/usr/bin/env bash
# Sets up a Debian machine (installs missing packages with apt-get), builds mixt
# and runs the demo or the test suite.
#   ./build.sh demo    build the library and the demo only, then run the demo (the training
#                      demo; extra args go to it)
#   ./build.sh test    build everything, then run every test suite (CUDA tests skip without a GPU)
# Environment: BUILD_DIR (default: build), MESON_ARGS (extra `meson setup` options).
set -euo pipefail
cd "$(dirname "$0")"

# cmake: the install test builds an application through mixt's CMake package.
# ccache: meson uses it for C++ when installed, and so does the nvcc wrapper for .cu
# files, so a second build of the same sources (another folder, a clean clone) is quick.
packages=(meson ninja-build g++ pkg-config catch2 libfmt-dev libopenblas-dev
          libopenmpi-dev openmpi-bin nlohmann-json3-dev libdlpack-dev xz-utils
          libboost-context-dev cmake libhwy-dev ccache)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ccache caches the compiles that use libmixt's precompiled header only with this sloppiness.
export CCACHE_SLOPPINESS="pch_defines,time_macros${CCACHE_SLOPPINESS:+,$CCACHE_SLOPPINESS}"

# The CUDA backend is built when nvcc is found (it runs only where a GPU is).
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"

build_dir="${BUILD_DIR:-build}"
if [ ! -f "$build_dir/build.ninja" ]; then
  # nvcc through kernels/cuda/nvcc-with-depfile.sh, so ninja knows the headers of each .cu object.
  # shellcheck disable=SC2086
  meson setup "$build_dir" $(kernels/cuda/nvcc-with-depfile.sh --native-file "$build_dir") ${MESON_ARGS:-}
fi

case "${1:-}" in
  # The demo needs the library and its own program, not the test suites and benchmarks.
  demo) shift; ninja -C "$build_dir" docs/train_charlm; "$build_dir/docs/train_charlm" "$@" ;;
  test) ninja -C "$build_dir"; meson test -C "$build_dir" --print-errorlogs --num-processes 2 ;;
  *) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac
