// A custom op declared in one block (OpDefinition): its meta function, CPU kernel,
// derivative and autocast policy, plus a typed front end that builds the OpCall. It
// checks its values against the formula and the built-in composition, its gradient
// against finite differences, that a bad dtype raises, and that the op runs on meta
// tensors (docs/meta.md).
#include <cmath>
#include <iostream>
#include <string>

#include <mixt/mixt.h>

#include "example_support.h"

using namespace mixt;

namespace {

// What the op accepts: shared by the kernel and the meta function.
void check_mish_input(const OpCall& c, const Tensor& x) {
  MIXT_CHECK_OP(x.dtype() == kFloat32 || x.dtype() == kFloat64, c, "expects float32 or float64, got {}",
                x.dtype());
}

// Meta function: the output has the input's shape and dtype.
void mish_meta(const OpCall& c, OutputMeta* out) {
  check_mish_input(c, c.in[0]);
  out[0] = {c.in[0].sizes(), c.in[0].dtype()};
}

// Kernel: out = x * tanh(softplus(x)) ("mish"), float32 and float64.
void mish_cpu(OpCall& c, DispatchKeySet) {
  const Tensor x = c.in[0].contiguous();
  check_mish_input(c, x);
  Tensor out = make_empty(x.sizes(), x.dtype(), x.device());
  auto run = [&](auto* in, auto* o) {
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] * std::tanh(std::log1p(std::exp(in[i])));
  };
  if (x.dtype() == kFloat32) run(x.data_ptr<float>(), out.data_ptr<float>());
  else run(x.data_ptr<double>(), out.data_ptr<double>());
  c.out[0] = out;
}

// Derivative, written in mixt ops: tanh(sp) + x * (1 - tanh(sp)^2) * sigmoid(x).
std::vector<Tensor> mish_backward(const BackwardContext& ctx, const std::vector<Tensor>& grads) {
  const Tensor x = ctx.input(0);  // saved because save_inputs has bit 0
  const Tensor t = tanh(nn::functional::softplus(x));
  return {grads[0] * (t + x * (1.0 - t * t) * sigmoid(x))};
}

// Declares the op once and returns its id.
OpId mish_op() {
  static const OpId id = OpDefinition("example::mish")
                             .inputs(1)
                             .meta(mish_meta)
                             .kernel(DispatchKey::CPU, mish_cpu)
                             .derivative({.fn = mish_backward, .save_inputs = 0b1})
                             .autocast(DeviceType::CUDA, autocast::Policy::Fp32)  // as PyTorch's softplus
                             .autocast(DeviceType::CPU, autocast::Policy::Fp32)
                             .define();
  return id;
}

// The typed front end.
Tensor mish(const Tensor& x) {
  OpCall c(mish_op());
  c.push(x);
  return call_op(c);
}

}  // namespace

int main() {
  const std::vector<float> xs = {-2, -1, 0, 1, 2};
  Tensor x = from_vector(xs);
  Tensor y = mish(x);
  std::cout << y << "\n";
  // Check against the formula in double and against the composition of built-in ops.
  const auto yv = y.to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = xs[i] * std::tanh(std::log1p(std::exp(static_cast<double>(xs[i]))));
    example::require(std::abs(yv[i] - want) <= 1e-6 * (1 + std::abs(want)), "mish's value at " + std::to_string(xs[i]));
  }
  Tensor ref = x * tanh(nn::functional::softplus(x));
  const double diff = max((y - ref).abs()).item<double>();
  std::cout << "max difference to the built-in composition: " << diff << "\n";
  example::require(diff < 1e-6, "mish matches x * tanh(softplus(x))");
  bool raised = false;
  try {
    mish(from_vector(std::vector<int32_t>{1}));
  } catch (const Error& e) {
    std::cout << "error: " << e.what() << "\n";
    raised = std::string(e.what()).find("float32 or float64") != std::string::npos;
  }
  example::require(raised, "an int32 input raises mixt::Error naming the accepted dtypes");
  // The gradient, against central differences of the formula.
  const Tensor xg = from_vector(std::vector<double>{-1.5, 0.25, 2}).requires_grad_();
  sum(mish(xg)).backward();
  const auto gv = xg.grad().to_vector<double>();
  for (size_t i = 0; i < gv.size(); ++i) {
    const double v = xg.to_vector<double>()[i], h = 1e-6;
    auto f = [](double u) { return u * std::tanh(std::log1p(std::exp(u))); };
    const double want = (f(v + h) - f(v - h)) / (2 * h);
    example::require(std::abs(gv[i] - want) <= 1e-6 * (1 + std::abs(want)), "mish's gradient at " + std::to_string(v));
  }
  std::cout << "gradient: " << xg.grad() << "\n";
  // Under CPU bfloat16 autocast the declared policy computes mish in float32.
  {
    autocast::Guard bf16({.device = DeviceType::CPU, .dtype = kBFloat16});
    example::require(mish(x.to(kBFloat16)).dtype() == kFloat32, "mish runs in float32 under autocast");
  }
  // On the meta device the meta function runs: shapes and dtypes, no data.
  const Tensor m = mish(empty({1024, 1024, 64}, {.dtype = kFloat64, .device = Device::meta()}));
  std::cout << "on meta: " << m.describe() << "\n";
  example::require(m.is_meta() && m.sizes() == Shape{1024, 1024, 64} && m.dtype() == kFloat64, "mish runs on meta");
  raised = false;
  try {
    mish(empty({2}, {.dtype = kInt32, .device = Device::meta()}));
  } catch (const Error&) {
    raised = true;
  }
  example::require(raised, "an int32 meta input raises as on the CPU");
  return 0;
}
