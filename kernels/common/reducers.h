// The reducers of sum, mean, prod, amax/amin, max/min/argmax/argmin, var/std, norm,
// logsumexp, all and any, shared by the CPU engine (kernels/cpu/reduce_loops.h) and
// the CUDA kernels (kernels/cuda/reduce.cuh). Plain C++ with MIXT_HD (g++ and nvcc).
//
// A reducer R with accumulator type acc_t supplies:
//   acc_t init() const;                           the empty accumulator (the result of no input)
//   void accumulate(acc_t&, V v, int64_t i) const; fold value v at reduced position i
//   void combine(acc_t& a, const acc_t& b) const;  fold partial b into a
//   project(const acc_t&) const;                  the final value (before the store's rounding)
// The accumulator's type is a template parameter: the CPU (and CUDA) accumulate floating
// sums in double and integer sums in wrapping int64 (see kernels/cpu/reduce.cpp).
//
// combine is associative and, for every reducer, a partial that holds nothing (init())
// is its identity. It is also commutative except for the floating rounding of the sums;
// the index reducers break ties by the smaller index, so they give the first occurrence
// whatever the order in which partials meet.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <mixt/runtime/macros.h>

namespace mixt::reducers {

// ---- helpers (host and device) ----

// NaN test that is false for integer and bool values.
template <class V>
MIXT_HD inline bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) return v != v;
  else return false;
}

MIXT_HD inline double inf() { return std::numeric_limits<double>::infinity(); }

// The double math of the reducers: the C library's on the host, CUDA's on the device
// (both within an ulp of the exact value; see docs/notes/cuda.md, reductions).
#if defined(__CUDA_ARCH__)
MIXT_HD inline double dexp(double x) { return ::exp(x); }
MIXT_HD inline double dlog(double x) { return ::log(x); }
MIXT_HD inline double dsqrt(double x) { return ::sqrt(x); }
MIXT_HD inline double dpow(double x, double p) { return ::pow(x, p); }
MIXT_HD inline double dabs(double x) { return ::fabs(x); }
#else
inline double dexp(double x) { return std::exp(x); }
inline double dlog(double x) { return std::log(x); }
inline double dsqrt(double x) { return std::sqrt(x); }
inline double dpow(double x, double p) { return std::pow(x, p); }
inline double dabs(double x) { return std::abs(x); }
#endif

// a + b and a * b on accumulators: IEEE for floating, wrapping (two's complement) for integers.
template <class Acc>
MIXT_HD inline Acc add(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>) return static_cast<Acc>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else return a + b;
}
template <class Acc>
MIXT_HD inline Acc mul(Acc a, Acc b) {
  if constexpr (std::is_integral_v<Acc>) return static_cast<Acc>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else return a * b;
}

// ---- reducers ----

// sum (and mean, which projects the sum divided by n).
template <class Acc>
struct Sum {
  using acc_t = Acc;
  MIXT_HD acc_t init() const { return acc_t(0); }
  template <class V>
  MIXT_HD void accumulate(acc_t& a, V v, int64_t) const { a = add(a, static_cast<acc_t>(v)); }
  MIXT_HD void combine(acc_t& a, const acc_t& b) const { a = add(a, b); }
  MIXT_HD acc_t project(const acc_t& a) const { return a; }
};

// mean: a double sum divided by the number of reduced elements (NaN for none).
struct Mean : Sum<double> {
  double n = 0;
  MIXT_HD double project(const double& a) const { return a / n; }
};

// prod.
template <class Acc>
struct Prod {
  using acc_t = Acc;
  MIXT_HD acc_t init() const { return acc_t(1); }
  template <class V>
  MIXT_HD void accumulate(acc_t& a, V v, int64_t) const { a = mul(a, static_cast<acc_t>(v)); }
  MIXT_HD void combine(acc_t& a, const acc_t& b) const { a = mul(a, b); }
  MIXT_HD acc_t project(const acc_t& a) const { return a; }
};

// amax (Max) / amin: NaN wins (the last NaN folded in, so combine stays associative).
template <class Acc, bool Max>
struct Extremum {
  using acc_t = Acc;
  MIXT_HD acc_t init() const {
    if constexpr (std::is_floating_point_v<acc_t>)
      return Max ? -std::numeric_limits<acc_t>::infinity() : std::numeric_limits<acc_t>::infinity();
    else return Max ? std::numeric_limits<acc_t>::lowest() : std::numeric_limits<acc_t>::max();
  }
  MIXT_HD void accumulate(acc_t& a, acc_t v, int64_t) const {
    if ((Max ? v > a : v < a) || is_nan(v)) a = v;
  }
  MIXT_HD void combine(acc_t& a, const acc_t& b) const { accumulate(a, b, 0); }
  MIXT_HD acc_t project(const acc_t& a) const { return a; }
};

// The value and position of an extremum.
template <class V>
struct ValueIndex {
  V v{};
  int64_t i = -1;  // -1: nothing seen yet
};

// max/min with indices, argmax/argmin (Max: the largest): the first NaN, else the
// first extremum. "First" is the smallest reduced position, in any combine order.
template <class V, bool Max>
struct Arg {
  using acc_t = ValueIndex<V>;
  MIXT_HD acc_t init() const { return {}; }
  // True when v replaces cur whatever their positions.
  MIXT_HD static bool beats(V v, V cur) { return !is_nan(cur) && (is_nan(v) || (Max ? v > cur : v < cur)); }
  // Positions arrive in increasing order within one accumulator.
  MIXT_HD void accumulate(acc_t& a, V v, int64_t i) const {
    if (a.i < 0 || beats(v, a.v)) a = {v, i};
  }
  MIXT_HD void combine(acc_t& a, const acc_t& b) const {
    if (b.i < 0) return;
    if (a.i < 0 || beats(b.v, a.v) || (!beats(a.v, b.v) && b.i < a.i)) a = b;
  }
  MIXT_HD acc_t project(const acc_t& a) const { return a; }
};

