// Element functors shared by the CPU loops and the CUDA kernels. Each works on
// opmath values (float for the narrow floats, the type itself otherwise) and is
// MIXT_HD so one definition serves both backends. Integer arithmetic wraps
// around (two's complement) as in PyTorch, without signed-overflow UB.
#pragma once

#include <math.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include <mixt/runtime/macros.h>

namespace mixt::functors {

// ---- scalar math on float and double (the C library names, callable on host and device) ----
namespace fn {
// clang-format off
#define MIXT_FN1(name)                                           \
  MIXT_HD inline float name(float x) { return ::name##f(x); } \
  MIXT_HD inline double name(double x) { return ::name(x); }
MIXT_FN1(exp) MIXT_FN1(expm1) MIXT_FN1(log) MIXT_FN1(log1p) MIXT_FN1(log2) MIXT_FN1(log10) MIXT_FN1(sqrt)
MIXT_FN1(sin) MIXT_FN1(cos) MIXT_FN1(tan) MIXT_FN1(tanh) MIXT_FN1(erf) MIXT_FN1(erfc) MIXT_FN1(floor)
MIXT_FN1(ceil) MIXT_FN1(trunc) MIXT_FN1(nearbyint) MIXT_FN1(fabs) MIXT_FN1(acos) MIXT_FN1(asin) MIXT_FN1(sinh)
MIXT_FN1(cosh) MIXT_FN1(asinh) MIXT_FN1(acosh) MIXT_FN1(atanh)
#undef MIXT_FN1
#define MIXT_FN2(name)                                                   \
  MIXT_HD inline float name(float x, float y) { return ::name##f(x, y); } \
  MIXT_HD inline double name(double x, double y) { return ::name(x, y); }
MIXT_FN2(pow) MIXT_FN2(atan2) MIXT_FN2(fmod) MIXT_FN2(copysign)
#undef MIXT_FN2
// clang-format on
}  // namespace fn

template <class M>
inline constexpr bool is_int_v = std::is_integral_v<M> && !std::is_same_v<M, bool>;

// NaN test that compiles to `false` for integer types.
template <class M>
MIXT_HD inline bool is_nan(M a) {
  if constexpr (std::is_floating_point_v<M>)
    return a != a;
  else
    return false;
}

// Wrapping integer arithmetic (plain arithmetic for floating types).
template <class M>
MIXT_HD inline M wrap_add(M a, M b) {
  if constexpr (is_int_v<M>)
    return static_cast<M>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <class M>
MIXT_HD inline M wrap_sub(M a, M b) {
  if constexpr (is_int_v<M>)
    return static_cast<M>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else
    return a - b;
}
template <class M>
MIXT_HD inline M wrap_mul(M a, M b) {
  if constexpr (is_int_v<M>)
    return static_cast<M>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}
template <class M>
MIXT_HD inline M wrap_neg(M a) {
  if constexpr (is_int_v<M>)
    return static_cast<M>(uint64_t{0} - static_cast<uint64_t>(a));
  else
    return -a;
}

// erfinv in double: a rational first guess (Giles' single-precision fit), then Newton
// steps on erf(x) = |y|, or near 1 on log(erfc(x)) = log(1 - |y|), which is exact there
// and nearly linear in the tail.
MIXT_HD inline double erfinv_double(double y) {
  if (!(y >= -1.0 && y <= 1.0)) return std::numeric_limits<double>::quiet_NaN();
  const double ay = y < 0 ? -y : y;
  if (ay == 1.0) return fn::copysign(std::numeric_limits<double>::infinity(), y);
  double w = -fn::log((1.0 - ay) * (1.0 + ay)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = fn::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * ay;
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int step = 0; step < 3; ++step) {
    const double slope = two_over_sqrt_pi * fn::exp(-x * x);
    if (slope == 0.0) break;
    if (ay > 0.5) {
      const double tail = fn::erfc(x);
      x += (fn::log(tail) - fn::log(1.0 - ay)) * tail / slope;
    } else {
      x -= (fn::erf(x) - ay) / slope;
    }
  }
  return y < 0 ? -x : x;
}

// ---- unary ----

template <class M>
struct Neg {
  MIXT_HD M operator()(M a) const { return wrap_neg(a); }
};

template <class M>
struct Abs {
  MIXT_HD M operator()(M a) const {
    if constexpr (std::is_floating_point_v<M>)
      return fn::fabs(a);
    else if constexpr (std::is_signed_v<M>)
      return a < 0 ? wrap_neg(a) : a;
    else
      return a;
  }
};

// -1, 0 or 1; NaN stays NaN (PyTorch returns 0 there), bool is the identity.
template <class M>
struct Sign {
  MIXT_HD M operator()(M a) const {
    if constexpr (std::is_same_v<M, bool>)
      return a;
    else if constexpr (std::is_unsigned_v<M>)
      return static_cast<M>(a != 0);
    else if constexpr (std::is_integral_v<M>)
      return static_cast<M>(a > 0 ? 1 : (a < 0 ? -1 : 0));
    else
      return a > M(0) ? M(1) : (a < M(0) ? M(-1) : (a == M(0) ? M(0) : a));
  }
};

#define MIXT_MATH_FUNCTOR(Name, expr)                \
  template <class M>                                 \
  struct Name {                                      \
    MIXT_HD M operator()(M a) const { return expr; } \
  };
MIXT_MATH_FUNCTOR(Exp, fn::exp(a))
MIXT_MATH_FUNCTOR(Expm1, fn::expm1(a))
MIXT_MATH_FUNCTOR(Log, fn::log(a))
MIXT_MATH_FUNCTOR(Log1p, fn::log1p(a))
MIXT_MATH_FUNCTOR(Log2, fn::log2(a))
MIXT_MATH_FUNCTOR(Log10, fn::log10(a))
MIXT_MATH_FUNCTOR(Sqrt, fn::sqrt(a))
MIXT_MATH_FUNCTOR(Rsqrt, M(1) / fn::sqrt(a))
MIXT_MATH_FUNCTOR(Reciprocal, M(1) / a)
MIXT_MATH_FUNCTOR(Sin, fn::sin(a))
MIXT_MATH_FUNCTOR(Cos, fn::cos(a))
MIXT_MATH_FUNCTOR(Tan, fn::tan(a))
MIXT_MATH_FUNCTOR(Tanh, fn::tanh(a))
MIXT_MATH_FUNCTOR(Sigmoid, M(1) / (M(1) + fn::exp(-a)))
MIXT_MATH_FUNCTOR(Silu, a / (M(1) + fn::exp(-a)))
MIXT_MATH_FUNCTOR(Erf, fn::erf(a))
MIXT_MATH_FUNCTOR(Acos, fn::acos(a))
MIXT_MATH_FUNCTOR(Asin, fn::asin(a))
MIXT_MATH_FUNCTOR(Sinh, fn::sinh(a))
MIXT_MATH_FUNCTOR(Cosh, fn::cosh(a))
MIXT_MATH_FUNCTOR(Asinh, fn::asinh(a))
MIXT_MATH_FUNCTOR(Acosh, fn::acosh(a))
MIXT_MATH_FUNCTOR(Atanh, fn::atanh(a))
MIXT_MATH_FUNCTOR(Frac, a - fn::trunc(a))  // frac(+-inf) is NaN, as PyTorch's x - trunc(x)
// x tanh(softplus(x)), softplus(x) = log1p(exp(x))
MIXT_MATH_FUNCTOR(Mish, a * fn::tanh(fn::log1p(fn::exp(a))))
MIXT_MATH_FUNCTOR(Erfinv, static_cast<M>(erfinv_double(static_cast<double>(a))))
// 0.5 x (1 + erf(x / sqrt 2))
MIXT_MATH_FUNCTOR(GeluErf, M(0.5) * a * (M(1) + fn::erf(a * M(0.70710678118654752))))
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
MIXT_MATH_FUNCTOR(GeluTanh, M(0.5) * a * (M(1) + fn::tanh(M(0.79788456080286536) * (a + M(0.044715) * a * a * a))))
#undef MIXT_MATH_FUNCTOR

// max(x, 0); NaN stays NaN.
template <class M>
struct Relu {
  MIXT_HD M operator()(M a) const {
    if constexpr (std::is_unsigned_v<M>)
      return a;
    else
      return a < M(0) ? M(0) : a;
  }
};

// log(1 + exp(beta x)) / beta, or x where beta x > threshold.
template <class M>
struct Softplus {
  M beta, threshold;
  MIXT_HD M operator()(M a) const { return a * beta > threshold ? a : fn::log1p(fn::exp(a * beta)) / beta; }
};

// min(max(x + 3, 0), 6), NaN kept (relu6 of x + 3).
template <class M>
MIXT_HD inline M relu6_shifted(M a) {
  M r = a + M(3);
  r = r < M(0) ? M(0) : r;
  return r > M(6) ? M(6) : r;
}
// relu6(x + 3) / 6 and x times it (PyTorch multiplies by x before dividing, which
// overflows for |x| > max / 6; this gives x itself for every x >= 3).
template <class M>
struct Hardsigmoid {
  MIXT_HD M operator()(M a) const { return relu6_shifted(a) / M(6); }
};
template <class M>
struct Hardswish {
  MIXT_HD M operator()(M a) const { return a * (relu6_shifted(a) / M(6)); }
};

// x where x > 0, else negative_slope x.
template <class M>
struct LeakyRelu {
  M negative_slope;
  MIXT_HD M operator()(M a) const { return a > M(0) ? a : a * negative_slope; }
};

// scale x where x > 0, else (alpha scale) expm1(input_scale x); selu is elu with fixed constants.
template <class M>
struct Elu {
  M alpha_scale, scale, input_scale;
  MIXT_HD M operator()(M a) const { return a > M(0) ? a * scale : fn::expm1(a * input_scale) * alpha_scale; }
};

// log(z / (1 - z)) with z = x, or x clamped to [lo, hi] = [eps, 1 - eps] when `clamped`.
template <class M>
struct Logit {
  M lo, hi;
  bool clamped;
  MIXT_HD M operator()(M a) const {
    if (clamped) a = a < lo ? lo : (a > hi ? hi : a);
    return fn::log(a / (M(1) - a));
  }
};

// floor, ceil, trunc: the identity on integers.
template <class M>
struct Floor {
  MIXT_HD M operator()(M a) const {
    if constexpr (std::is_floating_point_v<M>)
      return fn::floor(a);
    else
      return a;
  }
};
template <class M>
struct Ceil {
  MIXT_HD M operator()(M a) const {
    if constexpr (std::is_floating_point_v<M>)
      return fn::ceil(a);
    else
      return a;
  }
};

template <class M>
struct Trunc {
  MIXT_HD M operator()(M a) const {
    if constexpr (std::is_floating_point_v<M>)
      return fn::trunc(a);
    else
      return a;
  }
};

// Round half to even at `decimals` places: scale = 10^|decimals|, mode = sign of decimals.
template <class M>
struct Round {
  M scale = M(1);
  int mode = 0;
  MIXT_HD M operator()(M a) const {
    if constexpr (std::is_floating_point_v<M>) {
      if (mode == 0) return fn::nearbyint(a);
      if (mode > 0) return fn::nearbyint(a * scale) / scale;
      return fn::nearbyint(a / scale) * scale;
    } else {
      return a;
    }
  }
};

// min(max(x, lo), hi) for the bounds present; NaN (in x or a bound) propagates; lo > hi gives hi.
template <class M>
struct Clamp {
  M lo, hi;
  bool has_lo, has_hi;
  MIXT_HD M operator()(M a) const {
    // A NaN bound gives NaN (a's own when a is NaN). Otherwise two selects without an
    // early exit, so the CPU loop vectorises (with a branch per element a random input
    // mispredicted): a NaN `a` fails both comparisons and comes out unchanged.
    const bool nan_lo = has_lo && is_nan(lo), nan_hi = has_hi && is_nan(hi);
    if (nan_lo || nan_hi) return is_nan(a) ? a : (nan_lo ? lo : hi);
    if (has_lo) a = a < lo ? lo : a;
    if (has_hi) a = a > hi ? hi : a;
    return a;
  }
};

template <class M>
struct IsFinite {
  MIXT_HD bool operator()(M a) const {
    if constexpr (std::is_floating_point_v<M>)
      return (a == a) & (a - a == M(0));  // `&`, not `&&`: no branch, so the CPU loop vectorises
    else
      return true;
  }
};
template <class M>
struct IsNan {
  MIXT_HD bool operator()(M a) const { return is_nan(a); }
};
template <class M>
struct IsInf {
  MIXT_HD bool operator()(M a) const {
    if constexpr (std::is_floating_point_v<M>)
      return a == std::numeric_limits<M>::infinity() || a == -std::numeric_limits<M>::infinity();
    else
      return false;
  }
};
template <class M>
struct LogicalNot {
  MIXT_HD bool operator()(M a) const { return a == M(0); }
};

// ---- binary ----

// a + alpha * b (bool: a or (alpha and b))
template <class M>
struct Add {
  M alpha;
  MIXT_HD M operator()(M a, M b) const {
    if constexpr (std::is_same_v<M, bool>)
      return a || (alpha && b);
    else
      return wrap_add(a, wrap_mul(alpha, b));
  }
};

// a - alpha * b
template <class M>
struct Sub {
  M alpha;
  MIXT_HD M operator()(M a, M b) const { return wrap_sub(a, wrap_mul(alpha, b)); }
};

// a * b (bool: a and b)
template <class M>
struct Mul {
  MIXT_HD M operator()(M a, M b) const {
    if constexpr (std::is_same_v<M, bool>)
      return a && b;
    else
      return wrap_mul(a, b);
  }
};

// True division (floating types).
template <class M>
struct Div {
  MIXT_HD M operator()(M a, M b) const { return a / b; }
};

// Division rounded toward zero. Integers: b != 0 (checked by the caller).
template <class M>
struct DivTrunc {
  MIXT_HD M operator()(M a, M b) const {
    if constexpr (std::is_floating_point_v<M>) {
      return fn::trunc(a / b);
    } else {
      if constexpr (std::is_signed_v<M>)
        if (b == M(-1)) return wrap_neg(a);  // MIN / -1 would trap
      return static_cast<M>(a / b);
    }
  }
};

// Division rounded toward -inf (Python's //). Integers: b != 0 (checked by the caller).
template <class M>
struct DivFloor {
  MIXT_HD M operator()(M a, M b) const {
    if constexpr (std::is_floating_point_v<M>) {
      if (b == M(0)) return a / b;
      // a = q*b + r exactly with r = fmod(a, b); (a - r) / b is then an integer up to rounding.
      const M r = fn::fmod(a, b);
      M q = (a - r) / b;
      if (r != M(0) && ((b < M(0)) != (r < M(0)))) q -= M(1);
      if (q == M(0)) return fn::copysign(M(0), a / b);
      M fq = fn::floor(q);
      if (q - fq > M(0.5)) fq += M(1);
      return fq;
    } else if constexpr (std::is_signed_v<M>) {
      if (b == M(-1)) return wrap_neg(a);
      M q = static_cast<M>(a / b);
      if (static_cast<M>(a % b) != 0 && ((a < 0) != (b < 0))) q = static_cast<M>(q - 1);
      return q;
    } else {
      return static_cast<M>(a / b);
    }
  }
};

// a ** b. Integers: b >= 0 (checked by the caller), wrapping like repeated multiplication.
template <class M>
struct Pow {
  MIXT_HD M operator()(M a, M b) const {
    if constexpr (std::is_floating_point_v<M>) {
      return fn::pow(a, b);
    } else {
      M result = 1, base = a;
      for (M e = b; e != 0; e = static_cast<M>(e >> 1)) {
        if (e & 1) result = wrap_mul(result, base);
        base = wrap_mul(base, base);
      }
      return result;
    }
  }
};

template <class M>
struct Atan2 {
  MIXT_HD M operator()(M a, M b) const { return fn::atan2(a, b); }
};

// Elementwise max/min; a NaN in either operand gives NaN.
template <class M>
struct Maximum {
  MIXT_HD M operator()(M a, M b) const {
    if constexpr (std::is_same_v<M, bool>)
      return a || b;
    else
      return is_nan(a) ? a : (is_nan(b) ? b : (a > b ? a : b));
  }
};
template <class M>
struct Minimum {
  MIXT_HD M operator()(M a, M b) const {
    if constexpr (std::is_same_v<M, bool>)
      return a && b;
    else
      return is_nan(a) ? a : (is_nan(b) ? b : (a < b ? a : b));
  }
};

#define MIXT_BOOL_FUNCTOR(Name, expr)                        \
  template <class M>                                         \
  struct Name {                                              \
    MIXT_HD bool operator()(M a, M b) const { return expr; } \
  };
MIXT_BOOL_FUNCTOR(Eq, a == b)
MIXT_BOOL_FUNCTOR(Ne, a != b)
MIXT_BOOL_FUNCTOR(Lt, a < b)
MIXT_BOOL_FUNCTOR(Le, a <= b)
MIXT_BOOL_FUNCTOR(Gt, a > b)
MIXT_BOOL_FUNCTOR(Ge, a >= b)
// `&` and `|`, not `&&` and `||`: no branch per element, so the CPU loop vectorises.
MIXT_BOOL_FUNCTOR(LogicalAnd, (a != M(0)) & (b != M(0)))
MIXT_BOOL_FUNCTOR(LogicalOr, (a != M(0)) | (b != M(0)))
MIXT_BOOL_FUNCTOR(LogicalXor, (a != M(0)) != (b != M(0)))
#undef MIXT_BOOL_FUNCTOR

// ---- ternary ----

// a + value * b * c
template <class M>
struct Addcmul {
  M value;
  MIXT_HD M operator()(M a, M b, M c) const { return wrap_add(a, wrap_mul(wrap_mul(value, b), c)); }
};

// a + value * b / c (floating types)
template <class M>
struct Addcdiv {
  M value;
  MIXT_HD M operator()(M a, M b, M c) const { return a + value * b / c; }
};

// a + w (b - a), evaluated from the nearer end so w = 1 gives b exactly.
template <class M>
struct Lerp {
  MIXT_HD M operator()(M a, M b, M w) const {
    const M d = b - a;
    return fn::fabs(w) < M(0.5) ? a + w * d : b - d * (M(1) - w);
  }
};

// cond ? a : b
template <class M>
struct Where {
  MIXT_HD M operator()(bool cond, M a, M b) const { return cond ? a : b; }
};

}  // namespace mixt::functors
