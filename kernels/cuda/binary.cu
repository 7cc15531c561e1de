// Device side of the binary arithmetic ops on CUDA: every row of MIXT_ELEMENTWISE_BINARY
// (kernels/common/elementwise_ops.h) through the loops of elementwise.cuh. The functors
// are the CPU's; device code is compiled with --fmad=false, so a + alpha * b rounds
// twice on both backends (Note [FMA policy]). Integer division by zero and integer
// powers with negative exponents are reported through the device error word.
#include <mixt/kernels/cuda/elementwise.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

template <class Maker, EwRule Rule, uint32_t Set>
cudaError_t launch_row(const BinaryArgs& a, cudaStream_t stream) {
  return visit_dtype<Set>(a.e.compute, "binary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const Input<T> x = make_input<T>(a.e.in[0]), y = make_input<T>(a.e.in[1]);
    return Maker::template with<T>(a.e.params, [&](auto f) {
      if constexpr (Maker::kCheck != RhsCheck::None && functors::is_int_v<M>) {
        const CheckedRhs<decltype(f), M> checked{f, Maker::kCheck, a.e.error_word};
        return launch_elementwise<T>(a.e, checked, stream, x, y);
      } else {
        return launch_elementwise<T>(a.e, f, stream, x, y);
      }
    });
  });
}

}  // namespace

cudaError_t launch_binary(const BinaryArgs& a, cudaStream_t stream) {
  using namespace dtypes;
  switch (a.op) {
#define MIXT_EW_CASE(name, inplace, Maker, Rule, Set) \
  case BinaryOp::name: return launch_row<Maker, EwRule::Rule, Set>(a, stream);
    MIXT_ELEMENTWISE_BINARY(MIXT_EW_CASE)
#undef MIXT_EW_CASE
  }
  return cudaErrorInvalidValue;
}

}  // namespace mixt::cuda
