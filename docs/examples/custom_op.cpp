// A custom op, registered with the same API the built-in ops use: a schema with a
// meta function, a CPU kernel, and a typed front end that builds the OpCall. It checks
// its values against the formula and the built-in composition, that a bad dtype
// raises, and that the op runs on meta tensors (docs/meta.md).
#include <cmath>
#include <iostream>
#include <string>

#include <mixt/dispatcher/op_check.h>
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

// Registers the op once and returns its id.
OpId mish_op() {
  static const OpId id = [] {
    OpId op = register_op({.name = "example::mish", .min_inputs = 1, .max_inputs = 1, .outputs = 1, .meta = mish_meta});
    register_kernel(op, DispatchKey::CPU, mish_cpu);
    return op;
  }();
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
