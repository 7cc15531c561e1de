// Gradients where finite differences cannot judge: kinks, ties, zeros and padding
// rows. Each case states the subgradient mixt chooses, which is PyTorch's (see Note
// [Subgradients] in docs/notes/autograd.md), computed in float64 and compared exactly.
// cumprod's gradient at zeros is also checked against a reference summed term by term.
#include <cmath>
#include <functional>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>
#include <mixt/runtime/autograd/function.h>

#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
namespace F = mixt::nn::functional;

namespace {

Tensor leaf(const std::vector<double>& v, const Shape& shape = {}) {
  return make(v, kFloat64, shape).set_requires_grad(true);
}

// d sum(f(x) * w) / dx for w = 1 (or the given weights).
std::vector<double> grad_of(const std::function<Tensor(const Tensor&)>& f, const std::vector<double>& x,
                            const Shape& shape = {}, const std::vector<double>& w = {}) {
  Tensor t = leaf(x, shape);
  const Tensor out = f(t);
  const Tensor weights = w.empty() ? ones_like(out) : make(w, kFloat64, out.sizes());
  return values(autograd::grad({sum(mul(out, weights))}, {t})[0]);
}

// d sum(cumprod(x, dim) * w) / dx summed term by term: for each j >= i along the dim,
// w_j times the product of x_k over k <= j, k != i (no division, so zeros are exact).
std::vector<double> cumprod_grad_reference(const std::vector<double>& x, const std::vector<double>& w, int64_t rows,
                                           int64_t cols, int dim) {
  std::vector<double> g(x.size(), 0.0);
  const int64_t lines = dim == 1 ? rows : cols, len = dim == 1 ? cols : rows;
  auto at = [&](int64_t line, int64_t k) { return dim == 1 ? line * cols + k : k * cols + line; };
  for (int64_t line = 0; line < lines; ++line)
    for (int64_t i = 0; i < len; ++i)
      for (int64_t j = i; j < len; ++j) {
        double p = w[at(line, j)];
        for (int64_t k = 0; k <= j; ++k)
          if (k != i) p *= x[at(line, k)];
        g[at(line, i)] += p;
      }
  return g;
}

}  // namespace

TEST_CASE("relu, abs and sign at zero have gradient 0", "[autograd][subgradient]") {
  // PyTorch: relu passes the gradient where the output is > 0; abs' = sgn(x), 0 at ±0.
  CHECK(grad_of([](const Tensor& x) { return relu(x); }, {-1, 0, -0.0, 1e-300, 2}) ==
        std::vector<double>{0, 0, 0, 1, 1});
  CHECK(grad_of([](const Tensor& x) { return abs(x); }, {-2, 0, -0.0, 3}) == std::vector<double>{-1, 0, 0, 1});
  CHECK(grad_of([](const Tensor& x) { return sign(x); }, {-2, 0, 3}) == std::vector<double>{0, 0, 0});
}

TEST_CASE("clamp passes the gradient at its bounds, not beyond them or for NaN", "[autograd][subgradient]") {
  // PyTorch's clamp_backward keeps the gradient where min <= x <= max (bounds included;
  // unlike hardtanh, whose bounds are excluded: below).
  CHECK(grad_of([](const Tensor& x) { return clamp(x, -1.0, 1.0); }, {-2, -1, 0, 1, 2, kNan}) ==
        std::vector<double>{0, 1, 1, 1, 0, 0});
  // clamp with only a minimum is relu-like but passes the gradient at the bound (relu does not).
  CHECK(grad_of([](const Tensor& x) { return clamp(x, 0.0); }, {-1, 0, 1}) == std::vector<double>{0, 1, 1});
  CHECK(grad_of([](const Tensor& x) { return clamp(x, Scalar(), 0.0); }, {-1, 0, 1}) == std::vector<double>{1, 1, 0});
}

