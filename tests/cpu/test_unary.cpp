// Unary elementwise ops on the CPU: values against <cmath> in double on every
// floating dtype, integer semantics, in-place forms, predicates, layouts and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>
#include <vector>

#include <mixt/mixt.h>

#include "reference.h"
#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
namespace F = mixt::nn::functional;

namespace {

struct MathCase {
  const char* name;  // also the name of its reference in tests/support/reference.h
  Tensor (*op)(const Tensor&);
  Tensor& (*op_)(Tensor&);
  std::vector<double> inputs;
};

std::vector<MathCase> math_cases() {
  const std::vector<double> any{-2.5, -1.0, -0.3, 0.0, 0.25, 0.7, 1.5, 3.0};
  const std::vector<double> pos{0.125, 0.3, 0.5, 1.0, 2.0, 3.5, 10.0};
  const std::vector<double> unit{-0.9, -0.5, -0.1, 0.0, 0.2, 0.6, 0.875};
  return {
      {"exp", exp, exp_, any},         {"expm1", expm1, expm1_, any},
      {"log", log, log_, pos},         {"log1p", log1p, log1p_, pos},
      {"log2", log2, log2_, pos},      {"log10", log10, log10_, pos},
      {"sqrt", sqrt, sqrt_, pos},      {"rsqrt", rsqrt, rsqrt_, pos},
      {"reciprocal", reciprocal, reciprocal_, pos},
      {"sin", sin, sin_, any},         {"cos", cos, cos_, any},
      {"tan", tan, tan_, unit},        {"tanh", tanh, tanh_, any},
      {"sigmoid", sigmoid, sigmoid_, any},
      {"silu", F::silu, F::silu_, any},      {"erf", erf, erf_, any},
      {"erfinv", erfinv, erfinv_, unit},
      {"neg", neg, neg_, any},         {"abs", abs, abs_, any},
      {"relu", relu, relu_, any},      {"floor", floor, floor_, any},
      {"ceil", ceil, ceil_, any},      {"sign", sign, sign_, any},
  };
}

}  // namespace

TEST_CASE("unary math ops match <cmath> on every floating dtype", "[unary]") {
  for (const MathCase& mc : math_cases()) {
    for (ScalarType dt : kFloatTypes) {
      INFO(mc.name << " on " << dtype_name(dt));
      const Tensor x = make(mc.inputs, dt);
      const std::vector<double> xs = values(x);  // the inputs as rounded to dt
      const Tensor y = mc.op(x);
      REQUIRE(y.dtype() == dt);
      REQUIRE(y.sizes() == x.sizes());
      const std::vector<double> got = values(y);
      for (size_t i = 0; i < xs.size(); ++i) {
        double want = ref::unary(mc.name, xs[i]);
        INFO("x = " << xs[i] << ", got " << got[i] << ", want " << want);
        // Results saturate in float8 e4m3fn (no infinity): compare after the same saturation.
        if (dt == kFloat8_e4m3fn && std::abs(want) > 448) want = std::copysign(448.0, want);
        CHECK(close(got[i], want, tol_for(dt)));
      }
      // In-place form: same values, same tensor, version bumped.
      Tensor z = x.clone();
      const uint32_t v0 = z.version();
      Tensor& r = mc.op_(z);
      CHECK(&r == &z);
      CHECK(z.version() > v0);
      CHECK(values(z) == got);
    }
  }
}

TEST_CASE("gelu (erf and tanh forms) and softplus", "[unary]") {
  const std::vector<double> in{-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5};
  for (ScalarType dt : kFloatTypes) {
    INFO(dtype_name(dt));
    const Tensor x = make(in, dt);
    const std::vector<double> xs = values(x);
    const auto g = values(F::gelu(x)), gt = values(F::gelu(x, "tanh"));
    const auto sp = values(F::softplus(x)), sp2 = values(F::softplus(x, 2.0, 1.0));
    for (size_t i = 0; i < xs.size(); ++i) {
      const double v = xs[i];
      CHECK(close(g[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), tol_for(dt)));
      const double inner = std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v);
      CHECK(close(gt[i], 0.5 * v * (1 + std::tanh(inner)), tol_for(dt)));
      CHECK(close(sp[i], std::log1p(std::exp(v)), tol_for(dt)));
      // beta = 2, threshold = 1: linear where 2 v > 1.
      CHECK(close(sp2[i], 2 * v > 1 ? v : std::log1p(std::exp(2 * v)) / 2, tol_for(dt)));
    }
  }
  // The tanh form differs from the erf form (so the flag is honoured).
  const Tensor x = make({1.0}, kFloat64);
  CHECK(F::gelu(x).item<double>() != F::gelu(x, "tanh").item<double>());
  Tensor y = make({-1.0, 2.0}, kFloat32);
  F::gelu_(y, "tanh");
  CHECK(close(values(y)[1], 0.5 * 2 * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (2 + 0.044715 * 8))),
              tol_for(kFloat32)));
  CHECK_THROWS_AS(F::gelu(x, "fast"), Error);
}

