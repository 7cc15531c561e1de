// Unary elementwise ops on CUDA: the rows of MIXT_ELEMENTWISE_UNARY (math functions and
// their in-place forms, rounding, clamp, the bool-valued predicates), with the CPU's
// checks and attributes (run_elementwise, binary.cpp).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/kernels/common/elementwise_attrs.h>
#include <mixt/kernels/cuda/elementwise_launch.h>
#include <mixt/kernels/cuda/register.h>

namespace mixt::cuda {
namespace {

template <UnaryOp Op, EwRule Rule, uint32_t Set>
void unary_kernel(OpCall& c, DispatchKeySet) {
  run_elementwise(c, 1, Rule, Set, static_cast<int>(Op), [](const ElementwiseArgs& a, int op, cudaStream_t s) {
    return launch_unary(UnaryArgs{a, static_cast<UnaryOp>(op)}, s);
  });
}

}  // namespace

void register_unary_kernels() {
  using namespace dtypes;
#define MIXT_EW_REGISTER(name, inplace, Maker, Rule, Set) \
  register_elementwise(OpId::name, inplace, DispatchKey::CUDA, unary_kernel<UnaryOp::name, EwRule::Rule, Set>);
  MIXT_ELEMENTWISE_UNARY(MIXT_EW_REGISTER)
#undef MIXT_EW_REGISTER
}

}  // namespace mixt::cuda
