// gelu_backward and silu_backward on CUDA (Note [Fused backward ops]): the CPU's checks,
// then one elementwise launch (activation_backward.cu) over the output and the two
// inputs as they are laid out (any strides; dense runs take the vector path).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/cuda/elementwise_launch.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>

namespace mixt::cuda {
namespace {

using backward_math::ActivationGrad;

void activation_backward_kernel(OpCall& c, DispatchKeySet) {
  check_activation_backward(c);
  const Tensor &g = c.in[0], &x = c.in[1];
  MIXT_CHECK_OP(x.is_cuda(), c, "the CUDA kernel got a tensor on {}", x.device());
  ActivationBackwardArgs a;
  a.op = c.op == OpId::silu_backward                                     ? ActivationGrad::Silu
         : c.attrs.get<attrs::Gelu>().approximate == GeluApprox::Tanh ? ActivationGrad::GeluTanh
                                                                        : ActivationGrad::GeluErf;
  Tensor out = make_empty(x.sizes(), x.dtype(), x.device());
  if (out.numel() > 0) {
    const OperandGeometry geom[3] = {{&out.sizes(), &out.strides(), out.element_size()},
                                     {&g.sizes(), &g.strides(), g.element_size()},
                                     {&x.sizes(), &x.strides(), x.element_size()}};
    a.e.layout = make_launch_layout(out.sizes(), geom);
    a.e.out = out.data_ptr();
    a.e.in[0].data = g.data_ptr();
    a.e.in[1].data = x.data_ptr();
    a.e.n_in = 2;
    a.e.compute = x.dtype();
    const int index = x.device().index();
    DeviceGuard guard(index, op_name(c.op).data());
    check(launch_activation_backward(a, current_native_stream(index)), op_name(c.op).data());
  }
  if (c.out[0].defined())
    c.out[0].copy_(out);
  else
    c.out[0] = out;
}

}  // namespace

void register_activation_backward_kernels() {
  register_kernel(OpId::gelu_backward, DispatchKey::CUDA, activation_backward_kernel);
  register_kernel(OpId::silu_backward, DispatchKey::CUDA, activation_backward_kernel);
}

}  // namespace mixt::cuda
