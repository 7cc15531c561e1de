// Special-value tables of every unary op on every floating dtype: NaN, +-Inf,
// +-0 (sign checked with std::signbit, never with ==), the dtype's subnormals,
// smallest normal and largest finite values. Results at +-0, +-Inf and NaN are
// written out (C99 Annex F for the <cmath> functions, PyTorch's formulas for the
// others); the other inputs are checked against the double reference of
// tests/support/reference.h, rounded as the dtype rounds (e4m3fn saturates).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include <mixt/mixt.h>

#include "reference.h"
#include "test_util.h"
#include "ulps.h"

using namespace mixt;
using namespace mixt::testing;
namespace F = mixt::nn::functional;

namespace {

// The results at +0, -0, +Inf and -Inf (NaN gives NaN for every op here).
struct AtSpecials {
  double pos_zero, neg_zero, pos_inf, neg_inf;
};

struct UnaryOp {
  const char* name;  // the reference's name (reference.h)
  Tensor (*op)(const Tensor&);
  Tensor& (*op_)(Tensor&);  // the in-place form
  AtSpecials at;
  double ulps;  // on the other inputs: ulps of the dtype around the double reference
};

const double kLog2 = std::numbers::ln2;
const double kHalfPi = std::numbers::pi / 2;

// Ulps: 0.5 where the result is exact; 1 for one libm call or one float operation before the
// rounding to the dtype; more where the formula chains operations (sigmoid, silu: exp, a sum and a
// quotient; rsqrt: sqrt then a quotient) or solves (erfinv: Newton's method in double).
std::vector<UnaryOp> unary_ops() {
  return {
      {"neg", neg, neg_, {-0.0, 0.0, -kInf, kInf}, 0.5},
      {"abs", abs, abs_, {0.0, 0.0, kInf, kInf}, 0.5},
      {"sign", sign, sign_, {0.0, 0.0, 1, -1}, 0.5},  // sign(-0) is +0, as PyTorch's (0 < x) - (x < 0)
      {"exp", exp, exp_, {1, 1, kInf, 0.0}, 1},
      {"expm1", expm1, expm1_, {0.0, -0.0, kInf, -1}, 1},
      {"log", log, log_, {-kInf, -kInf, kInf, kNan}, 1},
      {"log1p", log1p, log1p_, {0.0, -0.0, kInf, kNan}, 1},
      {"log2", log2, log2_, {-kInf, -kInf, kInf, kNan}, 1},
      {"log10", log10, log10_, {-kInf, -kInf, kInf, kNan}, 1},
      {"sqrt", sqrt, sqrt_, {0.0, -0.0, kInf, kNan}, 1},
      {"rsqrt", rsqrt, rsqrt_, {kInf, -kInf, 0.0, kNan}, 1.5},  // 1 / sqrt(-0) = -Inf
      {"reciprocal", reciprocal, reciprocal_, {kInf, -kInf, 0.0, -0.0}, 1},
      {"sin", sin, sin_, {0.0, -0.0, kNan, kNan}, 1},
      {"cos", cos, cos_, {1, 1, kNan, kNan}, 1},
      {"tan", tan, tan_, {0.0, -0.0, kNan, kNan}, 1},
      {"tanh", tanh, tanh_, {0.0, -0.0, 1, -1}, 1},
      {"sigmoid", sigmoid, sigmoid_, {0.5, 0.5, 1, 0.0}, 2},
      // relu(-0) keeps -0 (x unless x < 0; neither PyTorch nor <cmath> defines the sign).
      {"relu", relu, relu_, {0.0, -0.0, kInf, 0.0}, 0.5},
      // silu(-Inf) = -Inf * sigmoid(-Inf) = -Inf * 0: NaN, as PyTorch's x * sigmoid(x).
      {"silu", F::silu, F::silu_, {0.0, -0.0, kInf, kNan}, 2},
      {"erf", erf, erf_, {0.0, -0.0, 1, -1}, 1},
      {"erfinv", erfinv, erfinv_, {0.0, -0.0, kNan, kNan}, 4},  // erfinv is odd: erfinv(-0) = -0
      {"floor", floor, floor_, {0.0, -0.0, kInf, -kInf}, 0.5},
      {"ceil", ceil, ceil_, {0.0, -0.0, kInf, -kInf}, 0.5},
      {"round", [](const Tensor& t) { return round(t); }, [](Tensor& t) -> Tensor& { return round_(t); }, {0.0, -0.0, kInf, -kInf}, 0.5},
      // gelu(-Inf) = -Inf * (1 + erf(-Inf)) / 2 = -Inf * 0: NaN, as PyTorch's formula.
      // At x = -1, 1 + erf(x / sqrt 2) = 0.32 cancels: erf's ulp of 0.68 is two ulps of the sum, and x / sqrt 2
      // is rounded before (the tanh form likewise).
      {"gelu", [](const Tensor& t) { return F::gelu(t); }, [](Tensor& t) -> Tensor& { return F::gelu_(t); }, {0.0, -0.0, kInf, kNan}, 4},
      {"gelu_tanh", [](const Tensor& t) { return F::gelu(t, "tanh"); }, [](Tensor& t) -> Tensor& { return F::gelu_(t, "tanh"); },
       {0.0, -0.0, kInf, kNan}, 4},
      {"softplus", [](const Tensor& t) { return F::softplus(t); }, [](Tensor& t) -> Tensor& { return F::softplus_(t); },
       {kLog2, kLog2, kInf, 0.0}, 2},
      // C99 Annex F; glibc documents up to 2 ulps for these in float and double.
      {"acos", acos, acos_, {kHalfPi, kHalfPi, kNan, kNan}, 2},
      {"asin", asin, asin_, {0.0, -0.0, kNan, kNan}, 2},
      {"sinh", sinh, sinh_, {0.0, -0.0, kInf, -kInf}, 2},
      {"cosh", cosh, cosh_, {1, 1, kInf, kInf}, 2},
      {"asinh", asinh, asinh_, {0.0, -0.0, kInf, -kInf}, 2},
      {"acosh", acosh, acosh_, {kNan, kNan, kInf, kNan}, 2},
      {"atanh", atanh, atanh_, {0.0, -0.0, kNan, kNan}, 2},  // atanh(+-1) = +-Inf (among the other inputs)
      {"trunc", trunc, trunc_, {0.0, -0.0, kInf, -kInf}, 0.5},
      {"frac", frac, frac_, {0.0, 0.0, kNan, kNan}, 0.5},  // x - trunc(x): -0 - -0 is +0, Inf - Inf NaN
      // log(x / (1 - x)): logit(+-0) = log(+-0) = -Inf, logit(1) = +Inf, Inf / -Inf is NaN.
      {"logit", [](const Tensor& t) { return logit(t); }, [](Tensor& t) -> Tensor& { return logit_(t); },
       {-kInf, -kInf, kNan, kNan}, 3},
      {"hardtanh", [](const Tensor& t) { return F::hardtanh(t); }, [](Tensor& t) -> Tensor& { return F::hardtanh_(t); },
       {0.0, -0.0, 1, -1}, 0.5},
      // hardswish(-Inf) = -Inf * relu6(-Inf + 3) / 6 = -Inf * 0: NaN, as PyTorch's formula.
      {"hardswish", [](const Tensor& t) { return F::hardswish(t); }, [](Tensor& t) -> Tensor& { return F::hardswish_(t); },
       {0.0, -0.0, kInf, kNan}, 2},
      {"hardsigmoid", [](const Tensor& t) { return F::hardsigmoid(t); },
       [](Tensor& t) -> Tensor& { return F::hardsigmoid_(t); }, {0.5, 0.5, 1, 0.0}, 2},
      {"leaky_relu", [](const Tensor& t) { return F::leaky_relu(t); },
       [](Tensor& t) -> Tensor& { return F::leaky_relu_(t); }, {0.0, -0.0, kInf, -kInf}, 2},
      {"elu", [](const Tensor& t) { return F::elu(t); }, [](Tensor& t) -> Tensor& { return F::elu_(t); },
       {0.0, -0.0, kInf, -1}, 1},
      {"selu", F::selu, F::selu_, {0.0, -0.0, kInf, -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946}, 3},
      // mish(-Inf) = -Inf * tanh(log1p(0)) = -Inf * 0: NaN, as PyTorch's x * tanh(softplus(x)).
      {"mish", F::mish, F::mish_, {0.0, -0.0, kInf, kNan}, 5},
  };
}

// The inputs of the table for `dt`: NaN, +-Inf (when the format has them), +-0, the smallest and
// largest subnormals, the smallest normal, the largest finite value, +-1.
std::vector<double> specials_of(ScalarType dt) {
  const Format f = format_of(dt);
  const double sub = min_subnormal(dt), normal = min_normal(dt);
  std::vector<double> v{kNan, 0.0, -0.0};
  if (f.has_inf) v.insert(v.end(), {kInf, -kInf});
  for (double x : {sub, normal - sub, normal, f.max_finite, 1.0}) v.insert(v.end(), {x, -x});
  return v;
}

// The expected result of `u` at x in `dt` and the tolerance in ulps (0: exact, sign of zeros included).
std::pair<double, double> expected(const UnaryOp& u, ScalarType dt, double x) {
  if (std::isnan(x)) return {kNan, 0};
  if (x == 0) return {round_to(dt, std::signbit(x) ? u.at.neg_zero : u.at.pos_zero), 0};
  if (std::isinf(x)) return {round_to(dt, x > 0 ? u.at.pos_inf : u.at.neg_inf), 0};
  const double want = ref::unary(u.name, x);
  return {want, round_to(dt, want) == 0 ? 0 : u.ulps};
}

// "" when got matches want (exactly, zeros by sign, when ulps is 0), else a description.
std::string mismatch(ScalarType dt, double x, double got, double want, double ulps) {
  bool ok;
  if (ulps == 0 || std::isnan(want)) {
    const double w = round_to(dt, want);
    ok = std::isnan(w) ? std::isnan(got) : got == w && std::signbit(got) == std::signbit(w);
  } else {
    ok = within(dt, got, want, {ulps, 0});
  }
  if (ok) return "";
  std::ostringstream s;
  s.precision(17);
  s << "x = " << x << ": got " << got << ", want " << want;
  return s.str();
}

}  // namespace

