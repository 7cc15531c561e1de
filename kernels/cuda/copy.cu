// Device kernels of copy_ and fill_: a cast between any two dtypes with the CPU's
// conversion rules (copy.cuh; the casts from the narrow floats are in copy_narrow.cu),
// raw same-dtype moves of every dtype, and a raw fill.
#include <mixt/kernels/cuda/copy.cuh>

namespace mixt::cuda {
namespace {

// Writes `value` to every element of operand 0 of `L`.
template <class U>
__global__ void fill_kernel(StridedLayout L, bool contiguous, char* dst, U value) {
  if (contiguous) {
    U* p = reinterpret_cast<U*>(dst);
    for (int64_t i = grid_start(); i < L.numel; i += grid_step()) p[i] = value;
  } else {
    for (int64_t i = grid_start(); i < L.numel; i += grid_step()) {
      int64_t off[1];
      element_offsets(L, i, off);
      *reinterpret_cast<U*>(dst + off[0]) = value;
    }
  }
}

}  // namespace

cudaError_t launch_cast(const CastArgs& a, cudaStream_t stream) {
  if (a.src_dtype == a.dst_dtype) {
    // A same-dtype copy moves bits: one unsigned type per width.
    switch (element_size(a.src_dtype)) {
      case 1: return launch_cast_typed<uint8_t, uint8_t>(a, stream);
      case 2: return launch_cast_typed<uint16_t, uint16_t>(a, stream);
      case 4: return launch_cast_typed<uint32_t, uint32_t>(a, stream);
      default: return launch_cast_typed<uint64_t, uint64_t>(a, stream);
    }
  }
  if (dtypes::contains(kCastNarrowSources, a.src_dtype)) return launch_cast_narrow_source(a, stream);
  return launch_cast_from<dtypes::kAll & ~kCastNarrowSources>(a, stream);
}

cudaError_t launch_fill(const LaunchLayout& layout, void* dst, int element_size, uint64_t bits, cudaStream_t s) {
  const StridedLayout& L = layout.layout;
  const bool dense = layout.contiguous;
  if (L.numel == 0) return cudaSuccess;
  char* p = static_cast<char*>(dst);
  const unsigned b = grid_for(L.numel);
  switch (element_size) {
    case 1: launch_kernel(fill_kernel<uint8_t>, {b, kBlockThreads, 0, s}, L, dense, p, static_cast<uint8_t>(bits)); break;
    case 2: launch_kernel(fill_kernel<uint16_t>, {b, kBlockThreads, 0, s}, L, dense, p, static_cast<uint16_t>(bits)); break;
    case 4: launch_kernel(fill_kernel<uint32_t>, {b, kBlockThreads, 0, s}, L, dense, p, static_cast<uint32_t>(bits)); break;
    case 8: launch_kernel(fill_kernel<uint64_t>, {b, kBlockThreads, 0, s}, L, dense, p, bits); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

namespace {
__global__ void empty_kernel() {}
}  // namespace

cudaError_t launch_empty(cudaStream_t s) {
  launch_kernel(empty_kernel, {1, 1, 0, s});
  return cudaGetLastError();
}

}  // namespace mixt::cuda