TEST_CASE("maximum and minimum split the gradient evenly at ties", "[autograd][subgradient]") {
  for (bool is_max : {true, false}) {
    INFO((is_max ? "maximum" : "minimum"));
    Tensor a = leaf({1, 2, 3}), b = leaf({3, 2, 1});
    const Tensor out = is_max ? maximum(a, b) : minimum(a, b);
    const auto g = autograd::grad({sum(out)}, {a, b});
    CHECK(values(g[0]) == (is_max ? std::vector<double>{0, 0.5, 1} : std::vector<double>{1, 0.5, 0}));
    CHECK(values(g[1]) == (is_max ? std::vector<double>{1, 0.5, 0} : std::vector<double>{0, 0.5, 1}));
  }
}

TEST_CASE("amax, amin and max() split the gradient evenly among tied elements", "[autograd][subgradient]") {
  // PyTorch: amax/amin and the full max()/min() distribute evenly over the ties.
  CHECK(grad_of([](const Tensor& x) { return amax(x); }, {1, 3, 3, 2}) == std::vector<double>{0, 0.5, 0.5, 0});
  CHECK(grad_of([](const Tensor& x) { return amin(x); }, {1, 3, 1, 1}) ==
        std::vector<double>{1.0 / 3, 0, 1.0 / 3, 1.0 / 3});
  CHECK(grad_of([](const Tensor& x) { return max(x); }, {5, 5}) == std::vector<double>{0.5, 0.5});
  CHECK(grad_of([](const Tensor& x) { return min(x); }, {-1, 4, -1}) == std::vector<double>{0.5, 0, 0.5});
  // Along a dim, each row's ties share that row's gradient (weights 2 and 6).
  CHECK(grad_of([](const Tensor& x) { return amax(x, {1}); }, {1, 4, 4, 7, 7, 7}, {2, 3}, {2, 6}) ==
        std::vector<double>{0, 1, 1, 2, 2, 2});
  CHECK(grad_of([](const Tensor& x) { return amin(x, {0}, /*keepdim=*/true); }, {1, 2, 1, 2}, {2, 2}) ==
        std::vector<double>{0.5, 0.5, 0.5, 0.5});
}

TEST_CASE("max and min along a dim send the gradient to the first tied index", "[autograd][subgradient]") {
  // PyTorch: the returned index (the first maximal one) takes the whole gradient.
  const std::vector<double> x = {1, 3, 3, 2, 2, 0};
  CHECK(grad_of([](const Tensor& t) { return max(t, 1).values; }, x, {2, 3}) ==
        std::vector<double>{0, 1, 0, 1, 0, 0});
  CHECK(grad_of([](const Tensor& t) { return min(t, 0, true).values; }, {4, 1, 4, 1}, {2, 2}) ==
        std::vector<double>{1, 1, 0, 0});
  Tensor t = leaf(x, {2, 3});
  CHECK(values(max(t, 1).indices) == std::vector<double>{1, 0});
}

TEST_CASE("the inf-norm splits the gradient among tied magnitudes with their signs", "[autograd][subgradient]") {
  CHECK(grad_of([](const Tensor& x) { return norm(x, INFINITY); }, {-3, 1, 3, 2}) ==
        std::vector<double>{-0.5, 0, 0.5, 0});
}

TEST_CASE("prod's gradient with one zero and with two zeros", "[autograd][subgradient]") {
  // d prod / d x_i is the product of the others: with one zero only the zero's entry is
  // non-zero; with two, every product of the others holds a zero.
  CHECK(grad_of([](const Tensor& x) { return prod(x); }, {2, 3, 4}) == std::vector<double>{12, 8, 6});
  CHECK(grad_of([](const Tensor& x) { return prod(x); }, {2, 0, 3}) == std::vector<double>{0, 6, 0});
  CHECK(grad_of([](const Tensor& x) { return prod(x); }, {2, 0, 0, 3}) == std::vector<double>{0, 0, 0, 0});
  CHECK(grad_of([](const Tensor& x) { return prod(x); }, {0}) == std::vector<double>{1});
  // Along a dim, rows with no zero, one zero and two zeros.
  CHECK(grad_of([](const Tensor& x) { return prod(x, {1}); }, {1, 2, 3, 0, 5, 6, 0, 0, 7}, {3, 3}) ==
        std::vector<double>{6, 3, 2, 30, 0, 0, 0, 0, 0});
}