TEST_CASE("every unary op at NaN, +-Inf, +-0, subnormals and the largest finite values", "[unary][special]") {
  for (const UnaryOp& u : unary_ops())
    for (ScalarType dt : kFloatTypes) {
      INFO(u.name << " on " << dtype_name(dt));
      const std::vector<double> xs = specials_of(dt);
      const Tensor x = make(xs, dt);
      REQUIRE(values(x).size() == xs.size());
      const Tensor y = u.op(x);
      REQUIRE(y.dtype() == dt);
      const std::vector<double> got = values(y);
      std::string bad;
      for (size_t i = 0; i < xs.size(); ++i) {
        const auto [want, ulps] = expected(u, dt, xs[i]);
        const std::string m = mismatch(dt, xs[i], got[i], want, ulps);
        if (!m.empty()) bad += "\n  " + m;
      }
      INFO("mismatches:" << bad);
      CHECK(bad.empty());
      // The in-place form stores the same bits (NaN as NaN).
      Tensor z = x.clone();
      u.op_(z);
      const std::vector<double> inplace = values(z);
      for (size_t i = 0; i < xs.size(); ++i) {
        INFO("x = " << xs[i]);
        CHECK((std::isnan(got[i]) ? std::isnan(inplace[i])
                                  : inplace[i] == got[i] && std::signbit(inplace[i]) == std::signbit(got[i])));
      }
    }
}

