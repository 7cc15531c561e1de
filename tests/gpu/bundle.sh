#!/usr/bin/env bash
# Builds the GPU check's bundle on a CPU machine (the GPU machine has no fmt, Catch2,
# OpenBLAS or MPI, and only minutes of time): release binaries of the CUDA tests, the
# docs examples, the demo and mixt-bench, linked against one libmixt.so that carries
# fmt and OpenBLAS inside it (-Dstatic_deps=true), so the bundle needs only libc,
# libstdc++, libgomp and the CUDA libraries of the GPU machine (cuBLAS, cuBLASLt, NCCL
# are found there by run.sh). The result is a folder (libmixt.so alone is about 60 MiB:
# the device code of every kernel) and the same folder as OUT_DIR.tar.xz (about 6 MiB),
# which is what travels: a device call carries at most 64 MiB.
#
#   tests/gpu/bundle.sh [OUT_DIR]      (default: gpu-bundle; BUILD_DIR default: build-gpu-bundle)
# Then, on the GPU machine (the device tool: carry ["gpu-bundle.tar.xz"]):
#   bash tests/gpu/run.sh gpu-bundle.tar.xz
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-bundle}
build=${BUILD_DIR:-build-gpu-bundle}
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
if [ ! -f "$build/build.ninja" ]; then
  # shellcheck disable=SC2046
  meson setup "$build" $(kernels/cuda/nvcc-with-depfile.sh --native-file "$build") -Dcuda=enabled -Dstatic_deps=true -Ddefault_library=shared -Dtests=true -Dbench=true \
    -Dbuildtype=release -Dmpi=disabled
fi

# Every CUDA test program, the NCCL test, the docs examples (but the MPI one), the demo and the benchmark.
mapfile -t targets < <(meson introspect "$build" --targets | python3 -c '
import json, os, sys
root = os.path.realpath(sys.argv[1])
for t in json.load(sys.stdin):
    name, where = t["name"], t["defined_in"]
    wanted = (name.startswith("test_cuda_") or name == "test_nccl_gpu" or name == "mixt-bench"
              or (where.endswith("docs/meson.build") and name != "train_ddp"))
    if t["type"] == "executable" and wanted:
        print(os.path.relpath(t["filename"][0], root))' "$build")
ninja -C "$build" "${targets[@]}"

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
for t in "${targets[@]}"; do
  [ -f "$build/$t" ] && cp "$build/$t" "$out/bin/"
done
cp "$build"/libmixt.so* "$out/lib/" 2>/dev/null || true
cp "$build"/distributed/libmixt_distributed.so* "$out/lib/" 2>/dev/null || true
cp "$(g++ -print-file-name=libgomp.so.1)" "$out/lib/"  # in case the GPU machine lacks it
cp bench/torch_gemm.py "$out/bin/" 2>/dev/null || true
cp /usr/share/common-licenses/GPL-3 "$out/GPL-3"  # the demo's text (the GPU machine may not have it)
strip --strip-unneeded "$out"/bin/* "$out"/lib/*.so* 2>/dev/null || true
git rev-parse --short HEAD > "$out/COMMIT" 2>/dev/null || echo unknown > "$out/COMMIT"

echo "== what the binaries need (expect libc, libstdc++, libm, libgcc_s, libgomp, libmixt*, CUDA libraries)"
LD_LIBRARY_PATH="$out/lib" ldd "$out/bin/test_cuda_slice" | grep -v -E 'linux-vdso|ld-linux' || true
tar -cJf "$out.tar.xz" -C "$(dirname "$out")" "$(basename "$out")"
size=$(stat -c %s "$out.tar.xz")
echo "bundle: $out ($(du -sm "$out" | cut -f1) MiB, $(ls "$out/bin" | wc -l) programs) and $out.tar.xz ($((size / 1048576)) MiB)"
if [ "$size" -gt $((60 * 1048576)) ]; then
  echo "$out.tar.xz is over 60 MiB: it may not fit the 64 MiB a device call carries" >&2
  exit 1
fi
