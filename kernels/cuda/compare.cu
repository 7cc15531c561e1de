// Device side of the comparison and logical ops on CUDA: every row of
// MIXT_ELEMENTWISE_COMPARE (kernels/common/elementwise_ops.h), bool results, through the
// loops of elementwise.cuh.
#include <mixt/kernels/cuda/elementwise.cuh>

namespace mixt::cuda {

// The row launcher of the compare family (for MIXT_DEFINE_ELEMENTWISE_PART).
struct CompareRows {
  template <class Maker, EwRule Rule, uint32_t Set>
  static cudaError_t launch(const CompareArgs& a, cudaStream_t stream) {
    return visit_dtype<Set>(a.e.compute, "compare", [&](auto tag) {
      using T = typename decltype(tag)::type;
      return Maker::template with<T>(a.e.params, [&](auto f) {
        return launch_elementwise<bool>(a.e, f, stream, make_input<T>(a.e.in[0]), make_input<T>(a.e.in[1]));
      });
    });
  }
};

MIXT_DEFINE_ELEMENTWISE_PART(launch_compare, CompareArgs, CompareOp, MIXT_ELEMENTWISE_COMPARE, CompareRows,
                             kElementwiseDevicePart)

}  // namespace mixt::cuda
