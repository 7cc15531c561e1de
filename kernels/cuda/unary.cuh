// Device side of the unary elementwise ops on CUDA: every row of MIXT_ELEMENTWISE_UNARY
// (kernels/common/elementwise_ops.h), instantiated for the dtypes of its row, through
// the loops of elementwise.cuh. The functors are the CPU's (kernels/common/functors.h).
// Split by dtype part (elementwise.cuh): unary.cu (kMainPart, and launch_unary, which
// picks the part), unary_half.cu (kHalfPart); float8 runs the float32 kernels (Note [Float8
// elementwise through float32], binary.cpp).
#pragma once

#include <mixt/kernels/cuda/elementwise.cuh>

namespace mixt::cuda {

// The row launcher of the unary family (for MIXT_DEFINE_ELEMENTWISE_PART).
struct UnaryRows {
  template <class Maker, EwRule Rule, uint32_t Set>
  static cudaError_t launch(const UnaryArgs& a, cudaStream_t stream) {
    if constexpr (Set == 0) {
      return cudaErrorInvalidValue;
    } else {
      return visit_dtype<Set>(a.e.compute, "unary", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Out = std::conditional_t<bool_result(Rule), bool, T>;
        return Maker::template with<T>(a.e.params, [&](auto f) {
          return launch_elementwise<Out>(a.e, f, stream, make_input<T>(a.e.in[0]));
        });
      });
    }
  }
};

cudaError_t launch_unary_main(const UnaryArgs& a, cudaStream_t stream);  // unary.cu
cudaError_t launch_unary_half(const UnaryArgs& a, cudaStream_t stream);  // unary_half.cu

}  // namespace mixt::cuda
