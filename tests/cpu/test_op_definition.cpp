// One registration block for an application's op (OpDefinition): schema, meta
// function, kernels, derivative and autocast policy declared together and checked
// before anything is registered; custom ops without a derivative raise in backward.
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

using namespace mixt;
using Catch::Contains;

namespace {

// cube(x) = x^3 for float32 and float64, with dcube/dx = 3x^2.
void check_cube_input(const OpCall& c, const Tensor& x) {
  MIXT_CHECK_OP(is_floating(x.dtype()) && element_size(x.dtype()) >= 4, c, "takes float32 or float64, not {}",
                x.dtype());
}
void cube_meta(const OpCall& c, OutputMeta* out) {
  check_cube_input(c, c.in[0]);
  out[0] = {c.in[0].sizes(), c.in[0].dtype()};
}
void cube_cpu(OpCall& c, DispatchKeySet) {
  check_cube_input(c, c.in[0]);
  const Tensor x = c.in[0].to(kFloat64).contiguous();
  Tensor out = make_empty(x.sizes(), kFloat64, x.device());
  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<double>()[i] = std::pow(x.data_ptr<double>()[i], 3);
  c.out[0] = out.to(c.in[0].dtype());
}
std::vector<Tensor> cube_backward(const BackwardContext& ctx, const std::vector<Tensor>& grads) {
  const Tensor x = ctx.input(0);
  return {mul(grads[0], mul(mul(x, x), 3.0))};
}

OpId cube_op() {
  static const OpId id = OpDefinition("test::cube")
                             .inputs(1)
                             .meta(cube_meta)
                             .kernel(DispatchKey::CPU, cube_cpu)
                             .derivative({.fn = cube_backward, .save_inputs = 0b1})
                             .autocast(DeviceType::CPU, autocast::Policy::Fp32)
                             .define();
  return id;
}

Tensor call1(OpId id, const Tensor& x) {
  OpCall c(id);
  c.push(x);
  return call_op(c);
}

// softsign(x) = x / (1 + |x|), written in other ops: no kernel, no derivative.
void softsign_composite(OpCall& c, DispatchKeySet) { c.out[0] = div(c.in[0], add(abs(c.in[0]), 1.0)); }

// A CPU kernel that doubles its input, declared without a derivative the old way.
void double_cpu(OpCall& c, DispatchKeySet) { c.out[0] = mul(c.in[0].detach(), 2.0); }

// A floating 0/1 mask of the elements at or above 2: declared without a gradient (a
// floating output, so autograd would record it if the declaration were ignored).
void at_least_two_cpu(OpCall& c, DispatchKeySet) { c.out[0] = ge(c.in[0].detach(), 2.0).to(c.in[0].dtype()); }

}  // namespace

TEST_CASE("a block declares schema, meta, kernel, derivative and autocast policy", "[op_definition]") {
  const OpId cube = cube_op();
  CHECK(op_name(cube) == "test::cube");
  const std::vector<double> xs = {-3, -1, -0.25, 0, 0.5, 2, 4};
  const Tensor x = from_vector(xs).requires_grad_();
  const Tensor y = call1(cube, x);
  const std::vector<double> yv = y.to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) CHECK(yv[i] == xs[i] * xs[i] * xs[i]);
  // The derivative: against central differences of the kernel's own results.
  sum(y).backward();
  const std::vector<double> g = x.grad().to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double h = 1e-4;
    const Tensor up = call1(cube, from_vector(std::vector<double>{xs[i] + h}));
    const Tensor down = call1(cube, from_vector(std::vector<double>{xs[i] - h}));
    CHECK(g[i] == Approx((up.item<double>() - down.item<double>()) / (2 * h)).epsilon(1e-6).margin(1e-7));  // the difference quotient has error h^2
  }
  // The meta function: the op runs on meta tensors and refuses what the kernel refuses.
  const Tensor m = call1(cube, empty({1 << 20, 1 << 12}, {.device = Device::meta()}));
  CHECK((m.is_meta() && m.sizes() == Shape{1 << 20, 1 << 12} && m.dtype() == kFloat32));
  CHECK_THROWS_WITH(call1(cube, empty({2}, {.dtype = kInt32, .device = Device::meta()})),
                    Contains("test::cube") && Contains("takes float32 or float64"));
  // The autocast policy: float32 on the CPU, so a bfloat16 input is cast up, and
  // decide() predicts it from the meta function.
  {
    autocast::Guard bf16({.device = DeviceType::CPU, .dtype = kBFloat16});
    CHECK(call1(cube, ones({3}, {.dtype = kBFloat16})).dtype() == kFloat32);
  }
  autocast::State st;
  st.enabled[static_cast<size_t>(DeviceType::CPU)] = true;
  st.dtype[static_cast<size_t>(DeviceType::CPU)] = kBFloat16;
  const autocast::Decision d = autocast::decide(DeviceType::CPU, cube, {{kBFloat16, {3}}}, {}, st);
  CHECK(d.cast_to[0] == kFloat32);
  CHECK(d.output_dtype == kFloat32);
}

