// Device side of the ternary ops on CUDA: every row of MIXT_ELEMENTWISE_TERNARY
// (kernels/common/elementwise_ops.h) through the loops of elementwise.cuh. where reads
// its condition as bool; lerp's weight may be a scalar (applied in opmath).
#include <mixt/kernels/cuda/elementwise.cuh>

namespace mixt::cuda {

// The row launcher of the ternary family (for MIXT_DEFINE_ELEMENTWISE_PART).
struct TernaryRows {
  template <class Maker, EwRule Rule, uint32_t Set>
  static cudaError_t launch(const TernaryArgs& a, cudaStream_t stream) {
    return visit_dtype<Set>(a.e.compute, "ternary", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Cond = std::conditional_t<Rule == EwRule::Where, bool, T>;
      return Maker::template with<T>(a.e.params, [&](auto f) {
        return launch_elementwise<T>(a.e, f, stream, make_input<Cond>(a.e.in[0]), make_input<T>(a.e.in[1]),
                                     make_input<T>(a.e.in[2]));
      });
    });
  }
};

MIXT_DEFINE_ELEMENTWISE_PART(launch_ternary, TernaryArgs, TernaryOp, MIXT_ELEMENTWISE_TERNARY, TernaryRows,
                             kElementwiseDevicePart)

}  // namespace mixt::cuda
