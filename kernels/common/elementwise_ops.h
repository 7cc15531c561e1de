// The elementwise ops, each listed once, with what every backend needs to run it:
// its result rule, the dtypes its kernel computes in, and how its functor is made
// from the op's attributes. The lists are X-macros expanded by the CPU kernels
// (kernels/cpu/{unary,binary,compare,ternary}.cpp) and by the CUDA kernels (the host
// side kernels/cuda/*.cpp and the device side kernels/cuda/*.cu), so adding an op is
// one line here (plus its functor in functors.h). The host-side checks and attribute
// reading live in elementwise_attrs.h; this header is plain C++ that nvcc also compiles.
//
// A list row is _(name, inplace, Maker, Rule, Set):
//   name     the OpId (and the family enum below);
//   inplace  1 when OpId::name_ is the in-place form, 0 when there is none;
//   Maker    builds the functor for storage type T from OpParams: Maker::with<T>(params, k)
//            calls k(functor) (an op may pick one of several functor types at run time);
//   Rule     EwRule: the result rule (ResultRule of elementwise.h, plus Where);
//   Set      the dtypes the kernel is instantiated for (dtypes::k...).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/functors.h>
#include <mixt/kernels/common/launch_geometry.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt {

// A Scalar (an operand or an attribute) as plain data, as device code receives it.
struct ScalarArg {
  double f = 0.0;         // the value of a floating scalar
  int64_t i = 0;          // the value of an integer or bool scalar
  bool is_float = false;  // which of the two holds the value
  bool present = true;    // false for an optional attribute left unset (clamp's bounds)
};

// `s` as the opmath value of storage type T, as the CPU reads a wrapped scalar:
// floating opmath from the double, integers wrap as a cast would, bool is "nonzero".
template <class T>
MIXT_HD inline opmath_t<T> scalar_arg_value(const ScalarArg& s) {
  using M = opmath_t<T>;
  if constexpr (std::is_same_v<M, bool>)
    return s.is_float ? s.f != 0.0 : s.i != 0;
  else if constexpr (std::is_floating_point_v<M>)
    return static_cast<M>(s.is_float ? s.f : static_cast<double>(s.i));
  else if (s.is_float)
    return convert<M>(s.f);
  else
    return convert<M>(s.i);
}

// As scalar_arg_value, but first rounded to T (as a 0-dim tensor of dtype T holds it).
template <class T>
MIXT_HD inline opmath_t<T> scalar_arg_rounded(const ScalarArg& s) {
  return static_cast<opmath_t<T>>(convert<T>(scalar_arg_value<T>(s)));
}

// The attributes an elementwise functor is made from (filled by elementwise_attrs.h).
struct OpParams {
  ScalarArg s[2];       // alpha (add, sub), value (addcmul, addcdiv), min and max (clamp)
  double beta = 1.0;    // softplus
  double threshold = 20.0;
  double scale = 1.0;   // round: 10^|decimals|
  int mode = 0;         // round: sign of decimals; gelu: 1 for tanh; div: Rounding
  double alpha = 1.0;   // elu: alpha (its scale and input_scale below); leaky_relu: negative_slope
  double elu_scale = 1.0, input_scale = 1.0;
  double eps = -1.0;    // logit: clamp to [eps, 1 - eps] when >= 0
};

// Data checks the CPU does by scanning the second operand, and CUDA in its kernel
// (Note [Device-side errors]): which values of the divisor / exponent are refused.
enum class RhsCheck : uint8_t {
  None,
  IntegerNonzero,      // integer division by zero
  IntegerNonnegative,  // integers to negative integer powers
};

// True when `b` (the opmath value of the second operand) violates `check`.
template <class M>
MIXT_HD inline bool rhs_violates(RhsCheck check, M b) {
  if constexpr (functors::is_int_v<M>) {
    if (check == RhsCheck::IntegerNonzero) return b == M(0);
    if constexpr (std::is_signed_v<M>)
      if (check == RhsCheck::IntegerNonnegative) return b < M(0);
  }
  return false;
}

// The message both backends raise for a violated check.
constexpr const char* rhs_check_text(RhsCheck check) {
  switch (check) {
    case RhsCheck::IntegerNonzero: return "integer division by zero";
    case RhsCheck::IntegerNonnegative: return "integers to negative integer powers are not allowed";
    case RhsCheck::None: break;
  }
  return "no check";
}

// The result rules of the lists: ResultRule (kernels/common/elementwise.h) plus Where
// (condition, a, b: a and b promote, the condition stays bool).
enum class EwRule : uint8_t { Promote, PromoteToFloat, Compare, Logical, Predicate, Where };

// True when the rule's result is bool.
constexpr bool bool_result(EwRule r) {
  return r == EwRule::Compare || r == EwRule::Logical || r == EwRule::Predicate;
}

