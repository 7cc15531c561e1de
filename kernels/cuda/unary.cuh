// Device side of the unary elementwise ops on CUDA: every row of MIXT_ELEMENTWISE_UNARY
// (kernels/common/elementwise_ops.h), instantiated for the dtypes of its row, through
// the loops of elementwise.cuh. The functors are the CPU's (kernels/common/functors.h).
// The rows times their dtypes are too many kernels for one translation unit to compile
// quickly, so each of unary.cu, unary_half.cu and unary_fp8.cu instantiates the part of
// the dtypes in its mask (launch_unary_main, _half, _fp8), and launch_unary picks the part.
#pragma once

#include <mixt/kernels/cuda/elementwise.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {

// The dtype parts of the unary kernels, one translation unit each.
constexpr uint32_t kUnaryHalfPart = dtypes::bit(kFloat16) | dtypes::bit(kBFloat16);
constexpr uint32_t kUnaryFp8Part = dtypes::kFloat8;
constexpr uint32_t kUnaryMainPart = dtypes::kAll & ~kUnaryHalfPart & ~kUnaryFp8Part;

// launch_unary for compute dtypes of one part (others: cudaErrorInvalidValue).
cudaError_t launch_unary_main(const UnaryArgs& a, cudaStream_t stream);  // unary.cu
cudaError_t launch_unary_half(const UnaryArgs& a, cudaStream_t stream);  // unary_half.cu
cudaError_t launch_unary_fp8(const UnaryArgs& a, cudaStream_t stream);   // unary_fp8.cu

namespace unary_detail {

template <class Maker, EwRule Rule, uint32_t Set>
cudaError_t launch_row(const UnaryArgs& a, cudaStream_t stream) {
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

}  // namespace unary_detail

// Defines launcher `fn` for the dtypes of `Part` (in one .cu per part).
#define MIXT_DEFINE_UNARY_PART(fn, Part)                                                        \
  cudaError_t fn(const UnaryArgs& a, cudaStream_t stream) {                                     \
    using namespace dtypes;                                                                     \
    constexpr uint32_t kPart = Part;                                                            \
    if (!contains(kPart, a.e.compute)) return cudaErrorInvalidValue;                            \
    switch (a.op) {                                                                             \
      MIXT_ELEMENTWISE_UNARY(MIXT_UNARY_PART_CASE)                                              \
    }                                                                                           \
    return cudaErrorInvalidValue;                                                               \
  }
#define MIXT_UNARY_PART_CASE(name, inplace, Maker, Rule, Set) \
  case UnaryOp::name: return unary_detail::launch_row<Maker, EwRule::Rule, (Set) & kPart>(a, stream);

}  // namespace mixt::cuda
