// gelu_backward and silu_backward (Note [Fused backward ops]): the vector lanes on every
// instruction set this machine has, the scalar formulas of backward_math.h (the CUDA
// kernel's, and the CPU's float64 path) in float and in double, all against long-double
// references over a sweep of the whole range with the special values; the op in every
// floating dtype over strided inputs; autograd through gelu and silu; bad input.
// The bounds are those the note states.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/kernels/common/backward_math.h>
#include <mixt/kernels/cpu/vec/activation_backward.h>
#include <mixt/kernels/cpu/vec/isa.h>
#include <mixt/mixt.h>

#include "ulps.h"

using namespace mixt;
namespace bm = mixt::backward_math;
namespace nnf = mixt::nn::functional;
using bm::ActivationGrad;

namespace {

using LD = long double;
constexpr LD kPi = 3.14159265358979323846264338327950288L;

// The two terms of each derivative, exactly (long double): f'(x) = first + second. The
// error bound is in ulps of |first| + |second|: near f''s zero the terms cancel, and no
// formula of rounded terms is relatively accurate there.
struct Terms {
  LD first = 0, second = 0;
};

LD sigmoid_ref(LD x) { return x < 0 ? std::exp(x) / (1 + std::exp(x)) : 1 / (1 + std::exp(-x)); }

Terms terms_of(ActivationGrad op, LD x) {
  if (std::isinf(x)) return {x > 0 ? 1.0L : 0.0L, 0};
  switch (op) {
    case ActivationGrad::GeluErf:
      return {std::erfc(-x / std::sqrt(2.0L)) / 2, x * std::exp(-x * x / 2) / std::sqrt(2 * kPi)};
    case ActivationGrad::GeluTanh: {
      const LD k = std::sqrt(2 / kPi), c = 0.044715L;
      const LD w = 2 * k * (x + c * x * x * x);
      const LD s = sigmoid_ref(w), s_neg = sigmoid_ref(-w);
      return {s, s * s_neg * 2 * k * x * (1 + 3 * c * x * x)};
    }
    default: {
      const LD s = sigmoid_ref(x);
      return {s, s * x * sigmoid_ref(-x)};
    }
  }
}

const char* name_of(ActivationGrad op) {
  return op == ActivationGrad::GeluErf ? "gelu" : op == ActivationGrad::GeluTanh ? "gelu(tanh)" : "silu";
}
constexpr ActivationGrad kOps[] = {ActivationGrad::GeluErf, ActivationGrad::GeluTanh, ActivationGrad::Silu};

// The error of `got` against g (first + second), in ulps (of a format with `digits` bits
// and normal exponents from `emin`) of |g| (|first| + |second|); the ulp never below the
// subnormal spacing. Infinite where the classes (NaN, Inf) disagree.
template <class T>
double error_ulps(T got, LD g, Terms t) {
  const LD ref = g * (t.first + t.second), mag = std::fabs(g) * (std::fabs(t.first) + std::fabs(t.second));
  if (std::isnan(ref)) return std::isnan(got) ? 0.0 : INFINITY;
  if (std::isinf(ref)) return got == ref ? 0.0 : INFINITY;
  if (!std::isfinite(got)) return INFINITY;
  constexpr int digits = std::numeric_limits<T>::digits, emin = std::numeric_limits<T>::min_exponent - 1;
  const int e = mag == 0 ? emin : std::max(std::ilogb(mag), emin);
  return static_cast<double>(std::fabs(static_cast<LD>(got) - ref) / std::ldexp(1.0L, e - digits + 1));
}

// Every `step`th bit pattern (odd, so mantissas vary) of both signs, and the special values:
// +-0, +-Inf, NaN, the smallest subnormal, the largest finite, the thresholds of the
// formulas (clamps, tails, ErfcTail's pieces) and their neighbours.
template <class T, class U>
std::vector<T> sweep(U step) {
  std::vector<T> v;
  const U inf_bits = [] {
    const T inf = std::numeric_limits<T>::infinity();
    U u;
    std::memcpy(&u, &inf, sizeof(T));
    return u;
  }();
  for (U u = 0; u < inf_bits; u += step) {
    T x;
    std::memcpy(&x, &u, sizeof(T));
    v.push_back(x);
    v.push_back(-x);
  }
  const T inf = std::numeric_limits<T>::infinity();
  for (T s : {T(0), inf, std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::denorm_min(),
              std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(1), T(0.5), T(0.70710678),
              T(0.75179), T(1.2785), T(2), T(4), T(5.65685), T(9.4), T(10), T(12), T(14.6), T(15), T(20), T(30),
              T(32), T(40), T(64), T(80), T(104), T(150), T(600), T(700), T(800), T(1e10)})
    for (T x : {s, -s, std::nextafter(s, inf), std::nextafter(s, -inf), std::nextafter(-s, -inf)}) v.push_back(x);
  // A dense stretch where the derivatives vary most.
  for (int i = -40000; i <= 40000; ++i) v.push_back(static_cast<T>(i / 2000.0));
  return v;
}

// The gradients the sweeps use: 1 for the first value, then a cycle of others.
template <class T>
T grad_at(size_t i) {
  static const T cycle[] = {T(1), T(-0.75), T(3.5), T(1e-3), T(-2)};
  return cycle[i % 5];
}

// The bounds of Note [Fused backward ops], in ulps of |g| (|first| + |second|): `base` for
// every x, plus, for gelu (tanh), 4 |2z| with 2z = 2 k (x + c x^3): the result is about
// exp(2z) for x << 0, so z's own roundings (relative) come out multiplied by |2z| (as in
// the forward gelu (tanh)'s bound); the function's condition number there is as large.
double bound_at(ActivationGrad op, double base, LD x) {
  if (op != ActivationGrad::GeluTanh || !std::isfinite(x)) return base;
  const LD w = 2 * std::sqrt(2 / kPi) * (x + 0.044715L * x * x * x);
  return base + 4 * static_cast<double>(std::fabs(w));
}
// One base for the lanes and the scalar formulas in float and double (the largest measured:
// 4.7 for the lanes, 5.0 for silu in double).
constexpr double kBound = 6;

struct Worst {
  double ratio = 0;  // error / bound
  double ulps = 0;
  double x = 0;
};

template <class T, class F>
Worst worst_error(ActivationGrad op, double base, const std::vector<T>& xs, const F& got_at) {
  Worst w;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double e = error_ulps<T>(got_at(i), grad_at<T>(i), terms_of(op, xs[i]));
    const double r = e / bound_at(op, base, xs[i]);
    if (!(r <= w.ratio)) w = {r, e, static_cast<double>(xs[i])};
  }
  return w;
}