TEST_CASE("cumprod's gradient is exact with one zero and with several zeros", "[autograd][subgradient]") {
  const std::vector<std::vector<double>> rows = {
      {2, 3, 0.5, 4, -1},   // no zero
      {0, 3, 0.5, 4, -1},   // a zero first
      {2, 3, 0, 4, -1},     // one zero inside
      {2, 3, 0.5, 4, 0},    // a zero last
      {2, 0, 0, 4, -1},     // two adjacent zeros
      {0, 3, 0.5, 0, -1},   // two zeros apart
      {0, 0, 0, 0, 0},      // zeros only
  };
  const std::vector<double> w = {0.3, -1.2, 0.7, 2.0, -0.4};
  for (const auto& r : rows) {
    INFO("x = " << make(r, kFloat64).str());
    const auto got = grad_of([](const Tensor& x) { return cumprod(x, 0); }, r, {}, w);
    const auto want = cumprod_grad_reference(r, w, 1, 5, 1);
    for (size_t i = 0; i < r.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-14).margin(1e-15));
  }
  // A 2-D tensor along each dim: every line has its own zeros.
  const std::vector<double> x = {1, 0, 2, 0.5, 3, 0, 0, 4, -2, 0, 5, 1};
  std::vector<double> w2(x.size());
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.25 * static_cast<double>(i) - 1;
  for (int dim : {0, 1}) {
    INFO("dim " << dim);
    const auto got = grad_of([dim](const Tensor& t) { return cumprod(t, dim); }, x, {3, 4}, w2);
    const auto want = cumprod_grad_reference(x, w2, 3, 4, dim);
    for (size_t i = 0; i < x.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-14).margin(1e-15));
  }
  // cumprod is linear in each input, so a central difference is exact up to rounding.
  const std::vector<double> z = {1.5, 0, -2, 0, 3};
  const auto analytic = grad_of([](const Tensor& t) { return cumprod(t, 0); }, z, {}, w);
  for (size_t i = 0; i < z.size(); ++i) {
    auto f = [&](double d) {
      std::vector<double> v = z;
      v[i] += d;
      return sum(mul(cumprod(make(v, kFloat64), 0), make(w, kFloat64))).item<double>();
    };
    CHECK(analytic[i] == Approx((f(0.5) - f(-0.5)) / 1.0).margin(1e-12));
  }
}

