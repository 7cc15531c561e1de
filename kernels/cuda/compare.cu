// Device side of the comparison and logical ops on CUDA: every row of
// MIXT_ELEMENTWISE_COMPARE (kernels/common/elementwise_ops.h), bool results, through the
// loops of elementwise.cuh.
#include <mixt/kernels/cuda/elementwise.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

template <class Maker, EwRule Rule, uint32_t Set>
cudaError_t launch_row(const CompareArgs& a, cudaStream_t stream) {
  return visit_dtype<Set>(a.e.compute, "compare", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return Maker::template with<T>(a.e.params, [&](auto f) {
      return launch_elementwise<bool>(a.e, f, stream, make_input<T>(a.e.in[0]), make_input<T>(a.e.in[1]));
    });
  });
}

}  // namespace

cudaError_t launch_compare(const CompareArgs& a, cudaStream_t stream) {
  using namespace dtypes;
  switch (a.op) {
#define MIXT_EW_CASE(name, inplace, Maker, Rule, Set) \
  case CompareOp::name: return launch_row<Maker, EwRule::Rule, Set>(a, stream);
    MIXT_ELEMENTWISE_COMPARE(MIXT_EW_CASE)
#undef MIXT_EW_CASE
  }
  return cudaErrorInvalidValue;
}

}  // namespace mixt::cuda
