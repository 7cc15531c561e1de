// Comparison (eq, ne, lt, le, gt, ge) and logical (and, or, xor) ops on CUDA: the rows
// of MIXT_ELEMENTWISE_COMPARE, bool results, with the CPU's planning (run_elementwise,
// binary.cpp): comparisons in the promoted dtype with wrapped scalars rounded to it.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/kernels/common/elementwise_attrs.h>
#include <mixt/kernels/cuda/elementwise_launch.h>
#include <mixt/kernels/cuda/register.h>

namespace mixt::cuda {
namespace {

template <CompareOp Op, EwRule Rule, uint32_t Set>
void compare_kernel(OpCall& c, DispatchKeySet) {
  run_elementwise(c, 2, Rule, Set, static_cast<int>(Op), [](const ElementwiseArgs& a, int op, cudaStream_t s) {
    return launch_compare(CompareArgs{a, static_cast<CompareOp>(op)}, s);
  });
}

}  // namespace

void register_compare_kernels() {
  using namespace dtypes;
#define MIXT_EW_REGISTER(name, inplace, Maker, Rule, Set) \
  register_elementwise(OpId::name, inplace, DispatchKey::CUDA, compare_kernel<CompareOp::name, EwRule::Rule, Set>);
  MIXT_ELEMENTWISE_COMPARE(MIXT_EW_REGISTER)
#undef MIXT_EW_REGISTER
}

}  // namespace mixt::cuda
