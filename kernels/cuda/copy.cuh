// Device side of the casts of copy_ (copy.cu): one elementwise kernel per (To, From)
// pair through the loops of elementwise.cuh (vectorised, dense or strided), with the
// CPU's conversion rules (kernels/common/convert.h, narrowing with convert.cuh). The
// pairs are split by source dtype: copy.cu (kMainPart sources), copy_narrow.cu (float16,
// bfloat16 and float8 sources), each compiling quickly.
#pragma once

#include <mixt/kernels/cuda/elementwise.cuh>

namespace mixt::cuda {

// The value itself: the loop widens each source element to its opmath type (exact)
// and rounds it to the destination's on store, the steps of convert.
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

// The cast for a source dtype in FromSet, to any other dtype (visit_dtype raises
// mixt::Error for a dtype outside the sets).
template <uint32_t FromSet>
cudaError_t launch_cast_from(const CastArgs& a, cudaStream_t stream) {
  return visit_dtype(a.dst_dtype, "copy_", [&](auto to) {
    return visit_dtype<FromSet>(a.src_dtype, "copy_", [&](auto from) {
      using To = typename decltype(to)::type;
      using From = typename decltype(from)::type;
      if constexpr (std::is_same_v<To, From>) return cudaErrorInvalidValue;  // moved as bits (launch_cast)
      else return launch_cast_typed<To, From>(a, stream);
    });
  });
}

constexpr uint32_t kCastNarrowSources = kHalfPart | kFp8Part;

// Casts from float16, bfloat16 and the float8 formats (copy_narrow.cu).
cudaError_t launch_cast_narrow_source(const CastArgs& a, cudaStream_t stream);

}  // namespace mixt::cuda