// Vector width (elements per access) of the dense CUDA path over operands whose largest
// element is `max_element_size` bytes: kVectorBytes / max_element_size when every tensor
// operand (non-zero address) is kVectorBytes-aligned and the run is dense; else 1.
constexpr int elementwise_vector_width(bool dense, int64_t max_element_size, const uintptr_t* addresses, int n) {
  return dense ? vector_elements(max_element_size, addresses, n) : 1;
}

namespace ew {
namespace f = functors;

// Makers: Maker::with<T>(params, k) returns k(the functor on opmath_t<T>).
// RhsCheck kCheck (optional): the data check of the second operand.
template <template <class> class F>
struct Plain {
  static constexpr RhsCheck kCheck = RhsCheck::None;
  template <class T, class K>
  static auto with(const OpParams&, K&& k) {
    return k(F<opmath_t<T>>{});
  }
};

struct Gelu {
  static constexpr RhsCheck kCheck = RhsCheck::None;
  template <class T, class K>
  static auto with(const OpParams& p, K&& k) {
    using M = opmath_t<T>;
    return p.mode == 1 ? k(f::GeluTanh<M>{}) : k(f::GeluErf<M>{});
  }
};

struct Softplus {
  static constexpr RhsCheck kCheck = RhsCheck::None;
  template <class T, class K>
  static auto with(const OpParams& p, K&& k) {
    using M = opmath_t<T>;
    return k(f::Softplus<M>{static_cast<M>(p.beta), static_cast<M>(p.threshold)});
  }
};

struct Round {
  static constexpr RhsCheck kCheck = RhsCheck::None;
  template <class T, class K>
  static auto with(const OpParams& p, K&& k) {
    using M = opmath_t<T>;
    return k(f::Round<M>{static_cast<M>(p.scale), p.mode});
  }
};

struct LeakyRelu {
  static constexpr RhsCheck kCheck = RhsCheck::None;
  template <class T, class K>
  static auto with(const OpParams& p, K&& k) {
    using M = opmath_t<T>;
    return k(f::LeakyRelu<M>{static_cast<M>(p.alpha)});
  }
};

struct Elu {
  static constexpr RhsCheck kCheck = RhsCheck::None;
  template <class T, class K>
  static auto with(const OpParams& p, K&& k) {
    using M = opmath_t<T>;
    return k(f::Elu<M>{static_cast<M>(p.alpha * p.elu_scale), static_cast<M>(p.elu_scale), static_cast<M>(p.input_scale)});
  }
};

// selu: elu with alpha and scale fixed (Klambauer et al.'s self-normalising constants).
inline constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
inline constexpr double kSeluScale = 1.0507009873554804934193349852946;
struct Selu {
  static constexpr RhsCheck kCheck = RhsCheck::None;
  template <class T, class K>
  static auto with(const OpParams&, K&& k) {
    using M = opmath_t<T>;
    return k(f::Elu<M>{static_cast<M>(kSeluAlpha * kSeluScale), static_cast<M>(kSeluScale), M(1)});
  }
};

struct Logit {
  static constexpr RhsCheck kCheck = RhsCheck::None;
  template <class T, class K>
  static auto with(const OpParams& p, K&& k) {
    using M = opmath_t<T>;
    return k(f::Logit<M>{static_cast<M>(p.eps), static_cast<M>(1.0 - p.eps), p.eps >= 0.0});
  }
};

// A bound of clamp as T's opmath value: integer bounds saturate to T's range.
template <class T>
opmath_t<T> clamp_bound(const ScalarArg& s) {
  using M = opmath_t<T>;
  if constexpr (std::is_integral_v<M>) {
    const int64_t lo = std::numeric_limits<M>::min(), hi = std::numeric_limits<M>::max();
    const int64_t v = s.i;  // (a floating bound makes the result floating: never here)
    return static_cast<M>(v < lo ? lo : v > hi ? hi : v);
  } else {
    return scalar_arg_value<T>(s);
  }
}

struct Clamp {
  static constexpr RhsCheck kCheck = RhsCheck::None;
  template <class T, class K>
  static auto with(const OpParams& p, K&& k) {
    using M = opmath_t<T>;
    return k(f::Clamp<M>{p.s[0].present ? clamp_bound<T>(p.s[0]) : M(0), p.s[1].present ? clamp_bound<T>(p.s[1]) : M(0),
                         p.s[0].present, p.s[1].present});
  }
};

// add, sub: a +- alpha * b.
template <template <class> class F>
struct WithAlpha {
  static constexpr RhsCheck kCheck = RhsCheck::None;
  template <class T, class K>
  static auto with(const OpParams& p, K&& k) {
    return k(F<opmath_t<T>>{scalar_arg_value<T>(p.s[0])});
  }
};

// div: true division (floating results), or rounded toward zero / -inf.
struct Div {
  static constexpr RhsCheck kCheck = RhsCheck::IntegerNonzero;
  template <class T, class K>
  static auto with(const OpParams& p, K&& k) {
    using M = opmath_t<T>;
    if constexpr (std::is_floating_point_v<M>)
      if (p.mode == 0) return k(f::Div<M>{});
    return p.mode == 2 ? k(f::DivFloor<M>{}) : k(f::DivTrunc<M>{});
  }
};

struct Pow {
  static constexpr RhsCheck kCheck = RhsCheck::IntegerNonnegative;
  template <class T, class K>
  static auto with(const OpParams&, K&& k) {
    return k(f::Pow<opmath_t<T>>{});
  }
};

// addcmul, addcdiv: a + value * b (* or /) c.
template <template <class> class F>
struct WithValue {
  static constexpr RhsCheck kCheck = RhsCheck::None;
  template <class T, class K>
  static auto with(const OpParams& p, K&& k) {
    return k(F<opmath_t<T>>{scalar_arg_value<T>(p.s[0])});
  }
};

}  // namespace ew

