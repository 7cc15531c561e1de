// Device kernels of copy_ and fill_: a strided cast between the floating dtypes
// (plus raw same-dtype moves of every dtype) and a raw fill.
#include <mixt/kernels/cuda/convert.cuh>
#include <mixt/kernels/cuda/launch.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

// dst[i] = convert(src[i]) over one dense run.
template <class To, class From>
__global__ void cast_contiguous_kernel(int64_t n, To* __restrict__ dst, const From* __restrict__ src) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) dst[i] = fp_convert<To>(src[i]);
}

// dst = convert(src) over any strides (broadcast src included).
template <class To, class From>
__global__ void cast_strided_kernel(StridedLayout L, char* dst, const char* src) {
  for (int64_t i = grid_start(); i < L.numel; i += grid_step()) {
    int64_t off[2];
    element_offsets(L, i, off);
    *reinterpret_cast<To*>(dst + off[0]) = fp_convert<To>(*reinterpret_cast<const From*>(src + off[1]));
  }
}

// Launches the cast kernel for one (To, From) pair.
template <class To, class From>
cudaError_t launch_cast_typed(const CastArgs& a, cudaStream_t stream) {
  const StridedLayout& L = a.layout.layout;
  if (L.numel == 0) return cudaSuccess;
  const unsigned blocks = blocks_for(L.numel);
  if (a.layout.contiguous) {
    cast_contiguous_kernel<To, From><<<blocks, kBlockThreads, 0, stream>>>(
        L.numel, static_cast<To*>(a.dst), static_cast<const From*>(a.src));
  } else {
    cast_strided_kernel<To, From><<<blocks, kBlockThreads, 0, stream>>>(
        L, static_cast<char*>(a.dst), static_cast<const char*>(a.src));
  }
  return cudaGetLastError();
}

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
  // (visit_dtype raises mixt::Error for a pair the host code should have refused.)
  return visit_dtype<dtypes::kFloating>(a.dst_dtype, "copy_", [&](auto to) {
    return visit_dtype<dtypes::kFloating>(a.src_dtype, "copy_", [&](auto from) {
      using To = typename decltype(to)::type;
      using From = typename decltype(from)::type;
      if constexpr (std::is_same_v<To, From>) return cudaErrorInvalidValue;  // moved as bits above
      else return launch_cast_typed<To, From>(a, stream);
    });
  });
}

cudaError_t launch_fill(const LaunchLayout& layout, void* dst, int element_size, uint64_t bits, cudaStream_t s) {
  const StridedLayout& L = layout.layout;
  const bool dense = layout.contiguous;
  if (L.numel == 0) return cudaSuccess;
  char* p = static_cast<char*>(dst);
  const unsigned b = blocks_for(L.numel);
  switch (element_size) {
    case 1: fill_kernel<<<b, kBlockThreads, 0, s>>>(L, dense, p, static_cast<uint8_t>(bits)); break;
    case 2: fill_kernel<<<b, kBlockThreads, 0, s>>>(L, dense, p, static_cast<uint16_t>(bits)); break;
    case 4: fill_kernel<<<b, kBlockThreads, 0, s>>>(L, dense, p, static_cast<uint32_t>(bits)); break;
    case 8: fill_kernel<<<b, kBlockThreads, 0, s>>>(L, dense, p, bits); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace mixt::cuda