TEST_CASE("erfinv edges", "[unary]") {
  const auto r = values(erfinv(make({-1.0, 1.0, 1.5, -2.0, 0.0, 0.999999, -0.999999999999, 0.3}, kFloat64)));
  CHECK(r[0] == -kInf);
  CHECK(r[1] == kInf);
  CHECK(std::isnan(r[2]));
  CHECK(std::isnan(r[3]));
  CHECK(r[4] == 0.0);
  CHECK(std::abs(std::erf(r[5]) - 0.999999) < 1e-15);
  CHECK(std::abs(std::erf(r[7]) - 0.3) < 1e-16);
  // Near -1, against a bisection on erfc (erf has no resolution left there).
  const double tail = 1.0 - 0.999999999999;  // exact in double
  double lo = 0, hi = 7;
  for (int i = 0; i < 200; ++i) (std::erfc(0.5 * (lo + hi)) > tail ? lo : hi) = 0.5 * (lo + hi);
  CHECK(std::abs(r[6] + lo) < 1e-12);
}

TEST_CASE("float-only unary ops promote integer and bool inputs to float32", "[unary]") {
  const Tensor i = from_vector(std::vector<int32_t>{0, 1, 4, 9});
  const Tensor e = exp(i);
  CHECK(e.dtype() == kFloat32);
  const auto ev = values(e);
  for (int k = 0; k < 4; ++k) CHECK(close(ev[k], std::exp(double(k * k)), tol_for(kFloat32)));
  CHECK(values(sqrt(i)) == std::vector<double>{0, 1, 2, 3});
  CHECK(sqrt(from_vector(std::vector<int64_t>{4})).dtype() == kFloat32);
  const Tensor b = from_vector(std::vector<uint8_t>{0, 1}).to(kBool);
  CHECK(sigmoid(b).dtype() == kFloat32);
  CHECK(close(values(sigmoid(b))[1], 1 / (1 + std::exp(-1.0)), tol_for(kFloat32)));
  CHECK(erf(from_vector(std::vector<int8_t>{1})).dtype() == kFloat32);
  // In place, the float result can't be written back into the integer tensor.
  Tensor j = i.clone();
  CHECK_THROWS_AS(exp_(j), Error);
  CHECK_THROWS_AS(log_(j), Error);
  CHECK(values(j) == std::vector<double>{0, 1, 4, 9});
  // gelu, silu and softplus promote too (PyTorch raises for integer inputs there).
  CHECK(F::gelu(i).dtype() == kFloat32);
  CHECK(close(values(F::gelu(i))[1], 0.5 * (1 + std::erf(1 / std::sqrt(2.0))), tol_for(kFloat32)));
  CHECK(close(values(F::silu(b))[1], 1 / (1 + std::exp(-1.0)), tol_for(kFloat32)));
  CHECK(close(values(F::softplus(i))[0], std::log(2.0), tol_for(kFloat32)));
  CHECK_THROWS_AS(F::gelu_(j), Error);
  CHECK_THROWS_AS(F::softplus_(j), Error);
}

