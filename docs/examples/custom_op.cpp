// A custom op declared in one block (OpDefinition), complete: a named attribute, the
// check both the kernel and the meta function run, a CPU kernel, the meta function, a
// derivative that reads the attribute, autocast policies, and a typed front end that
// sets the attribute on its OpCall. The op is mish with softplus's sharpness `beta`:
//   mish(x; beta) = x * tanh(softplus(x; beta)),  softplus(x; beta) = log(1 + exp(beta x)) / beta.
// It checks its values against the formula and the built-in composition, its gradient
// against finite differences, that bad input raises, its autocast policy (explain shows
// rule `custom`), and that the op runs on meta tensors (docs/meta.md).
#include <cmath>
#include <iostream>
#include <string>

#include <mixt/mixt.h>

#include "example_support.h"

using namespace mixt;

namespace {

// The op's named attributes (Note [Named attributes]): a struct with defaults.
MIXT_ATTRS_STRUCT(MishAttrs, (double, beta, 1.0))

// What the op accepts, shared by the kernel and the meta function so both raise alike.
void check_mish(const OpCall& c, const Tensor& x) {
  MIXT_CHECK_OP(x.dtype() == kFloat32 || x.dtype() == kFloat64, c, "expects float32 or float64, got {}", x.dtype());
  const double beta = c.attrs.get<MishAttrs>().beta;
  MIXT_CHECK_OP(beta > 0, c, "expects beta > 0, got {}", beta);
}

// Meta function: the output has the input's shape and dtype.
void mish_meta(const OpCall& c, OutputMeta* out) {
  check_mish(c, c.in[0]);
  out[0] = {c.in[0].sizes(), c.in[0].dtype()};
}

// CPU kernel, float32 and float64 (computed in double, rounded once).
void mish_cpu(OpCall& c, DispatchKeySet) {
  const Tensor x = c.in[0].contiguous();  // dense: element i is data_ptr<T>()[i]
  check_mish(c, x);
  const double beta = c.attrs.get<MishAttrs>().beta;
  Tensor out = make_empty(x.sizes(), x.dtype(), x.device());  // uninitialized, contiguous
  auto run = [&]<class T>(const T* in, T* o) {
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = in[i];
      o[i] = static_cast<T>(v * std::tanh(std::log1p(std::exp(beta * v)) / beta));
    }
  };
  if (x.dtype() == kFloat32) run(x.data_ptr<float>(), out.data_ptr<float>());
  else run(x.data_ptr<double>(), out.data_ptr<double>());
  c.out[0] = out;
}

// Derivative, in mixt ops, with the forward call's attributes:
// d/dx = t + x * (1 - t^2) * sigmoid(beta x), where t = tanh(softplus(x; beta)).
std::vector<Tensor> mish_backward(const BackwardContext& ctx, const std::vector<Tensor>& grads) {
  if (!ctx.needs_grad(0)) return {Tensor()};
  const double beta = ctx.attrs().get<MishAttrs>().beta;
  const Tensor x = ctx.input(0);  // saved because save_inputs has bit 0
  const Tensor t = tanh(nn::functional::softplus(x, beta));
  return {grads[0] * (t + x * (1.0 - t * t) * sigmoid(x * beta))};
}

// Declares the op once and returns its id.
OpId mish_op() {
  static const OpId id = OpDefinition("example::mish")
                             .inputs(1)
                             .attrs<MishAttrs>()
                             .meta(mish_meta)
                             .kernel(DispatchKey::CPU, mish_cpu)
                             .derivative({.fn = mish_backward, .save_inputs = 0b1})
                             .autocast(DeviceType::CUDA, autocast::Policy::Fp32)  // as PyTorch's softplus
                             .autocast(DeviceType::CPU, autocast::Policy::Fp32)
                             .define();
  return id;
}

// The typed front end: the call starts with the attributes' defaults; set the ones given.
Tensor mish(const Tensor& x, double beta = 1.0) {
  OpCall c(mish_op());
  c.push(x);
  c.attrs.get<MishAttrs>().beta = beta;
  return call_op(c);
}

