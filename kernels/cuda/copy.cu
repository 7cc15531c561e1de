// Device kernels of copy_ and fill_: a cast between any two dtypes with the CPU's
// conversion rules (kernels/common/convert_cast.h, narrowing with convert.cuh), through
// the elementwise loops (elementwise.cuh: vectorised, dense or strided), raw
// same-dtype moves of every dtype, and a raw fill.
#include <mixt/kernels/cuda/elementwise.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

// The value itself: the loop widens each source element to its opmath type (exact)
// and rounds it to the destination's on store, the steps of cast_value.
struct Identity {
  template <class M>
  __device__ __forceinline__ M operator()(M v) const {
    return v;
  }
};

// Launches the cast kernel for one (To, From) pair.
template <class To, class From>
cudaError_t launch_cast_typed(const CastArgs& a, cudaStream_t stream) {
  ElementwiseArgs e;
  e.layout = a.layout;
  e.out = a.dst;
  e.n_in = 1;
  e.in[0].data = a.src;
  return launch_elementwise<To>(e, Identity{}, stream, make_input<From>(e.in[0]));
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
  // (visit_dtype raises mixt::Error for an undefined dtype.)
  return visit_dtype(a.dst_dtype, "copy_", [&](auto to) {
    return visit_dtype(a.src_dtype, "copy_", [&](auto from) {
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
