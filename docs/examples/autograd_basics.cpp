// Autograd: recording, backward, gradients of leaves, hooks, no_grad, a custom
// op's backward formula and a fused backward op. It checks the gradients it prints
// against their formulas and exits with 1 when one is wrong.
#include <cmath>
#include <cstdio>

#include <mixt/mixt.h>
#include <mixt/runtime/autograd/function.h>

#include "example_support.h"

using namespace mixt;

namespace {

// A custom op with its own backward: softsign(x) = x / (1 + |x|).
void softsign_cpu(OpCall& c, DispatchKeySet) { c.out[0] = div(c.in[0], add(abs(c.in[0]), 1.0)); }

std::vector<Tensor> softsign_backward(const autograd::BackwardContext& ctx, const std::vector<Tensor>& grads) {
  const Tensor d = add(abs(ctx.input(0)), 1.0);
  return {div(grads[0], mul(d, d))};  // d/dx = 1 / (1 + |x|)^2
}

Tensor softsign(const Tensor& x) {
  static const OpId op = [] {
    OpId id = register_op({.name = "example::softsign", .min_inputs = 1, .max_inputs = 1, .outputs = 1,
                           .flags = op_flags::Diff});
    register_kernel(id, DispatchKey::CPU, softsign_cpu);
    autograd::register_derivative(id, {.fn = softsign_backward, .save_inputs = 1u << 0});
    return id;
  }();
  OpCall c(op);
  c.push(x);
  return call_op(c);
}

}  // namespace

int main() {
  // Leaves that require grad; every op on them records a node.
  Tensor w = from_vector(std::vector<float>{0.5f, -1.0f, 2.0f}).requires_grad_();
  Tensor x = from_vector(std::vector<float>{1.0f, 2.0f, 3.0f});
  Tensor loss = sum(mul(softsign(mul(w, x)), 2.0));
  loss.backward();  // fills w.grad()
  std::printf("loss %.4f, dloss/dw = %s\n", loss.item<double>(), w.grad().str().c_str());
  // The custom backward: d/dw_i 2 softsign(w_i x_i) = 2 x_i / (1 + |w_i x_i|)^2.
  const std::vector<double> wv = {0.5, -1.0, 2.0}, xv = {1.0, 2.0, 3.0};
  for (int i = 0; i < 3; ++i) {
    const double d = 1 + std::abs(wv[i] * xv[i]);
    example::require(std::abs(w.grad().to_vector<double>()[i] - 2 * xv[i] / (d * d)) < 1e-6,
                     "softsign's custom backward value " + std::to_string(i));
  }

  // A hook sees (and may replace) a gradient on its way; NoGradGuard stops recording.
  w.set_grad(Tensor());
  autograd::register_hook(w, [](const Tensor& g) { return clamp(g, -0.1, 0.1); });
  sum(mul(w, x)).backward();
  std::printf("clipped gradient %s\n", w.grad().str().c_str());
  example::require(w.grad().to_vector<float>() == std::vector<float>{0.1f, 0.1f, 0.1f},
                   "the hook clipped the gradient x = (1, 2, 3) to 0.1");
  {
    autograd::NoGradGuard no_grad;
    w.sub_(mul(w.grad(), 0.1));  // an optimizer step, not recorded
  }
  // The gradient of a cast comes back in the leaf's dtype.
  Tensor y = sum(mul(w.to(kBFloat16), w.to(kBFloat16)));
  w.set_grad(Tensor());
  y.backward();
  std::printf("through bfloat16: grad dtype %s, grad %s (clipped by the hook)\n",
              std::string(dtype_name(w.grad().dtype())).c_str(), w.grad().str().c_str());
  example::require(w.grad().dtype() == kFloat32, "the gradient comes back in float32");
  // d/dw sum(bf16(w)^2) = 2 bf16(w), about ±1 to ±4 here; the hook registered above still
  // clips what reaches w to [-0.1, 0.1].
  const auto after = w.to_vector<float>(), g = w.grad().to_vector<float>();
  for (int i = 0; i < 3; ++i)
    example::require(g[i] == (after[i] > 0 ? 0.1f : -0.1f), "the clipped gradient through bfloat16");

  // softmax, log_softmax, layer_norm, rms_norm, gelu and silu differentiate through one fused
  // backward op each; called directly, softmax_backward gives what autograd gives.
  namespace F = nn::functional;
  Tensor logits = from_vector(std::vector<float>{1.0f, -0.5f, 2.0f, 0.25f}, {2, 2}).requires_grad_();
  const Tensor probs = F::softmax(logits, 1), upstream = from_vector(std::vector<float>{1, 0, 0, 1}, {2, 2});
  sum(mul(probs, upstream)).backward();
  const Tensor direct = F::softmax_backward(upstream, probs.detach(), 1);
  std::printf("softmax's gradient %s (softmax_backward: %s)\n", logits.grad().str().c_str(), direct.str().c_str());
  example::require(logits.grad().to_vector<float>() == direct.to_vector<float>(),
                   "autograd runs softmax_backward");
  // gelu and silu likewise: gelu_backward(upstream, x) is upstream times gelu's slope at x.
  Tensor a = from_vector(std::vector<float>{-3.0f, -0.5f, 0.0f, 2.0f}, {4}).requires_grad_();
  const Tensor up = from_vector(std::vector<float>{2, 2, 2, 2}, {4});
  sum(mul(F::gelu(a), up)).backward();
  const Tensor gelu_direct = F::gelu_backward(up, a.detach());
  std::printf("gelu's gradient %s (gelu_backward: %s)\n", a.grad().str().c_str(), gelu_direct.str().c_str());
  example::require(a.grad().to_vector<float>() == gelu_direct.to_vector<float>(), "autograd runs gelu_backward");
  example::require(gelu_direct.to_vector<float>()[2] == 1.0f, "gelu's slope at 0 is 1/2");
  return 0;
}