TEST_CASE("neg, abs, sign, relu, floor, ceil, round keep integer dtypes", "[unary]") {
  for (ScalarType dt : {kInt8, kInt32, kInt64}) {
    INFO(dtype_name(dt));
    const Tensor x = make({-5, -1, 0, 3, 7}, dt);
    CHECK(neg(x).dtype() == dt);
    CHECK(values(neg(x)) == std::vector<double>{5, 1, 0, -3, -7});
    CHECK(values(abs(x)) == std::vector<double>{5, 1, 0, 3, 7});
    CHECK(values(sign(x)) == std::vector<double>{-1, -1, 0, 1, 1});
    CHECK(values(relu(x)) == std::vector<double>{0, 0, 0, 3, 7});
    CHECK(relu(x).dtype() == dt);
    for (Tensor y : {floor(x), ceil(x), round(x)}) {
      CHECK(y.dtype() == dt);
      CHECK(values(y) == values(x));
    }
    Tensor z = x.clone();
    neg_(z);
    CHECK(values(z) == std::vector<double>{5, 1, 0, -3, -7});
  }
  const Tensor u = from_vector(std::vector<uint8_t>{0, 3, 255});
  CHECK(values(abs(u)) == std::vector<double>{0, 3, 255});
  CHECK(values(sign(u)) == std::vector<double>{0, 1, 1});
  CHECK(values(neg(u)) == std::vector<double>{0, 253, 1});  // wraps modulo 256
  // Negating the most negative value wraps (no UB, no trap).
  const int32_t mn = std::numeric_limits<int32_t>::min();
  CHECK(neg(from_vector(std::vector<int32_t>{mn})).item<int64_t>() == mn);
  CHECK(abs(from_vector(std::vector<int8_t>{-128})).item<int64_t>() == -128);
  CHECK_THROWS_AS(round(from_vector(std::vector<int32_t>{15}), 1), Error);
}

TEST_CASE("bool inputs: errors and supported ops", "[unary]") {
  const Tensor b = from_vector(std::vector<uint8_t>{1, 0, 1}).to(kBool);
  CHECK_THROWS_AS(neg(b), Error);
  CHECK_THROWS_AS(-b, Error);
  CHECK_THROWS_AS(abs(b), Error);
  CHECK_THROWS_AS(relu(b), Error);
  CHECK_THROWS_AS(floor(b), Error);
  CHECK_THROWS_AS(clamp(b, 0, 1), Error);
  CHECK(sign(b).dtype() == kBool);
  CHECK(values(sign(b)) == std::vector<double>{1, 0, 1});
}

TEST_CASE("sign of special values", "[unary]") {
  // sign(-0) is +0 (PyTorch's (0 < x) - (x < 0)); NaN propagates (PyTorch returns 0 here); -1e-50
  // underflows to -0 in float32, whose sign is +0.
  CHECK(same_values(values(sign(make({-kInf, -0.0, 0.0, kInf, kNan, -1e-50}, kFloat32))), {-1, 0.0, 0.0, 1, kNan, 0.0}));
}

TEST_CASE("round: half to even, and decimals", "[unary]") {
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    INFO(dtype_name(dt));
    const Tensor x = make({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 2.4, -2.6}, dt);
    CHECK(same_values(values(round(x)), {-2, -2, -0.0, 0, 2, 2, 4, 2, -3}));  // round(-0.5) is -0
    Tensor y = x.clone();
    round_(y);
    CHECK(same_values(values(y), values(round(x))));
  }
  const auto d2 = values(round(make({1.2345, -2.71828, 0.125}, kFloat64), 2));
  CHECK(d2[0] == Approx(1.23));
  CHECK(d2[1] == Approx(-2.72));
  CHECK(d2[2] == Approx(0.12));  // 12.5 rounds to even
  const auto dm = values(round(make({1234.5, 1250.0, -1351.0}, kFloat64), -2));
  CHECK(dm == std::vector<double>{1200, 1200, -1400});
  CHECK(values(round(make({1.26}, kFloat32), 1))[0] == Approx(1.3).epsilon(1e-6));
}

TEST_CASE("floor and ceil on floats", "[unary]") {
  const Tensor x = make({-1.5, -0.2, 0.0, 0.2, 1.5, 2.0}, kFloat32);
  CHECK(same_values(values(floor(x)), {-2, -1, 0, 0, 1, 2}));
  CHECK(same_values(values(ceil(x)), {-1, -0.0, 0, 1, 2, 2}));  // ceil(-0.2) is -0
}

