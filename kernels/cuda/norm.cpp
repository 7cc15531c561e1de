// layer_norm and rms_norm on CUDA: the CPU's checks and outputs (y, then mean and rstd
// for layer_norm or rstd for rms_norm, in x's accumulate type); the device kernel
// (norm.cu) computes each row's statistics in double, as the CPU does.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/reduce_launch.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {
namespace {

// An affine parameter as a contiguous float64 [cols] tensor on x's device, or undefined.
Tensor affine_param(const OpCall& c, int i, const Tensor& x, const char* what) {
  if (c.n_in <= i || !c.in[i].defined()) return Tensor();
  const Tensor& p = c.in[i];
  MIXT_CHECK_OP(p.device() == x.device(), c, "the {} is on {}, expected {}", what, p.device(), x.device());
  return contiguous(p.dtype() == kFloat64 ? p : p.to(kFloat64));
}

void set_outputs(OpCall& c, std::initializer_list<Tensor> results) {
  int k = 0;
  for (const Tensor& t : results) {
    Tensor& given = c.out[static_cast<size_t>(k++)];
    if (given.defined()) given.copy_(t);
    else given = t;
  }
}

// Runs the row kernel over `c`'s input; returns y and fills the statistics.
template <bool Rms>
void norm_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& x_in = c.in[0];
  MIXT_CHECK_OP(x_in.is_cuda(), c, "the CUDA kernel got a tensor on {}", x_in.device());
  const Shape& normalized = Rms ? c.attrs.get<attrs::RmsNorm>().normalized_shape
                                : c.attrs.get<attrs::LayerNorm>().normalized_shape;
  const Shape stat_sizes = normalization_stats_shape(c, normalized, Rms ? 1 : 2);
  MIXT_CHECK_OP(x_in.is_floating_point(), c, "expected a floating input, got {}", x_in.dtype());
  const Tensor x = contiguous(x_in);
  const Tensor weight = affine_param(c, 1, x, "weight");
  const Tensor bias = Rms ? Tensor() : affine_param(c, 2, x, "bias");
  const ScalarType st = accumulate_type(x.dtype());
  Tensor y = make_empty(x.sizes(), x.dtype(), x.device());
  Tensor mean = Rms ? Tensor() : make_empty(stat_sizes, st, x.device());
  Tensor rstd = make_empty(stat_sizes, st, x.device());
  NormArgs a;
  a.cols = normalized.numel();
  a.rows = stat_sizes.numel();
  if (x.numel() > 0 || a.rows > 0) {
    a.x = x.numel() > 0 ? x.data_ptr() : nullptr;
    a.y = x.numel() > 0 ? y.data_ptr() : nullptr;
    a.weight = weight.defined() && weight.numel() > 0 ? weight.data_ptr<double>() : nullptr;
    a.bias = bias.defined() && bias.numel() > 0 ? bias.data_ptr<double>() : nullptr;
    a.mean = mean.defined() && a.rows > 0 ? mean.data_ptr() : nullptr;
    a.rstd = a.rows > 0 ? rstd.data_ptr() : nullptr;
    a.eps = Rms ? c.attrs.get<attrs::RmsNorm>().eps.value_or(rms_norm_default_eps(x.dtype())) : c.attrs.get<attrs::LayerNorm>().eps;
    a.dtype = x.dtype();
    a.stat_dtype = st;
    a.rms = Rms;
    const int index = x.device().index();
    DeviceGuard guard(index, op_name(c.op).data());
    check(launch_norm(a, current_native_stream(index)), op_name(c.op).data());
  }
  if (Rms) set_outputs(c, {y, rstd});
  else set_outputs(c, {y, mean, rstd});
}

}  // namespace

void register_norm_kernels() {
  register_kernel(OpId::layer_norm, DispatchKey::CUDA, norm_kernel<false>);
  register_kernel(OpId::rms_norm, DispatchKey::CUDA, norm_kernel<true>);
}

}  // namespace mixt::cuda