// Welford's running mean and sum of squared deviations.
template <class Acc>
struct WelfordAcc {
  Acc mean = 0, m2 = 0;
  int64_t n = 0;
};

// var (or std when take_sqrt): m2 / max(0, n - correction).
template <class Acc>
struct Welford {
  using acc_t = WelfordAcc<Acc>;
  Acc correction = 1;
  bool take_sqrt = false;
  MIXT_HD acc_t init() const { return {}; }
  template <class V>
  MIXT_HD void accumulate(acc_t& a, V v, int64_t) const {
    const Acc x = static_cast<Acc>(v);
    ++a.n;
    const Acc d = x - a.mean;
    a.mean += d / static_cast<Acc>(a.n);
    a.m2 += d * (x - a.mean);
  }
  // Chan et al.'s combination of two partial results.
  MIXT_HD void combine(acc_t& a, const acc_t& b) const {
    if (b.n == 0) return;
    if (a.n == 0) {
      a = b;
      return;
    }
    const Acc na = static_cast<Acc>(a.n), nb = static_cast<Acc>(b.n), n = na + nb;
    const Acc d = b.mean - a.mean;
    a.mean += d * nb / n;
    a.m2 += b.m2 + d * d * na * nb / n;
    a.n += b.n;
  }
  MIXT_HD Acc project(const acc_t& a) const {
    const Acc dof = static_cast<Acc>(a.n) - correction;
    const Acc var = a.m2 / (dof > Acc(0) ? dof : Acc(0));
    return take_sqrt ? static_cast<Acc>(dsqrt(var)) : var;
  }
};

enum class NormKind { Two, One, Inf, NegInf, Zero, General };

// The kind of the vector p-norm of order p (not NaN).
MIXT_HD inline NormKind norm_kind(double p) {
  return p == 2.0 ? NormKind::Two
         : p == 1.0 ? NormKind::One
         : p == inf() ? NormKind::Inf
         : p == -inf() ? NormKind::NegInf
         : p == 0.0 ? NormKind::Zero
                    : NormKind::General;
}

// Vector p-norm of |x| in double; the kind is chosen at run time.
struct Norm {
  using acc_t = double;
  NormKind kind = NormKind::Two;
  double p = 2;
  MIXT_HD acc_t init() const { return kind == NormKind::NegInf ? inf() : 0.0; }
  template <class V>
  MIXT_HD void accumulate(acc_t& a, V v, int64_t) const { fold(a, dabs(static_cast<double>(v))); }
  // Folds one magnitude (or, for the max/min kinds, a partial result).
  MIXT_HD void fold(acc_t& a, double x) const {
    switch (kind) {
      case NormKind::Two: a += x * x; break;
      case NormKind::One: a += x; break;
      case NormKind::Inf: if (x > a || is_nan(x)) a = x; break;
      case NormKind::NegInf: if (x < a || is_nan(x)) a = x; break;
      case NormKind::Zero: a += x != 0.0 ? 1.0 : 0.0; break;
      case NormKind::General: a += dpow(x, p); break;
    }
  }
  MIXT_HD void combine(acc_t& a, const acc_t& b) const {
    if (kind == NormKind::Inf || kind == NormKind::NegInf) fold(a, b);
    else a += b;
  }
  MIXT_HD double project(const acc_t& a) const {
    if (kind == NormKind::Two) return dsqrt(a);
    if (kind == NormKind::General) return dpow(a, 1.0 / p);
    return a;
  }
};

// log(sum(exp(x))) with a running maximum m: s = sum(exp(x - m)).
struct LogSumExpAcc {
  double m = -std::numeric_limits<double>::infinity(), s = 0;
  bool nan = false;
};

struct LogSumExp {
  using acc_t = LogSumExpAcc;
  MIXT_HD acc_t init() const { return {}; }
  // Adds `s` terms already scaled by exp(-m) to the accumulator.
  MIXT_HD static void fold(acc_t& a, double m, double s) {
    if (m == -inf()) return;  // exp(-inf) contributes nothing
    if (m > a.m) {
      a.s = (a.m == -inf() ? 0.0 : a.s * dexp(a.m - m)) + s;
      a.m = m;
    } else if (m == a.m) {
      a.s += s;
    } else {
      a.s += s * dexp(m - a.m);
    }
  }
  template <class V>
  MIXT_HD void accumulate(acc_t& a, V v, int64_t) const {
    const double x = static_cast<double>(v);
    if (is_nan(x)) a.nan = true;
    else fold(a, x, 1.0);
  }
  MIXT_HD void combine(acc_t& a, const acc_t& b) const {
    a.nan = a.nan || b.nan;
    fold(a, b.m, b.s);
  }
  MIXT_HD double project(const acc_t& a) const {
    if (a.nan) return std::numeric_limits<double>::quiet_NaN();
    if (a.m == -inf() || a.m == inf()) return a.m;
    return a.m + dlog(a.s);
  }
};

// all (All) / any: non-zero values (NaN included) are true.
template <bool All>
struct Logical {
  using acc_t = bool;
  MIXT_HD acc_t init() const { return All; }
  template <class V>
  MIXT_HD void accumulate(acc_t& a, V v, int64_t) const {
    const bool x = v != V(0);
    a = All ? (a && x) : (a || x);
  }
  MIXT_HD void combine(acc_t& a, const acc_t& b) const { a = All ? (a && b) : (a || b); }
  MIXT_HD acc_t project(const acc_t& a) const { return a; }
};

}  // namespace mixt::reducers