TEST_CASE("embedding's padding row gets no gradient", "[autograd][subgradient]") {
  Tensor weight = leaf({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2});
  const Tensor idx = from_vector(std::vector<int64_t>{0, 2, 2, 1, 0});
  const Tensor out = F::embedding(idx, weight, /*padding_idx=*/2);
  const Tensor w = make({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, kFloat64, {5, 2});
  const auto g = values(autograd::grad({sum(mul(out, w))}, {weight})[0]);
  // Row 0 gathers batch rows 0 and 4, row 1 batch row 3; row 2 (padding) nothing; row 3 unused.
  CHECK(g == std::vector<double>{1 + 9, 2 + 10, 7, 8, 0, 0, 0, 0});
  // Without padding_idx the same row accumulates.
  Tensor weight2 = leaf({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2});
  const auto g2 = values(autograd::grad({sum(mul(F::embedding(idx, weight2), w))}, {weight2})[0]);
  CHECK(g2 == std::vector<double>{10, 12, 7, 8, 3 + 5, 4 + 6, 0, 0});
  // A negative padding_idx counts from the end, as in PyTorch: -2 of 4 rows is row 2.
  Tensor weight3 = leaf({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2});
  CHECK(values(autograd::grad({sum(mul(F::embedding(idx, weight3, -2), w))}, {weight3})[0]) == g);
}

TEST_CASE("the piecewise activations at their kinks take PyTorch's subgradients", "[autograd][subgradient]") {
  // hardtanh: 1 strictly inside (min_val, max_val) only (hardtanh_backward), unlike clamp's closed interval.
  CHECK(grad_of([](const Tensor& x) { return F::hardtanh(x, -1, 2); }, {-1.5, -1, 0, 2, 3}) ==
        std::vector<double>{0, 0, 1, 0, 0});
  CHECK(grad_of([](const Tensor& x) { return clamp(x, -1, 2); }, {-1, 2}) == std::vector<double>{1, 1});
  // leaky_relu, elu and prelu: the negative side's slope at 0.
  CHECK(grad_of([](const Tensor& x) { return F::leaky_relu(x, 0.25); }, {-1, 0, -0.0, 1}) ==
        std::vector<double>{0.25, 0.25, 0.25, 1});
  CHECK(grad_of([](const Tensor& x) { return F::elu(x, 0.5, 2, 3); }, {0, 1}) == std::vector<double>{3, 2});
  Tensor w = leaf({0.25}, {1});
  Tensor x = leaf({-2, 0, 3});
  const auto g = autograd::grad({sum(F::prelu(x, w))}, {x, w});
  CHECK(values(g[0]) == std::vector<double>{0.25, 0.25, 1});
  CHECK(values(g[1]) == std::vector<double>{-2});  // x where x <= 0: -2 + 0
  // hardswish: 0 below -3, x / 3 + 1 / 2 on the closed [-3, 3], 1 above; hardsigmoid: 1/6 on the open (-3, 3).
  CHECK(grad_of([](const Tensor& x) { return F::hardswish(x); }, {-4, -3, 0, 3, 4}) ==
        std::vector<double>{0, -0.5, 0.5, 1.5, 1});
  CHECK(grad_of([](const Tensor& x) { return F::hardsigmoid(x); }, {-3, 0, 3}) == std::vector<double>{0, 1.0 / 6, 0});
  // logit with eps: no gradient outside [eps, 1 - eps], where it clamped; 1 / (x (1 - x)) inside. Without eps: NaN outside [0, 1].
  CHECK(grad_of([](const Tensor& x) { return logit(x, 0.25); }, {0.1, 0.5, 0.9}) == std::vector<double>{0, 4, 0});
  const auto gl = grad_of([](const Tensor& x) { return logit(x); }, {-0.5, 0.5, 1.5});
  CHECK((std::isnan(gl[0]) && gl[1] == 4 && std::isnan(gl[2])));
}

TEST_CASE("softplus switches to the identity's gradient only above its threshold", "[autograd][subgradient]") {
  // PyTorch: where beta x > threshold the gradient is 1, else sigmoid(beta x) (at equality too).
  const auto g = grad_of([](const Tensor& x) { return F::softplus(x, 2.0, 20.0); }, {10, 10.5});
  CHECK(g[0] == Approx(1 / (1 + std::exp(-20.0))).epsilon(1e-15));
  CHECK(g[0] != 1.0);
  CHECK(g[1] == 1.0);
}

TEST_CASE("pow's gradients at a zero base and a zero exponent", "[autograd][subgradient]") {
  // PyTorch: d a^b / da is 0 where b == 0 (also at a = 0); d a^b / db is 0 where a == 0, b >= 0.
  Tensor a = leaf({0, 0, 0, 2}), b = leaf({0, 1, 2, 0});
  const auto g = autograd::grad({sum(pow(a, b))}, {a, b});
  CHECK(values(g[0]) == std::vector<double>{0, 1, 0, 0});
  CHECK(values(g[1]) == std::vector<double>{0, 0, 0, std::log(2.0)});
}