TEST_CASE("a composite-only op differentiates through its decomposition on every backend", "[op_definition]") {
  static const OpId softsign = OpDefinition("test::softsign").inputs(1).composite(softsign_composite).define();
  const Tensor x = from_vector(std::vector<double>{-2, 0.5, 3}).requires_grad_();
  const Tensor y = call1(softsign, x);
  CHECK(y.to_vector<double>() == std::vector<double>{-2.0 / 3, 0.5 / 1.5, 0.75});
  sum(y).backward();
  const std::vector<double> g = x.grad().to_vector<double>();  // 1 / (1 + |x|)^2
  CHECK(g[0] == Approx(1.0 / 9));
  CHECK(g[1] == Approx(1.0 / 2.25));
  CHECK(g[2] == Approx(1.0 / 16));
  CHECK(call1(softsign, empty({5, 7}, {.device = Device::meta()})).sizes() == Shape{5, 7});
}

TEST_CASE("a custom op without a derivative raises in backward, naming the op", "[op_definition][autograd]") {
  static const OpId twice = [] {
    const OpId id = register_op({.name = "test::twice", .min_inputs = 1, .max_inputs = 1});
    register_kernel(id, DispatchKey::CPU, double_cpu);
    return id;
  }();
  const Tensor x = from_vector(std::vector<float>{1, 2}).requires_grad_();
  const Tensor y = call1(twice, x);  // the forward runs
  CHECK(y.to_vector<float>() == std::vector<float>{2, 4});
  CHECK(y.requires_grad());  // the gradient is not silently dropped...
  CHECK_THROWS_WITH(sum(y).backward(), Contains("test::twice") && Contains("has no derivative"));  // ...it raises
  // Without inputs that require grad nothing is recorded.
  CHECK_FALSE(call1(twice, from_vector(std::vector<float>{1})).requires_grad());
}

TEST_CASE("not_differentiable ops give outputs without gradients", "[op_definition][autograd]") {
  static const OpId mask =
      OpDefinition("test::at_least_two").inputs(1).kernel(DispatchKey::CPU, at_least_two_cpu).not_differentiable().define();
  const Tensor x = from_vector(std::vector<float>{1, 5, 2}).requires_grad_();
  const Tensor m = call1(mask, x);
  CHECK(m.to_vector<float>() == std::vector<float>{0, 1, 1});
  CHECK(m.dtype() == kFloat32);
  CHECK_FALSE(m.requires_grad());  // declared: no node, no raising backward later
}

TEST_CASE("an incomplete or contradictory block registers nothing", "[op_definition]") {
  auto refused = [](const OpDefinition& def, const char* name, const char* why) {
    CHECK_THROWS_WITH(def.define(), Contains(name) && Contains(why));
    CHECK_FALSE(has_op(name));
  };
  refused(OpDefinition("test::bad1").inputs(1), "test::bad1", "no kernel and no composite");
  refused(OpDefinition("test::bad2").inputs(1).kernel(DispatchKey::CPU, cube_cpu), "test::bad2",
          "need a derivative()");
  refused(OpDefinition("test::bad3").inputs(1).kernel(DispatchKey::Autograd, cube_cpu).not_differentiable(),
          "test::bad3", "not a backend key");
  refused(OpDefinition("test::bad4")
              .inputs(1)
              .kernel(DispatchKey::CPU, cube_cpu)
              .derivative({.fn = cube_backward})
              .not_differentiable(),
          "test::bad4", "declared not differentiable");
  refused(OpDefinition("test::bad5").inputs(3, 1).composite(softsign_composite), "test::bad5", "min <= max");
  refused(OpDefinition("test::bad6").composite(softsign_composite).autocast(DeviceType::Meta, autocast::Policy::Fp32),
          "test::bad6", "no casting policy table");
  // A duplicate name: the first definition stays as it was.
  const OpId cube = cube_op();
  CHECK_THROWS_WITH(OpDefinition("test::cube").inputs(1).composite(softsign_composite).define(),
                    Contains("already exists"));
  CHECK(op_entry(cube).composite == nullptr);
  CHECK(find_op("test::cube") == cube);
}
