// The autograd engine: graph recording, accumulation, retain_graph, grad mode,
// detach, views, hooks, retain_grad, in-place rules and the version check,
// dtype of gradients through casts, autograd::grad, custom-op derivatives.
#include <catch2/catch.hpp>

#include <mixt/dispatcher/op_check.h>
#include <mixt/mixt.h>
#include <mixt/runtime/autograd/function.h>

#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
using Catch::Contains;

namespace {
Tensor leaf(const std::vector<double>& v, const Shape& shape = {}) {
  return make(v, kFloat64, shape).set_requires_grad(true);
}
}  // namespace

TEST_CASE("a chain of ops records a graph and backward fills leaf gradients", "[autograd]") {
  Tensor x = leaf({1, 2, 3}), w = leaf({0.5, -1, 2}), b = leaf({1});
  Tensor y = sum(add(mul(x, w), b) * 2.0);
  CHECK(y.requires_grad());
  CHECK_FALSE(y.is_leaf());
  CHECK(x.is_leaf());
  y.backward();
  CHECK(values(x.grad()) == std::vector<double>{1, -2, 4});
  CHECK(values(w.grad()) == std::vector<double>{2, 4, 6});
  CHECK(values(b.grad()) == std::vector<double>{6});  // broadcast: summed back
}

TEST_CASE("gradients accumulate; a freed graph raises; retain_graph keeps it", "[autograd]") {
  Tensor x = leaf({1, 2});
  Tensor y = sum(mul(x, x));
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  CHECK(values(x.grad()) == std::vector<double>{4, 8});
  CHECK_THROWS_WITH(y.backward(), Contains("freed") || Contains("retain_graph"));
  x.set_grad(Tensor());
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("roots: non-scalar roots need a gradient; roots must require grad", "[autograd]") {
  Tensor x = leaf({1, 2, 3});
  Tensor y = mul(x, 3.0);
  CHECK_THROWS_WITH(y.backward(), Contains("one-element"));
  y.backward(make({1, 0, 2}, kFloat64));
  CHECK(values(x.grad()) == std::vector<double>{3, 0, 6});
  CHECK_THROWS_AS(make({1}, kFloat64).backward(), Error);
  CHECK_THROWS_AS(y.backward(make({1, 2}, kFloat64)), Error);
}

TEST_CASE("no_grad, enable_grad and detach", "[autograd]") {
  Tensor x = leaf({1, 2});
  {
    autograd::NoGradGuard off;
    Tensor y = mul(x, 2.0);
    CHECK_FALSE(y.requires_grad());
    {
      autograd::EnableGradGuard on;
      CHECK(mul(x, 2.0).requires_grad());
    }
  }
  Tensor d = x.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.shares_storage(x));
  CHECK_FALSE(mul(d, 2.0).requires_grad());
  CHECK_THROWS_AS(mul(x, 2.0).set_requires_grad(false), Error);  // not a leaf
}

TEST_CASE("views propagate requires_grad and route gradients", "[autograd]") {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor v = x.select(1, 2);  // x[:, 2]
  CHECK(v.requires_grad());
  sum(mul(v, make({10, 20}, kFloat64))).backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 0, 10, 0, 0, 20});
  Tensor x2 = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  sum(mul(x2.t().reshape({6}), make({1, 2, 3, 4, 5, 6}, kFloat64))).backward();
  CHECK(values(x2.grad()) == std::vector<double>{1, 3, 5, 2, 4, 6});
}

TEST_CASE("a value used twice gets the sum of both paths (diamond)", "[autograd]") {
  Tensor x = leaf({2});
  Tensor a = mul(x, 3.0), b = exp(x);
  sum(add(a, b)).backward();
  CHECK(x.grad().item<double>() == Approx(3 + std::exp(2.0)));
}

TEST_CASE("hooks, post-accumulate hooks and retain_grad", "[autograd]") {
  Tensor x = leaf({1, 2});
  int post_calls = 0;
  autograd::register_hook(x, [](const Tensor& g) { return mul(g, 10.0); });
  autograd::register_post_accumulate_grad_hook(x, [&](const Tensor& t) {
    ++post_calls;
    CHECK(t.grad().defined());
  });
  Tensor h = mul(x, 2.0);
  autograd::retain_grad(h);
  Tensor seen;
  autograd::register_hook(h, [&](const Tensor& g) {
    seen = g;
    return Tensor();
  });
  sum(mul(h, h)).backward();
  CHECK(values(h.grad()) == std::vector<double>{4, 8});
  CHECK(values(seen) == std::vector<double>{4, 8});
  CHECK(values(x.grad()) == std::vector<double>{80, 160});
  CHECK(post_calls == 1);
  CHECK_THROWS_AS(autograd::register_post_accumulate_grad_hook(h, [](const Tensor&) {}), Error);
}

