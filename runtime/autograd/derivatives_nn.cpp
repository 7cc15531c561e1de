// Backward formulas of the nn kernels: softmax, log_softmax, layer_norm, rms_norm,
// im2col and col2im. They compute in the accumulate type (float32 for narrow
// floats); the node casts each gradient back to its input's dtype. The composite
// nn ops (losses, batch/group norm, attention, convolutions) need none.
#include <mixt/runtime/autograd/derivatives.h>
#include <mixt/runtime/error.h>
#include <mixt/runtime/ops/nn.h>

namespace mixt::autograd {
namespace {

constexpr uint32_t out2 = 1u << 2;

// `t` in the accumulate type of its dtype (float32 for the narrow floats).
Tensor acc(const Tensor& t) { return t.to(accumulate_type(t.dtype())); }

// ---- softmax ----
Grads softmax_bw(const BackwardContext& c, const Grads& g) {
  const Tensor y = acc(c.output(0)), gy = acc(g[0]);
  const Shape dim{c.attrs().get<attrs::Dim>().dim};
  return {mul(y, sub(gy, sum(mul(gy, y), dim, /*keepdim=*/true)))};
}

Grads log_softmax_bw(const BackwardContext& c, const Grads& g) {
  const Tensor y = acc(c.output(0)), gy = acc(g[0]);
  return {sub(gy, mul(exp(y), sum(gy, Shape{c.attrs().get<attrs::Dim>().dim}, /*keepdim=*/true)))};
}

// ---- layer_norm / rms_norm ----
// The dims of a normalization: the normalized trailing ones and the leading ones.
struct NormDims {
  Shape norm, lead, stat_view;  // stat_view: the statistics' shape with the normalized dims kept as 1
};

NormDims norm_dims(const BackwardContext& c) {
  const Shape& x = c.input_meta(0).sizes;
  const Shape& normalized = c.op() == OpId::rms_norm ? c.attrs().get<attrs::RmsNorm>().normalized_shape
                                                     : c.attrs().get<attrs::LayerNorm>().normalized_shape;
  const int k = normalized.size(), n = x.size();
  NormDims d;
  for (int i = 0; i < n; ++i) {
    (i < n - k ? d.lead : d.norm).push_back(i);
    d.stat_view.push_back(i < n - k ? x[i] : 1);
  }
  return d;
}

// Sum over the leading dims (the weight and bias gradients), or `t` itself when there are none.
Tensor sum_lead(const Tensor& t, const NormDims& d) { return d.lead.empty() ? t : sum(t, d.lead); }

// Gradients of x, weight and (for layer_norm) bias from xhat, the statistic rstd and the output gradient.
// `centered`: layer_norm also subtracts the mean of the incoming gradient.
Grads norm_grads(const BackwardContext& c, const Tensor& xhat, const Tensor& rstd, const Tensor& gy, const NormDims& d,
                 bool centered) {
  Grads out(c.op() == OpId::layer_norm ? 3 : 2);
  const Tensor w = c.input(1);
  if (c.needs_grad(0)) {
    const Tensor gxhat = w.defined() ? mul(gy, acc(w)) : gy;
    Tensor inner = sub(gxhat, mul(xhat, mean(mul(gxhat, xhat), d.norm, /*keepdim=*/true)));
    if (centered) inner = sub(inner, mean(gxhat, d.norm, /*keepdim=*/true));
    out[0] = mul(rstd, inner);
  }
  if (w.defined() && c.needs_grad(1)) out[1] = sum_lead(mul(gy, xhat), d);
  if (out.size() > 2 && c.input(2).defined() && c.needs_grad(2)) out[2] = sum_lead(gy, d);
  return out;
}

Grads layer_norm_bw(const BackwardContext& c, const Grads& g) {
  const NormDims d = norm_dims(c);
  const Tensor mu = reshape(c.output(1), d.stat_view), rstd = reshape(c.output(2), d.stat_view);
  const Tensor xhat = mul(sub(c.input(0).to(rstd.dtype()), mu), rstd);
  return norm_grads(c, xhat, rstd, g[0].to(rstd.dtype()), d, /*centered=*/true);
}

Grads rms_norm_bw(const BackwardContext& c, const Grads& g) {
  const NormDims d = norm_dims(c);
  const Tensor rstd = reshape(c.output(1), d.stat_view);
  const Tensor xhat = mul(c.input(0).to(rstd.dtype()), rstd);
  return norm_grads(c, xhat, rstd, g[0].to(rstd.dtype()), d, /*centered=*/false);
}

// ---- im2col / col2im: each is the other's adjoint ----
Grads im2col_bw(const BackwardContext& c, const Grads& g) {
  const auto& w = c.attrs().get<attrs::Im2col>();
  const Shape& x = c.input_meta(0).sizes;
  Shape spatial;
  for (int i = 2; i < x.size(); ++i) spatial.push_back(x[i]);
  return {nn::functional::col2im(g[0], spatial, w.kernel, w.stride, w.padding, w.dilation)};
}

Grads col2im_bw(const BackwardContext& c, const Grads& g) {
  const auto& w = c.attrs().get<attrs::Col2im>();
  return {nn::functional::im2col(g[0], w.kernel, w.stride, w.padding, w.dilation)};
}

}  // namespace

void register_nn_derivatives() {
  define_derivative(OpId::softmax, {softmax_bw, 0, out0});
  define_derivative(OpId::log_softmax, {log_softmax_bw, 0, out0});
  define_derivative(OpId::layer_norm, {layer_norm_bw, in0 | in1 | in2, out1 | out2});
  define_derivative(OpId::rms_norm, {rms_norm_bw, in0 | in1, out1});
  define_derivative(OpId::im2col, {im2col_bw});
  define_derivative(OpId::col2im, {col2im_bw});
}

}  // namespace mixt::autograd
