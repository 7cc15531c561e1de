// The dtype table: every scalar type mixt stores, its C++ storage type, size,
// category and accumulate type, plus the promotion rules. One X-macro is the
// single source of truth for the list.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string_view>
#include <type_traits>

#include "float_types.h"

namespace mixt {

// MIXT_FORALL_DTYPES(_): _(Enum, cpp_type, "name", Category, AccumulateEnum)
#define MIXT_FORALL_DTYPES(_)                                   \
  _(Bool, bool, "bool", Bool, Bool)                             \
  _(UInt8, uint8_t, "uint8", Integral, Int64)                   \
  _(Int8, int8_t, "int8", Integral, Int64)                      \
  _(Int32, int32_t, "int32", Integral, Int64)                   \
  _(Int64, int64_t, "int64", Integral, Int64)                   \
  _(Float16, Half, "float16", Floating, Float32)                \
  _(BFloat16, BFloat16, "bfloat16", Floating, Float32)          \
  _(Float32, float, "float32", Floating, Float32)               \
  _(Float64, double, "float64", Floating, Float64)              \
  _(Float8_e4m3fn, Float8_e4m3fn, "float8_e4m3fn", Floating, Float32) \
  _(Float8_e5m2, Float8_e5m2, "float8_e5m2", Floating, Float32)

enum class ScalarType : int8_t {
#define MIXT_DEFINE_ENUM(e, t, n, c, a) e,
  MIXT_FORALL_DTYPES(MIXT_DEFINE_ENUM)
#undef MIXT_DEFINE_ENUM
  NumTypes,
  Undefined = -1,
};
using Dtype = ScalarType;

constexpr int kNumDtypes = static_cast<int>(ScalarType::NumTypes);

inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kUInt8 = ScalarType::UInt8;
inline constexpr ScalarType kInt8 = ScalarType::Int8;
inline constexpr ScalarType kInt32 = ScalarType::Int32;
inline constexpr ScalarType kInt64 = ScalarType::Int64;
inline constexpr ScalarType kFloat16 = ScalarType::Float16;
inline constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
inline constexpr ScalarType kFloat32 = ScalarType::Float32;
inline constexpr ScalarType kFloat64 = ScalarType::Float64;
inline constexpr ScalarType kFloat8_e4m3fn = ScalarType::Float8_e4m3fn;
inline constexpr ScalarType kFloat8_e5m2 = ScalarType::Float8_e5m2;
inline constexpr ScalarType kHalf = kFloat16;
inline constexpr ScalarType kFloat = kFloat32;
inline constexpr ScalarType kDouble = kFloat64;
inline constexpr ScalarType kLong = kInt64;
inline constexpr ScalarType kInt = kInt32;

enum class DtypeCategory : uint8_t { Bool, Integral, Floating };

struct DtypeInfo {
  ScalarType type;
  std::string_view name;
  uint8_t size;
  DtypeCategory category;
  ScalarType accumulate;  // the type reductions and GEMMs accumulate in
};

namespace detail {
inline constexpr DtypeInfo kDtypeInfo[] = {
#define MIXT_DEFINE_INFO(e, t, n, c, a) \
  {ScalarType::e, n, sizeof(t), DtypeCategory::c, ScalarType::a},
    MIXT_FORALL_DTYPES(MIXT_DEFINE_INFO)
#undef MIXT_DEFINE_INFO
};
}  // namespace detail

// Table row of `t`; `t` must be a defined dtype.
constexpr const DtypeInfo& dtype_info(ScalarType t) { return detail::kDtypeInfo[static_cast<int>(t)]; }
// Name as printed in errors and docs ("float32", "undefined").
constexpr std::string_view dtype_name(ScalarType t) {
  return t == ScalarType::Undefined ? std::string_view("undefined") : dtype_info(t).name;
}
// Prints dtype_name(t) (fmt: <mixt/runtime/formatters.h>).
std::ostream& operator<<(std::ostream& os, ScalarType t);
// Bytes per element.
constexpr int64_t element_size(ScalarType t) { return dtype_info(t).size; }
// True for the floating types, fp8 included.
constexpr bool is_floating(ScalarType t) { return t != ScalarType::Undefined && dtype_info(t).category == DtypeCategory::Floating; }
// True for the integer types (bool excluded).
constexpr bool is_integral(ScalarType t) { return t != ScalarType::Undefined && dtype_info(t).category == DtypeCategory::Integral; }
// True for float16, bfloat16 and both float8 formats.
constexpr bool is_reduced_float(ScalarType t) {
  return t == kFloat16 || t == kBFloat16 || t == kFloat8_e4m3fn || t == kFloat8_e5m2;
}
// True for the two float8 formats.
constexpr bool is_float8(ScalarType t) { return t == kFloat8_e4m3fn || t == kFloat8_e5m2; }
// Accumulate type of `t` (float32 for the narrow floats, int64 for integers).
constexpr ScalarType accumulate_type(ScalarType t) { return dtype_info(t).accumulate; }
// Parses a dtype name ("float32", "bf16", "half", ...); Undefined when unknown.
ScalarType dtype_from_name(std::string_view name);

// Promotion of two dtypes (PyTorch's grid, see Note [Promotion grid]). Throws
// mixt::Error for combinations with no promotion (float8 mixed with other types).
ScalarType promote_types(ScalarType a, ScalarType b);
// As promote_types, but returns Undefined instead of throwing.
ScalarType promote_types_or_undefined(ScalarType a, ScalarType b);
// True when a value of `from` may be written to a tensor of `to` by an in-place
// op without changing category downward (float -> int, int -> bool are refused).
bool can_cast(ScalarType from, ScalarType to);

// Maps a C++ storage type to its ScalarType.
template <class T> struct CppToDtype;
#define MIXT_DEFINE_CPP_TO_DTYPE(e, t, n, c, a) \
  template <> struct CppToDtype<t> { static constexpr ScalarType value = ScalarType::e; };
MIXT_FORALL_DTYPES(MIXT_DEFINE_CPP_TO_DTYPE)
#undef MIXT_DEFINE_CPP_TO_DTYPE
template <class T> inline constexpr ScalarType dtype_of = CppToDtype<T>::value;

// Maps a ScalarType to its C++ storage type.
template <ScalarType S> struct DtypeToCpp;
#define MIXT_DEFINE_DTYPE_TO_CPP(e, t, n, c, a) \
  template <> struct DtypeToCpp<ScalarType::e> { using type = t; };
MIXT_FORALL_DTYPES(MIXT_DEFINE_DTYPE_TO_CPP)
#undef MIXT_DEFINE_DTYPE_TO_CPP
template <ScalarType S> using cpp_type = typename DtypeToCpp<S>::type;

// The type arithmetic on T is carried out in: float for the narrow floats.
template <class T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <> struct OpMath<Float8_e4m3fn> { using type = float; };
template <> struct OpMath<Float8_e5m2> { using type = float; };
template <class T> using opmath_t = typename OpMath<T>::type;
// True for the storage types narrower than their arithmetic (float16, bfloat16, float8).
template <class T> inline constexpr bool is_narrow_float_v = !std::is_same_v<opmath_t<T>, T>;

}  // namespace mixt

namespace mixt {

// PyTorch's result_type: operands are ranked by kind (tensors with dimensions,
// zero-dim tensors, wrapped scalars); a lower rank only widens the result when it
// is of a higher category (bool < integral < floating). See Note [Promotion grid].
struct ResultTypeState {
  ScalarType dim_result = ScalarType::Undefined;
  ScalarType zero_dim_result = ScalarType::Undefined;
  ScalarType wrapped_result = ScalarType::Undefined;
};
enum class OperandKind : uint8_t { WrappedScalar, ZeroDim, Dim };
// Folds one operand into the state.
void update_result_type(ResultTypeState& state, ScalarType dtype, OperandKind kind);
// The result dtype of the folded operands.
ScalarType result_type(const ResultTypeState& state);

}  // namespace mixt
