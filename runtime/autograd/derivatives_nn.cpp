// Backward formulas of the nn kernels: softmax, log_softmax, layer_norm, rms_norm and
// cross_entropy_rows call their fused backward ops; im2col and col2im are each other's adjoint. The node
// casts each gradient back to its input's dtype. The composite nn ops (losses,
// batch/group norm, attention, convolutions) need none.
#include <mixt/runtime/autograd/derivatives.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/error.h>
#include <mixt/runtime/ops/nn.h>

namespace mixt::autograd {
namespace {

constexpr uint32_t out2 = 1u << 2;

// ---- softmax, log_softmax, layer_norm, rms_norm: the fused backward ops ----
// (Note [Fused backward ops]). The gradient reaching y is taken in y's dtype.
namespace F = nn::functional;

Grads softmax_bw(const BackwardContext& c, const Grads& g) {
  const Tensor y = c.output(0);
  return {F::softmax_backward(g[0].to(y.dtype()), y, c.attrs().get<attrs::Dim>().dim)};
}

Grads log_softmax_bw(const BackwardContext& c, const Grads& g) {
  const Tensor y = c.output(0);
  return {F::log_softmax_backward(g[0].to(y.dtype()), y, c.attrs().get<attrs::Dim>().dim)};
}

// The gradients a normalization node needs: its inputs are x, weight? and (layer_norm) bias?.
// The bias is not saved (its values play no part): its metadata says whether it was given.
F::NormGradsWanted wanted_grads(const BackwardContext& c) {
  const bool has_bias =
      c.op() == OpId::layer_norm && c.num_inputs() > 2 && c.input_meta(2).dtype != ScalarType::Undefined;
  return {c.needs_grad(0), c.input(1).defined() && c.needs_grad(1), has_bias && c.needs_grad(2)};
}

Grads layer_norm_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  const F::NormGrads r = F::layer_norm_backward(g[0].to(x.dtype()), x, c.attrs().get<attrs::LayerNorm>().normalized_shape,
                                                c.output(1), c.output(2), c.input(1), wanted_grads(c));
  return {r.input, r.weight, r.bias};
}

Grads rms_norm_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  const F::NormGrads r = F::rms_norm_backward(g[0].to(x.dtype()), x, c.attrs().get<attrs::RmsNorm>().normalized_shape,
                                              c.output(1), c.input(1), wanted_grads(c));
  return {r.input, r.weight};
}

// cross_entropy_rows (Note [Fused cross-entropy]): differentiable in the logits only. The
// front end returns lse detached, so the gradient reaching it (zeros) is not read; the
// weight's gradient is refused (cross_entropy keeps its unfused path for a weight that
// requires grad).
Grads cross_entropy_rows_bw(const BackwardContext& c, const Grads& g) {
  MIXT_CHECK(!(c.num_inputs() > 2 && c.needs_grad(2)), "cross_entropy_rows",
             "is differentiable in the logits only, and the class weight requires grad (cross_entropy "
             "differentiates the weight)");
  const auto& a = c.attrs().get<attrs::CrossEntropy>();
  const Tensor x = c.input(0), lse = c.output(1);
  return {F::cross_entropy_rows_backward(g[0].to(lse.dtype()), x, c.input(1), lse, c.input(2), a.ignore_index,
                                         a.label_smoothing)};
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
  define_derivative(OpId::layer_norm, {layer_norm_bw, in0 | in1, out1 | out2});
  define_derivative(OpId::rms_norm, {rms_norm_bw, in0 | in1, out1});
  define_derivative(OpId::cross_entropy_rows, {cross_entropy_rows_bw, in0 | in1 | in2, out1});
  define_derivative(OpId::im2col, {im2col_bw});
  define_derivative(OpId::col2im, {col2im_bw});
}

}  // namespace mixt::autograd