// mish(v; beta) in double.
double mish_formula(double v, double beta) { return v * std::tanh(std::log1p(std::exp(beta * v)) / beta); }

// True when calling `f` raises mixt::Error whose message contains `words`.
template <class F>
bool raises(F f, const std::string& words) {
  try {
    f();
  } catch (const Error& e) {
    std::cout << "error: " << e.what() << "\n";
    return std::string(e.what()).find(words) != std::string::npos;
  }
  return false;
}

}  // namespace

int main() {
  const std::vector<float> xs = {-2, -1, 0, 1, 2};
  const Tensor x = from_vector(xs);
  // Values: the formula in double, and the composition of built-in ops, for two betas.
  for (const double beta : {1.0, 2.5}) {
    const Tensor y = mish(x, beta);
    std::cout << "mish(x; beta=" << beta << ") = " << y << "\n";
    const auto yv = y.to_vector<double>();
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = mish_formula(xs[i], beta);
      example::require(std::abs(yv[i] - want) <= 1e-6 * (1 + std::abs(want)),
                       "mish's value at " + std::to_string(xs[i]) + ", beta " + std::to_string(beta));
    }
    const Tensor ref = x * tanh(nn::functional::softplus(x, beta));
    example::require(max((y - ref).abs()).item<double>() < 1e-6, "mish matches x * tanh(softplus(x, beta))");
  }
  // Bad input raises mixt::Error from the check function.
  example::require(raises([] { mish(from_vector(std::vector<int32_t>{1})); }, "float32 or float64"),
                   "an int32 input raises mixt::Error naming the accepted dtypes");
  example::require(raises([&] { mish(x, -1.0); }, "beta > 0"), "beta = -1 raises mixt::Error naming beta");
  // The gradient (the derivative reads beta through ctx.attrs()), against central differences.
  const double beta = 2.5;
  const Tensor xg = from_vector(std::vector<double>{-1.5, 0.25, 2}).requires_grad_();
  sum(mish(xg, beta)).backward();
  const auto gv = xg.grad().to_vector<double>();
  for (size_t i = 0; i < gv.size(); ++i) {
    const double v = xg.to_vector<double>()[i], h = 1e-6;
    const double want = (mish_formula(v + h, beta) - mish_formula(v - h, beta)) / (2 * h);
    example::require(std::abs(gv[i] - want) <= 1e-6 * (1 + std::abs(want)), "mish's gradient at " + std::to_string(v));
  }
  std::cout << "gradient (beta=" << beta << "): " << xg.grad() << "\n";
  // Under CPU bfloat16 autocast the declared policy computes mish in float32, with the
  // call's beta; explain reports the rule `custom` (a policy the application declared).
  {
    const Tensor xb = x.to(kBFloat16);
    const Tensor want = mish(xb.to(kFloat32), beta);
    autocast::Explain report;
    autocast::Guard bf16({.device = DeviceType::CPU, .dtype = kBFloat16});
    const Tensor y = mish(xb, beta);
    std::cout << report.table();
    example::require(report.records().size() == 1 && report.records()[0].rule == autocast::Rule::Custom,
                     "explain shows mish's policy as rule custom");
    example::require(y.dtype() == kFloat32 && y.equal(want), "mish runs in float32 under autocast, with its beta");
  }
  // On the meta device the meta function runs: shapes and dtypes, no data.
  const Tensor m = mish(empty({1024, 1024, 64}, {.dtype = kFloat64, .device = Device::meta()}));
  std::cout << "on meta: " << m.describe() << "\n";
  example::require(m.is_meta() && m.sizes() == Shape{1024, 1024, 64} && m.dtype() == kFloat64, "mish runs on meta");
  example::require(raises([] { mish(empty({2}, {.dtype = kInt32, .device = Device::meta()})); }, "float32 or float64"),
                   "an int32 meta input raises as on the CPU");
  return 0;
}