std::vector<cpu::vec::Isa> supported_isas() {
  std::vector<cpu::vec::Isa> v;
  for (int i = 0; i < cpu::vec::kIsaCount; ++i)
    if (cpu::vec::isa_supported(static_cast<cpu::vec::Isa>(i))) v.push_back(static_cast<cpu::vec::Isa>(i));
  return v;
}

std::vector<double> values(const Tensor& t) { return t.to(kFloat64).contiguous().to_vector<double>(); }

Tensor seeded(const Shape& s, double lo, double hi, uint64_t seed, ScalarType dt) {
  Generator g(seed);
  return (rand(s, {.dtype = kFloat64}, &g) * (hi - lo) + lo).to(dt);
}

Tensor run_op(ActivationGrad op, const Tensor& g, const Tensor& x) {
  if (op == ActivationGrad::Silu) return nnf::silu_backward(g, x);
  return nnf::gelu_backward(g, x, op == ActivationGrad::GeluTanh ? "tanh" : "none");
}

}  // namespace

TEST_CASE("activation backward lanes: within their bound over the float range, on every instruction set",
          "[activation_backward]") {
  const std::vector<float> xs = sweep<float, uint32_t>(16381);
  std::vector<float> gs(xs.size()), out(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) gs[i] = grad_at<float>(i);
  for (ActivationGrad op : kOps)
    for (cpu::vec::Isa isa : supported_isas()) {
      cpu::vec::activation_backward(op, gs.data(), xs.data(), out.data(), xs.size(), isa);
      const Worst w = worst_error<float>(op, kBound, xs, [&](size_t i) { return out[i]; });
      INFO(name_of(op) << " on " << cpu::vec::isa_name(isa) << ": worst " << w.ulps << " ulp at x = " << w.x << " ("
                       << w.ratio << " of the bound)");
      CHECK(w.ratio <= 1);
    }
}