// clang-format off
// Unary ops: one input; Predicate rows have a bool result.
#define MIXT_ELEMENTWISE_UNARY(_)                                   \
  _(neg,         1, ew::Plain<ew::f::Neg>,        Promote,        kNumeric)  \
  _(abs,         1, ew::Plain<ew::f::Abs>,        Promote,        kNumeric)  \
  _(sign,        1, ew::Plain<ew::f::Sign>,       Promote,        kAll)      \
  _(exp,         1, ew::Plain<ew::f::Exp>,        PromoteToFloat, kFloating) \
  _(expm1,       1, ew::Plain<ew::f::Expm1>,      PromoteToFloat, kFloating) \
  _(log,         1, ew::Plain<ew::f::Log>,        PromoteToFloat, kFloating) \
  _(log1p,       1, ew::Plain<ew::f::Log1p>,      PromoteToFloat, kFloating) \
  _(log2,        1, ew::Plain<ew::f::Log2>,       PromoteToFloat, kFloating) \
  _(log10,       1, ew::Plain<ew::f::Log10>,      PromoteToFloat, kFloating) \
  _(sqrt,        1, ew::Plain<ew::f::Sqrt>,       PromoteToFloat, kFloating) \
  _(rsqrt,       1, ew::Plain<ew::f::Rsqrt>,      PromoteToFloat, kFloating) \
  _(reciprocal,  1, ew::Plain<ew::f::Reciprocal>, PromoteToFloat, kFloating) \
  _(sin,         1, ew::Plain<ew::f::Sin>,        PromoteToFloat, kFloating) \
  _(cos,         1, ew::Plain<ew::f::Cos>,        PromoteToFloat, kFloating) \
  _(tan,         1, ew::Plain<ew::f::Tan>,        PromoteToFloat, kFloating) \
  _(tanh,        1, ew::Plain<ew::f::Tanh>,       PromoteToFloat, kFloating) \
  _(sigmoid,     1, ew::Plain<ew::f::Sigmoid>,    PromoteToFloat, kFloating) \
  _(relu,        1, ew::Plain<ew::f::Relu>,       Promote,        kNumeric)  \
  _(gelu,        1, ew::Gelu,                     PromoteToFloat, kFloating) \
  _(silu,        1, ew::Plain<ew::f::Silu>,       PromoteToFloat, kFloating) \
  _(softplus,    1, ew::Softplus,                 PromoteToFloat, kFloating) \
  _(erf,         1, ew::Plain<ew::f::Erf>,        PromoteToFloat, kFloating) \
  _(erfinv,      1, ew::Plain<ew::f::Erfinv>,     PromoteToFloat, kFloating) \
  _(floor,       1, ew::Plain<ew::f::Floor>,      Promote,        kNumeric)  \
  _(ceil,        1, ew::Plain<ew::f::Ceil>,       Promote,        kNumeric)  \
  _(round,       1, ew::Round,                    Promote,        kNumeric)  \
  _(clamp,       1, ew::Clamp,                    Promote,        kNumeric)  \
  _(acos,        1, ew::Plain<ew::f::Acos>,       PromoteToFloat, kFloating) \
  _(asin,        1, ew::Plain<ew::f::Asin>,       PromoteToFloat, kFloating) \
  _(sinh,        1, ew::Plain<ew::f::Sinh>,       PromoteToFloat, kFloating) \
  _(cosh,        1, ew::Plain<ew::f::Cosh>,       PromoteToFloat, kFloating) \
  _(asinh,       1, ew::Plain<ew::f::Asinh>,      PromoteToFloat, kFloating) \
  _(acosh,       1, ew::Plain<ew::f::Acosh>,      PromoteToFloat, kFloating) \
  _(atanh,       1, ew::Plain<ew::f::Atanh>,      PromoteToFloat, kFloating) \
  _(trunc,       1, ew::Plain<ew::f::Trunc>,      Promote,        kNumeric)  \
  _(frac,        1, ew::Plain<ew::f::Frac>,       Promote,        kFloating) \
  _(logit,       1, ew::Logit,                    PromoteToFloat, kFloating) \
  _(hardtanh,    1, ew::Clamp,                    Promote,        kNumeric)  \
  _(hardswish,   1, ew::Plain<ew::f::Hardswish>,  Promote,        kFloating) \
  _(hardsigmoid, 1, ew::Plain<ew::f::Hardsigmoid>, Promote,       kFloating) \
  _(leaky_relu,  1, ew::LeakyRelu,                Promote,        kFloating) \
  _(elu,         1, ew::Elu,                      Promote,        kFloating) \
  _(selu,        1, ew::Selu,                     Promote,        kFloating) \
  _(mish,        1, ew::Plain<ew::f::Mish>,       Promote,        kFloating) \
  _(isfinite,    0, ew::Plain<ew::f::IsFinite>,   Predicate,      kAll)      \
  _(isnan,       0, ew::Plain<ew::f::IsNan>,      Predicate,      kAll)      \
  _(isinf,       0, ew::Plain<ew::f::IsInf>,      Predicate,      kAll)      \
  _(logical_not, 0, ew::Plain<ew::f::LogicalNot>, Predicate,      kAll)