TEST_CASE("in-place rules and the saved-tensor version check", "[autograd]") {
  Tensor x = leaf({1, 2, 3});
  CHECK_THROWS_WITH(add_(x, 1.0), Contains("leaf"));
  {
    autograd::NoGradGuard no_grad;  // how optimizers update parameters
    add_(x, 1.0);
  }
  CHECK(values(x) == std::vector<double>{2, 3, 4});

  // exp saves its output; modifying it afterwards is detected at backward.
  Tensor y = exp(x);
  Tensor z = sum(y);
  {
    autograd::NoGradGuard no_grad;
    mul_(y, 2.0);
  }
  CHECK_THROWS_WITH(z.backward(), Contains("modified by an in-place operation"));

  // In-place ops on non-leaf results are recorded.
  Tensor a = mul(x, 2.0);
  add_(a, 1.0);
  mul_(a, a);  // a = (2x + 1)^2, reads its own old value
  sum(a).backward();
  CHECK(values(x.grad()) == std::vector<double>{20, 28, 36});  // 4 (2x + 1)

  // In-place on a view while recording is refused.
  Tensor b = mul(x, 1.0);
  Tensor v = b.narrow(0, 0, 2);
  CHECK_THROWS_WITH(mul_(v, 2.0), Contains("view"));
}

TEST_CASE("casts: gradients come back in the source dtype", "[autograd]") {
  Tensor w = from_vector(std::vector<float>{1.5f, -2.f}).set_requires_grad(true);
  Tensor low = w.to(kBFloat16);
  CHECK(low.requires_grad());
  Tensor y = sum(mul(low, low));
  CHECK(y.dtype() == kBFloat16);
  y.backward();
  CHECK(w.grad().dtype() == kFloat32);
  CHECK(values(w.grad()) == std::vector<double>{3, -4});
}

TEST_CASE("autograd::grad returns gradients without touching .grad", "[autograd]") {
  Tensor x = leaf({1, 2}), u = leaf({5});
  Tensor y = sum(mul(x, x));
  auto g = autograd::grad({y}, {x}, {}, /*retain_graph=*/true);
  CHECK(values(g[0]) == std::vector<double>{2, 4});
  CHECK_FALSE(x.grad().defined());
  CHECK_THROWS_WITH(autograd::grad({y}, {u}, {}, true), Contains("not used"));
  auto g2 = autograd::grad({y}, {x, u}, {}, false, /*allow_unused=*/true);
  CHECK_FALSE(g2[1].defined());
}

TEST_CASE("multi-output ops: max values route to the argmax", "[autograd]") {
  Tensor x = leaf({1, 7, 3, 9, 2, 4}, {2, 3});
  auto [values_t, indices] = max(x, 1);
  CHECK(values_t.requires_grad());
  CHECK_FALSE(indices.requires_grad());
  sum(values_t).backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 1, 0, 1, 0, 0});
  CHECK_FALSE(argmax(x).requires_grad());
}

namespace {
// Custom op "test::cube" with a registered derivative.
void cube_cpu(OpCall& c, DispatchKeySet) { c.out[0] = mul(mul(c.in[0], c.in[0]), c.in[0]); }
std::vector<Tensor> cube_backward(const autograd::BackwardContext& ctx, const std::vector<Tensor>& g) {
  const Tensor x = ctx.input(0);
  return {mul(mul(g[0], mul(x, x)), 3.0)};
}
}  // namespace

TEST_CASE("a custom op gets autograd from register_derivative", "[autograd]") {
  static const OpId cube = [] {
    OpId id = register_op({.name = "test::cube", .min_inputs = 1, .max_inputs = 1, .outputs = 1,
                           .flags = op_flags::Diff});
    register_kernel(id, DispatchKey::CPU, cube_cpu);
    autograd::register_derivative(id, {cube_backward, 1u});
    return id;
  }();
  Tensor x = leaf({2, -1});
  OpCall c(cube);
  c.push(x);
  Tensor y = call_op(c);
  CHECK(y.requires_grad());
  CHECK(autograd::grad_fn(y)->name() == "test::cubeBackward");
  sum(y).backward();
  CHECK(values(x.grad()) == std::vector<double>{12, 3});
}

TEST_CASE("a conversion to the tensor's own dtype and device records nothing", "[autograd]") {
  Tensor x = leaf({1, 2, 3});
  CHECK(x.to(x.dtype()).is_same(x));
  (void)values(x);  // reads through to(cpu)
  CHECK(x.is_leaf());
  // Dispatched directly (bypassing the front end), the kernel's alias is not rebased either.
  OpCall c(OpId::to);
  c.push(x);
  c.attrs.dtype = x.dtype();
  c.attrs.device = x.device();
  Tensor same = call_op(c);
  CHECK(same.is_same(x));
  CHECK(x.is_leaf());
  sum(mul(x, 2.0)).backward();
  CHECK(values(x.grad()) == std::vector<double>{2, 2, 2});
}