TEST_CASE("activation backward scalar formulas (the CUDA kernel's): within their bound in float and double",
          "[activation_backward]") {
  const std::vector<float> xf = sweep<float, uint32_t>(16381);
  const std::vector<double> xd = sweep<double, uint64_t>(uint64_t{0x7ff0000000000000} / 150001);
  for (ActivationGrad op : kOps) {
    const Worst wf = worst_error<float>(op, kBound, xf,
                                        [&](size_t i) { return bm::activation_grad(op, grad_at<float>(i), xf[i]); });
    INFO(name_of(op) << " in float: worst " << wf.ulps << " ulp at x = " << wf.x << " (" << wf.ratio << " of the bound)");
    CHECK(wf.ratio <= 1);
    const Worst wd = worst_error<double>(op, kBound, xd,
                                         [&](size_t i) { return bm::activation_grad(op, grad_at<double>(i), xd[i]); });
    INFO(name_of(op) << " in double: worst " << wd.ulps << " ulp at x = " << wd.x << " (" << wd.ratio << " of the bound)");
    CHECK(wd.ratio <= 1);
  }
}

TEST_CASE("activation backward: limits at the special values", "[activation_backward]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    const Tensor x = from_vector(std::vector<double>{inf, -inf, nan, 0.0, -0.0, 1e30, -1e30}, {7}).to(dt);
    for (ActivationGrad op : kOps) {
      INFO(name_of(op) << " in " << dt);
      const std::vector<double> got = values(run_op(op, full({7}, 2.0, {.dtype = dt}), x));
      CHECK(got[0] == 2.0);  // f'(+Inf) = 1
      CHECK(got[1] == 0.0);  // f'(-Inf) = 0
      CHECK(std::isnan(got[2]));
      CHECK(got[3] == 1.0);  // f'(0) = 1/2 for all three
      CHECK(got[4] == 1.0);
      CHECK(got[5] == 2.0);
      CHECK(got[6] == 0.0);
      // A NaN or infinite gradient propagates as a product does (Inf * 0 = NaN).
      const std::vector<double> g2 =
          values(run_op(op, from_vector(std::vector<double>{nan, inf, inf}, {3}).to(dt),
                        from_vector(std::vector<double>{1.0, 1.0, -inf}, {3}).to(dt)));
      CHECK(std::isnan(g2[0]));
      CHECK(g2[1] == inf);
      CHECK(std::isnan(g2[2]));
    }
  }
}

TEST_CASE("activation backward ops: every floating dtype, strided inputs, threaded sizes", "[activation_backward]") {
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    // [300, 257] is past the parallel grain (threads); the transposed and sliced views take the block path.
    const Tensor x = seeded({300, 257}, -9, 9, 3, dt), g = seeded({300, 257}, -2, 2, 4, dt);
    const Tensor xt = seeded({257, 300}, -9, 9, 5, dt).t(), gs = seeded({300, 514}, -2, 2, 6, dt).slice(1, 0, 514, 2);
    const double eps = std::ldexp(1.0, 1 - testing::format_of(dt == kFloat64 ? kFloat64 : kFloat32).digits);
    for (ActivationGrad op : kOps) {
      INFO(name_of(op) << " in " << dt);
      for (const auto& [gg, xx] : {std::pair{g, x}, std::pair{gs, xt}}) {
        const Tensor got = run_op(op, gg, xx);
        REQUIRE(got.dtype() == dt);
        REQUIRE(got.sizes() == xx.sizes());
        const std::vector<double> gv = values(gg), xv = values(xx), out = values(got);
        size_t bad = 0;
        for (size_t i = 0; i < xv.size(); ++i) {
          const Terms t = terms_of(op, xv[i]);
          const LD ref = gv[i] * (t.first + t.second);
          const double mag = std::fabs(gv[i]) * static_cast<double>(std::fabs(t.first) + std::fabs(t.second));
          // Half an ulp of dt, plus the compute type's error (the bound of the lanes or of double).
          const double tol = 0.5 * testing::ulp_of(dt, static_cast<double>(ref)) + bound_at(op, kBound, xv[i]) * eps * mag;
          bad += !(std::fabs(out[i] - static_cast<double>(ref)) <= tol);
        }
        CHECK(bad == 0);
      }
      // A value does not depend on the strides it came with.
      const Tensor dense = run_op(op, gs.contiguous(), xt.contiguous());
      CHECK(values(dense) == values(run_op(op, gs, xt)));
    }
  }
}

