// add / add_ / mul / mul_ on CUDA: prepare_elementwise does the checks, promotion,
// broadcasting and input casts; the kernel computes in opmath (float for the
// narrow floats) and rounds once on store. Floating dtypes only.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/elementwise.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>

namespace mixt::cuda {
namespace {

// The kernel of add, add_, mul and mul_ (`op` picks the functor).
template <BinaryOp op>
void binary_kernel(OpCall& c, DispatchKeySet) {
  Elementwise e = prepare_elementwise(c, 2, {ResultRule::Promote, dtypes::kFloating, /*keep_scalars=*/true});
  MIXT_CHECK_OP(e.device.is_cuda(), c, "the CUDA kernel got operands on {}", e.device);
  const Scalar alpha = op == BinaryOp::Add ? c.attrs.get<attrs::Alpha>().alpha : Scalar(1);
  MIXT_CHECK_OP(!alpha.is_bool(), c, "a bool alpha is only supported for bool results");
  const Tensor& out = e.out;
  if (out.numel() > 0) {
    const Shape no_dims;
    OperandGeometry geom[3] = {{&out.sizes(), &out.strides(), out.element_size()}, {}, {}};
    bool scalar[3] = {false, e.is_scalar[0], e.is_scalar[1]};
    BinaryArgs a;
    for (int k = 0; k < 2; ++k) {
      const Tensor& in = e.inputs[k];
      geom[k + 1] = scalar[k + 1] ? OperandGeometry{&no_dims, &no_dims, out.element_size()}
                                  : OperandGeometry{&in.sizes(), &in.strides(), in.element_size()};
      a.in[k] = scalar[k + 1] ? nullptr : in.data_ptr();
      a.is_scalar[k] = scalar[k + 1];
      a.scalar[k] = scalar[k + 1] ? e.scalars[k].to_double() : 0.0;
    }
    a.layout = make_launch_layout(out.sizes(), geom, scalar);
    a.out = out.data_ptr();
    a.dtype = e.compute;
    a.op = op;
    a.alpha = alpha.to_double();
    DeviceGuard guard(e.device.index(), op_name(c.op).data());
    check(launch_binary(a, current_native_stream(e.device.index())), op_name(c.op).data());
  }
  finish_elementwise(c, e);
}

}  // namespace

void register_binary_kernels() {
  register_kernel(OpId::add, DispatchKey::CUDA, binary_kernel<BinaryOp::Add>);
  register_kernel(OpId::add_, DispatchKey::CUDA, binary_kernel<BinaryOp::Add>);
  register_kernel(OpId::mul, DispatchKey::CUDA, binary_kernel<BinaryOp::Mul>);
  register_kernel(OpId::mul_, DispatchKey::CUDA, binary_kernel<BinaryOp::Mul>);
}

}  // namespace mixt::cuda