TEST_CASE("clamp", "[unary]") {
  const Tensor x = make({-3.0, -1.0, 0.5, 2.0, 5.0, kNan}, kFloat32);
  auto c = values(clamp(x, -1.5, 2.5));
  CHECK(std::vector<double>(c.begin(), c.end() - 1) == std::vector<double>{-1.5, -1.0, 0.5, 2.0, 2.5});
  CHECK(std::isnan(c.back()));
  c = values(clamp_min(x, 0.0));
  CHECK(std::vector<double>(c.begin(), c.end() - 1) == std::vector<double>{0, 0, 0.5, 2, 5});
  c = values(clamp_max(x, 1));
  CHECK(std::vector<double>(c.begin(), c.end() - 1) == std::vector<double>{-3, -1, 0.5, 1, 1});
  // min > max: everything becomes max (as PyTorch).
  c = values(clamp(x, 3.0, 1.0));
  CHECK(std::vector<double>(c.begin(), c.end() - 1) == std::vector<double>(5, 1.0));
  CHECK_THROWS_AS(clamp(x, Scalar(), Scalar()), Error);
  // Integer tensors keep their dtype with integer bounds, become float32 with float bounds.
  const Tensor i = from_vector(std::vector<int32_t>{-5, 0, 5, 10});
  CHECK(clamp(i, 0, 6).dtype() == kInt32);
  CHECK(values(clamp(i, 0, 6)) == std::vector<double>{0, 0, 5, 6});
  CHECK(clamp(i, 0.5).dtype() == kFloat32);
  CHECK(values(clamp(i, 0.5, 7.5)) == std::vector<double>{0.5, 0.5, 5, 7.5});
  Tensor j = i.clone();
  CHECK_THROWS_AS(clamp_(j, 0.5), Error);
  const uint32_t v0 = j.version();
  clamp_(j, -1, 1);
  CHECK(j.version() > v0);
  CHECK(values(j) == std::vector<double>{-1, 0, 1, 1});
  // Bounds beyond the dtype's range saturate.
  CHECK(values(clamp(from_vector(std::vector<int8_t>{-100, 100}), -1000, 1000)) == std::vector<double>{-100, 100});
  // Narrow floats.
  for (ScalarType dt : {kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2})
    CHECK(values(clamp(make({-4.0, 0.5, 4.0}, dt), -1, 2)) == std::vector<double>{-1, 0.5, 2});
}

TEST_CASE("predicates isfinite, isnan, isinf, logical_not", "[unary]") {
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kFloat8_e5m2}) {
    INFO(dtype_name(dt));
    const Tensor x = make({1.0, kNan, kInf, -kInf, 0.0}, dt);
    CHECK(isfinite(x).dtype() == kBool);
    CHECK(values(isfinite(x)) == std::vector<double>{1, 0, 0, 0, 1});
    CHECK(values(isnan(x)) == std::vector<double>{0, 1, 0, 0, 0});
    CHECK(values(isinf(x)) == std::vector<double>{0, 0, 1, 1, 0});
    CHECK(values(logical_not(x)) == std::vector<double>{0, 0, 0, 0, 1});
  }
  // float8 e4m3fn has no infinity (inf saturates to 448) but has NaN.
  const Tensor e = make({kNan, kInf, 1.0}, kFloat8_e4m3fn);
  CHECK(values(isinf(e)) == std::vector<double>{0, 0, 0});
  CHECK(values(isnan(e)) == std::vector<double>{1, 0, 0});
  const Tensor i = from_vector(std::vector<int64_t>{0, -3, 7});
  CHECK(values(isfinite(i)) == std::vector<double>{1, 1, 1});
  CHECK(values(isnan(i)) == std::vector<double>{0, 0, 0});
  CHECK(values(isinf(i)) == std::vector<double>{0, 0, 0});
  CHECK(logical_not(i).dtype() == kBool);
  CHECK(values(logical_not(i)) == std::vector<double>{1, 0, 0});
  CHECK(values(logical_not(logical_not(i))) == std::vector<double>{0, 1, 1});
}

TEST_CASE("unary ops on non-contiguous inputs and views", "[unary]") {
  std::vector<double> v(12);
  for (int k = 0; k < 12; ++k) v[k] = 0.25 * k - 1.0;
  const Tensor m = make(v, kFloat32, {3, 4});
  const Tensor t = m.t();  // [4, 3], transposed strides
  REQUIRE_FALSE(t.is_contiguous());
  const Tensor y = exp(t);
  CHECK(y.sizes() == Shape{4, 3});
  const auto got = values(y);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) CHECK(close(got[r * 3 + c], std::exp(v[c * 4 + r]), tol_for(kFloat32)));
  // A strided slice.
  const Tensor s = m.slice(1, 0, 4, 2);  // columns 0 and 2
  const auto sg = values(abs(s));
  CHECK(sg == std::vector<double>{1.0, 0.5, 0.0, 0.5, 1.0, 1.5});
  // In place on a column view: only that column changes.
  Tensor mm = m.clone();
  Tensor col = mm.select(1, 1);
  neg_(col);
  const auto after = values(mm);
  for (int k = 0; k < 12; ++k) CHECK(after[k] == (k % 4 == 1 ? -v[k] : v[k]));
  // In place on a transposed tensor.
  Tensor tt = m.clone().t();
  sqrt_(abs_(tt));
  const auto ta = values(tt);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) CHECK(close(ta[r * 3 + c], std::sqrt(std::abs(v[c * 4 + r])), tol_for(kFloat32)));
  // A broadcast (expanded) input is fine, an expanded output is refused.
  const Tensor ex = make({2.0}, kFloat32).expand({3});
  CHECK(values(sqrt(ex)) == std::vector<double>(3, std::sqrt(2.0f)));
  Tensor ex2 = make({2.0}, kFloat32).expand({3});
  CHECK_THROWS_AS(sqrt_(ex2), Error);
}

