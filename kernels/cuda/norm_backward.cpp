// layer_norm_backward and rms_norm_backward on CUDA (Note [Fused backward ops]): the
// CPU's checks (plan_norm_backward) and outputs (grad_x in x's dtype, grad_weight and
// grad_bias in the accumulate type, each only when asked for); the device kernels are in
// norm_backward.cu.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/backward_math.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/reduce_launch.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {
namespace {

void set_output(OpCall& c, size_t i, const Tensor& t) {
  if (!t.defined()) return;
  if (c.out[i].defined()) c.out[i].copy_(t);
  else c.out[i] = t;
}

const void* data_or_null(const Tensor& t) { return t.defined() && t.numel() > 0 ? t.data_ptr() : nullptr; }
void* data_or_null(Tensor& t) { return t.defined() && t.numel() > 0 ? t.data_ptr() : nullptr; }

void norm_backward_kernel(OpCall& c, DispatchKeySet) {
  const NormBackwardPlan p = plan_norm_backward(c);
  MIXT_CHECK_OP(c.in[1].is_cuda(), c, "the CUDA kernel got a tensor on {}", c.in[1].device());
  const Tensor g = contiguous(c.in[0]), x = contiguous(c.in[1]);
  const Tensor mean = p.layer ? contiguous(c.in[2]) : Tensor(), rstd = contiguous(c.in[p.layer ? 3 : 2]);
  const Tensor weight = p.weight >= 0 ? contiguous(c.in[p.weight].to(kFloat64)) : Tensor();
  const Shape& normalized = c.attrs.get<attrs::NormBackward>().normalized_shape;
  const Device dev = x.device();
  Tensor gx = p.input_grad ? make_empty(x.sizes(), x.dtype(), dev) : Tensor();
  Tensor gw = p.weight_grad ? make_empty(normalized, p.stat_dtype, dev) : Tensor();
  Tensor gb = p.bias_grad ? make_empty(normalized, p.stat_dtype, dev) : Tensor();
  NormBackwardArgs a;
  a.rows = p.rows;
  a.cols = p.cols;
  a.g = data_or_null(g);
  a.x = data_or_null(x);
  a.mean = data_or_null(mean);
  a.rstd = data_or_null(rstd);
  a.weight = weight.defined() && weight.numel() > 0 ? weight.data_ptr<double>() : nullptr;
  a.gx = data_or_null(gx);
  a.gw = data_or_null(gw);
  a.gb = data_or_null(gb);
  a.dtype = x.dtype();
  a.stat_dtype = p.stat_dtype;
  a.layer = p.layer;
  Tensor partials;  // freed in stream order after the kernels that use it
  if ((a.gw || a.gb) && p.rows > 0) {
    const int64_t chunks = backward_math::column_chunks(p.rows).chunks;
    partials = make_empty({chunks * 2 * p.cols}, kFloat64, dev);
    a.partials = partials.data_ptr<double>();
  }
  if (a.gx || a.gw || a.gb) {
    const int index = dev.index();
    DeviceGuard guard(index, op_name(c.op).data());
    check(launch_norm_backward(a, current_native_stream(index)), op_name(c.op).data());
  }
  set_output(c, 0, gx);
  set_output(c, 1, gw);
  if (p.layer) set_output(c, 2, gb);
}

}  // namespace

void register_norm_backward_kernels() {
  register_kernel(OpId::layer_norm_backward, DispatchKey::CUDA, norm_backward_kernel);
  register_kernel(OpId::rms_norm_backward, DispatchKey::CUDA, norm_backward_kernel);
}

}  // namespace mixt::cuda