TEST_CASE("clamp, softplus with beta and the predicates at special values", "[unary][special]") {
  for (ScalarType dt : kFloatTypes) {
    INFO(dtype_name(dt));
    const std::vector<double> xs = specials_of(dt);
    const Tensor x = make(xs, dt);
    const std::vector<double> c = values(clamp(x, -1, 2)), sp = values(F::softplus(x, 2.0, 3.0));
    const std::vector<double> fin = values(isfinite(x)), nan = values(isnan(x)), inf = values(isinf(x)),
                              lnot = values(logical_not(x));
    for (size_t i = 0; i < xs.size(); ++i) {
      const double v = xs[i];
      INFO("x = " << v);
      // clamp: NaN stays NaN, the bounds' values are exact, -0 inside the range stays -0.
      CHECK(mismatch(dt, v, c[i], std::isnan(v) ? v : std::min(std::max(v, -1.0), 2.0), 0) == "");
      // softplus(x, beta 2, threshold 3): x where 2 x > 3, log1p(exp(2 x)) / 2 elsewhere; log(2) / 2 at +-0.
      const double want_sp = ref::softplus(v, 2.0, 3.0);
      CHECK(mismatch(dt, v, sp[i], want_sp, std::isfinite(v) && v != 0 && round_to(dt, want_sp) != 0 ? 2 : 0) == "");
      CHECK(fin[i] == ref::unary("isfinite", v));
      CHECK(nan[i] == ref::unary("isnan", v));
      CHECK(inf[i] == ref::unary("isinf", v));
      CHECK(lnot[i] == ref::unary("logical_not", v));  // -0 is false, NaN is true
    }
  }
}

TEST_CASE("the special-value tables catch a wrong sign of zero", "[unary][special]") {
  // The check itself: -0 where +0 is expected (and the reverse) is a mismatch, == would not see it.
  CHECK(mismatch(kFloat32, 0.0, -0.0, 0.0, 0) != "");
  CHECK(mismatch(kFloat8_e4m3fn, -0.0, 0.0, -0.0, 0) != "");
  CHECK(mismatch(kFloat32, 0.0, 0.0, 0.0, 0) == "");
  // A result off by one subnormal where the reference rounds to zero is a mismatch too.
  CHECK(mismatch(kFloat32, 1e-45, min_subnormal(kFloat32), 0.0, 0) != "");
}
