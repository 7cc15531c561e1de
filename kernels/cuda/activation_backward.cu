// Device side of gelu_backward and silu_backward (activation_backward.cpp): the
// elementwise loops of elementwise.cuh over (out, grad_output, self), each element
// computed by backward_math.h's formulas in opmath (float for the narrow floats), the
// functions the CPU's float64 path runs and the host tests check.
#include <mixt/kernels/common/backward_math.h>
#include <mixt/kernels/cuda/elementwise.cuh>

namespace mixt::cuda {
namespace {

using backward_math::ActivationGrad;

template <ActivationGrad kOp>
struct GradOf {
  template <class M>
  MIXT_HD M operator()(M g, M x) const {
    return backward_math::activation_grad(kOp, g, x);
  }
};

}  // namespace

cudaError_t launch_activation_backward(const ActivationBackwardArgs& a, cudaStream_t stream) {
  return visit_dtype<dtypes::kFloating>(a.e.compute, "activation_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Input<T> g = make_input<T>(a.e.in[0]), x = make_input<T>(a.e.in[1]);
    switch (a.op) {
      case ActivationGrad::GeluErf: return launch_elementwise<T>(a.e, GradOf<ActivationGrad::GeluErf>{}, stream, g, x);
      case ActivationGrad::GeluTanh: return launch_elementwise<T>(a.e, GradOf<ActivationGrad::GeluTanh>{}, stream, g, x);
      case ActivationGrad::Silu: return launch_elementwise<T>(a.e, GradOf<ActivationGrad::Silu>{}, stream, g, x);
    }
    return cudaErrorInvalidValue;
  });
}

}  // namespace mixt::cuda
