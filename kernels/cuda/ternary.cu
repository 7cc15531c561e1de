// Device side of the ternary ops on CUDA: every row of MIXT_ELEMENTWISE_TERNARY
// (kernels/common/elementwise_ops.h) through the loops of elementwise.cuh. where reads
// its condition as bool; lerp's weight may be a scalar (applied in opmath).
#include <mixt/kernels/cuda/elementwise.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

template <class Maker, EwRule Rule, uint32_t Set>
cudaError_t launch_row(const TernaryArgs& a, cudaStream_t stream) {
  return visit_dtype<Set>(a.e.compute, "ternary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Cond = std::conditional_t<Rule == EwRule::Where, bool, T>;
    return Maker::template with<T>(a.e.params, [&](auto f) {
      return launch_elementwise<T>(a.e, f, stream, make_input<Cond>(a.e.in[0]), make_input<T>(a.e.in[1]),
                                   make_input<T>(a.e.in[2]));
    });
  });
}

}  // namespace

cudaError_t launch_ternary(const TernaryArgs& a, cudaStream_t stream) {
  using namespace dtypes;
  switch (a.op) {
#define MIXT_EW_CASE(name, inplace, Maker, Rule, Set) \
  case TernaryOp::name: return launch_row<Maker, EwRule::Rule, Set>(a, stream);
    MIXT_ELEMENTWISE_TERNARY(MIXT_EW_CASE)
#undef MIXT_EW_CASE
  }
  return cudaErrorInvalidValue;
}

}  // namespace mixt::cuda