TEST_CASE("large unary inputs use the parallel path", "[unary]") {
  const int64_t n = 300001;
  std::vector<double> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = std::sin(0.001 * k) * 3.0;
  const Tensor x = make(v, kFloat32);
  const auto y = values(tanh(x));
  const auto xs = values(x);
  int64_t bad = 0;
  for (int64_t k = 0; k < n; ++k) bad += !close(y[k], std::tanh(xs[k]), tol_for(kFloat32));
  CHECK(bad == 0);
  // Non-contiguous and large.
  const Tensor m = make(v, kFloat64, {n}).narrow(0, 0, 300000).view({600, 500}).t();
  const auto r = values(relu(m));
  for (int64_t i = 0; i < 500; i += 7)
    for (int64_t j = 0; j < 600; j += 11) CHECK(r[i * 600 + j] == std::max(v[j * 500 + i], 0.0));
  Tensor h = make(v, kFloat16);
  const auto hs = values(h);
  neg_(h);
  const auto hn = values(h);
  for (int64_t k = 0; k < n; k += 997) CHECK(hn[k] == -hs[k]);
}

TEST_CASE("zero-size unary inputs", "[unary]") {
  const Tensor z = empty({0, 3}, {.dtype = kFloat16, .device = std::nullopt, .requires_grad = false});
  CHECK(exp(z).sizes() == Shape{0, 3});
  CHECK(exp(z).dtype() == kFloat16);
  CHECK(isnan(z).dtype() == kBool);
  CHECK(isnan(z).sizes() == Shape{0, 3});
  CHECK(clamp(z, 0, 1).numel() == 0);
  const Tensor zi = from_vector(std::vector<int32_t>{});
  CHECK(sqrt(zi).dtype() == kFloat32);
  CHECK(sqrt(zi).numel() == 0);
  Tensor zz = z.clone();
  CHECK(abs_(zz).numel() == 0);
}

TEST_CASE("unary operator and tensor methods", "[unary]") {
  const Tensor x = make({-1.0, 2.0}, kFloat32);
  CHECK(values(-x) == std::vector<double>{1, -2});
  CHECK(values(x.abs()) == std::vector<double>{1, 2});
  CHECK(values(x.relu()) == std::vector<double>{0, 2});
  CHECK(values(x.neg()) == std::vector<double>{1, -2});
  CHECK(close(values(x.exp())[1], std::exp(2.0), tol_for(kFloat32)));
  CHECK(close(values(x.abs().sqrt())[1], std::sqrt(2.0), tol_for(kFloat32)));
  CHECK(close(values(x.abs().log())[1], std::log(2.0), tol_for(kFloat32)));
}

TEST_CASE("hardtanh on integers saturates infinite bounds instead of converting them out of range", "[unary]") {
  // Integer tensors take the bounds truncated to integers; ±inf (and values beyond int64) saturate,
  // as every float -> int conversion does (Note [Conversions]), rather than being cast unchecked.
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = from_vector<int64_t>({-5, 0, 7});
  CHECK(F::hardtanh(x, -inf, inf).to_vector<int64_t>() == std::vector<int64_t>{-5, 0, 7});
  CHECK(F::hardtanh(x, -2.7, 1e300).to_vector<int64_t>() == std::vector<int64_t>{-2, 0, 7});
  CHECK(F::hardtanh(from_vector<uint8_t>({3, 200}), 0, inf).to_vector<int64_t>() == std::vector<int64_t>{3, 200});
  CHECK_THROWS_AS(F::hardtanh(from_vector<uint8_t>({3}), -inf, 4), Error);
}