// Binary arithmetic: two inputs (wrapped scalars stay scalars, in opmath).
#define MIXT_ELEMENTWISE_BINARY(_)                                   \
  _(add,     1, ew::WithAlpha<ew::f::Add>,   Promote,        kAll)      \
  _(sub,     1, ew::WithAlpha<ew::f::Sub>,   Promote,        kNumeric)  \
  _(mul,     1, ew::Plain<ew::f::Mul>,       Promote,        kAll)      \
  _(div,     1, ew::Div,                     Promote,        kNumeric)  \
  _(pow,     1, ew::Pow,                     Promote,        kNumeric)  \
  _(atan2,   1, ew::Plain<ew::f::Atan2>,     PromoteToFloat, kFloating) \
  _(maximum, 0, ew::Plain<ew::f::Maximum>,   Promote,        kAll)      \
  _(minimum, 0, ew::Plain<ew::f::Minimum>,   Promote,        kAll)

// Comparisons (wrapped scalars first rounded to the promoted dtype) and logical ops
// (operands read as bool); bool results.
#define MIXT_ELEMENTWISE_COMPARE(_)                                     \
  _(eq,          0, ew::Plain<ew::f::Eq>,         Compare, kAll)     \
  _(ne,          0, ew::Plain<ew::f::Ne>,         Compare, kAll)     \
  _(lt,          0, ew::Plain<ew::f::Lt>,         Compare, kAll)     \
  _(le,          0, ew::Plain<ew::f::Le>,         Compare, kAll)     \
  _(gt,          0, ew::Plain<ew::f::Gt>,         Compare, kAll)     \
  _(ge,          0, ew::Plain<ew::f::Ge>,         Compare, kAll)     \
  _(logical_and, 0, ew::Plain<ew::f::LogicalAnd>, Logical, kBoolSet) \
  _(logical_or,  0, ew::Plain<ew::f::LogicalOr>,  Logical, kBoolSet) \
  _(logical_xor, 0, ew::Plain<ew::f::LogicalXor>, Logical, kBoolSet)

// Ternary ops: three inputs (lerp's weight may stay a scalar; where's condition is bool).
#define MIXT_ELEMENTWISE_TERNARY(_)                                \
  _(addcmul, 1, ew::WithValue<ew::f::Addcmul>, Promote, kNumeric)  \
  _(addcdiv, 1, ew::WithValue<ew::f::Addcdiv>, Promote, kFloating) \
  _(lerp,    1, ew::Plain<ew::f::Lerp>,        Promote, kFloating) \
  _(where,   0, ew::Plain<ew::f::Where>,       Where,   kAll)
// clang-format on

// One enum per family, of its rows in list order (the CUDA launch structs carry these).
#define MIXT_EW_ENUMERATOR(name, inplace, Maker, Rule, Set) name,
enum class UnaryOp : uint8_t { MIXT_ELEMENTWISE_UNARY(MIXT_EW_ENUMERATOR) };
enum class BinaryOp : uint8_t { MIXT_ELEMENTWISE_BINARY(MIXT_EW_ENUMERATOR) };
enum class CompareOp : uint8_t { MIXT_ELEMENTWISE_COMPARE(MIXT_EW_ENUMERATOR) };
enum class TernaryOp : uint8_t { MIXT_ELEMENTWISE_TERNARY(MIXT_EW_ENUMERATOR) };
#undef MIXT_EW_ENUMERATOR

}  // namespace mixt