TEST_CASE("autograd through gelu and silu runs the fused ops and matches the formulas", "[activation_backward]") {
  const Tensor x0 = seeded({4, 33}, -6, 6, 7, kFloat64), up = seeded({4, 33}, -1, 1, 8, kFloat64);
  const double k = std::sqrt(2 / std::acos(-1.0)), c = 0.044715;
  for (ActivationGrad op : kOps) {
    INFO(name_of(op));
    Tensor x = x0.clone().requires_grad_(true);
    const Tensor y = op == ActivationGrad::Silu ? nnf::silu(x) : nnf::gelu(x, op == ActivationGrad::GeluTanh ? "tanh" : "none");
    y.backward(up);
    // The unfused formula in elementwise ops (the former autograd composite).
    Tensor d;
    if (op == ActivationGrad::GeluErf) {
      d = (erf(x0 / std::sqrt(2.0)) + 1) * 0.5 + x0 * exp(x0 * x0 * -0.5) / std::sqrt(2 * std::acos(-1.0));
    } else if (op == ActivationGrad::GeluTanh) {
      const Tensor t = tanh((x0 + x0 * x0 * x0 * c) * k);
      d = (t + 1) * 0.5 + x0 * (1 - t * t) * ((x0 * x0 * (3 * c) + 1) * k) * 0.5;
    } else {
      const Tensor s = sigmoid(x0);
      d = s * (x0 * (1 - s) + 1);
    }
    // The fused op's bits, and the formula's values within its own roundings where it does
    // not cancel (|x| <= 3; beyond, 1 - tanh^2 and 1 + erf lose digits).
    const std::vector<double> got = values(x.grad()), want = values(up * d), xv = values(x0);
    CHECK(got == values(run_op(op, up, x0)));
    for (size_t i = 0; i < got.size(); ++i)
      if (std::fabs(xv[i]) <= 3) CHECK(got[i] == Approx(want[i]).epsilon(1e-13).margin(1e-15));
    // In place: the node saves a copy of self.
    Tensor x2 = x0.clone().requires_grad_(true);
    Tensor z = x2 * 1.0;
    if (op == ActivationGrad::Silu)
      nnf::silu_(z);
    else
      nnf::gelu_(z, op == ActivationGrad::GeluTanh ? "tanh" : "none");
    z.backward(up);
    CHECK(values(x2.grad()) == got);
  }
}

TEST_CASE("gelu_backward and silu_backward refuse bad input naming the op", "[activation_backward]") {
  const Tensor x = ones({2, 3});
  CHECK_THROWS_WITH(nnf::gelu_backward(ones({2, 4}), x), Catch::Contains("gelu_backward") && Catch::Contains("[2, 4]"));
  CHECK_THROWS_WITH(nnf::silu_backward(ones({2, 3}, {.dtype = kFloat64}), x),
                    Catch::Contains("silu_backward") && Catch::Contains("float64"));
  CHECK_THROWS_WITH(nnf::silu_backward(ones({2, 3}, {.dtype = kInt64}), ones({2, 3}, {.dtype = kInt64})),
                    Catch::Contains("silu_backward"));
  CHECK_THROWS_WITH(nnf::gelu_backward(x, x, "fast"), Catch::Contains("gelu_backward") && Catch::Contains("fast"));
  CHECK_THROWS_WITH(nnf::silu_backward(Tensor(), x), Catch::Contains("silu_backward"));
  // Not differentiable: backward through it raises, naming it.
  const Tensor g = ones({2, 3}).requires_grad_(true);
  CHECK_THROWS_WITH(nnf::gelu_backward(g, x).sum().backward(), Catch::Contains("gelu_backward"));
  // On meta tensors the same checks, and the output's shape and dtype.
  const Tensor m = empty({2, 3}, {.dtype = kBFloat16, .device = Device::meta()});
  const Tensor r = nnf::silu_backward(m, m);
  CHECK(r.is_meta());
  CHECK(r.dtype() == kBFloat16);
  CHECK(r.sizes() == Shape{2, 3});
  CHECK_THROWS_WITH(nnf::gelu_backward(empty({3, 2}, {.dtype = kBFloat16, .device = Device::meta()}), m),
                    Catch::Contains("gelu_backward"));
}
