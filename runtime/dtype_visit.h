// Runtime dtype -> C++ type dispatch. `visit_dtype<Set>(dtype, op, f)` calls
// f(TypeTag<T>{}) for the storage type T of `dtype` when it is in `Set`, else
// throws mixt::Error naming `op`. Only the types in Set are instantiated.
#pragma once

#include <cstdint>

#include <mixt/runtime/dtype.h>

namespace mixt {

template <class T>
struct TypeTag {
  using type = T;
};

// Sets of dtypes, as bitmasks over ScalarType.
namespace dtypes {
constexpr uint32_t bit(ScalarType t) { return 1u << static_cast<int>(t); }
constexpr uint32_t kBoolSet = bit(kBool);
constexpr uint32_t kIntegral = bit(kUInt8) | bit(kInt8) | bit(kInt32) | bit(kInt64);
constexpr uint32_t kFloat8 = bit(kFloat8_e4m3fn) | bit(kFloat8_e5m2);
constexpr uint32_t kStandardFloat = bit(kFloat16) | bit(kBFloat16) | bit(kFloat32) | bit(kFloat64);  // floating but fp8
constexpr uint32_t kFloating = kStandardFloat | kFloat8;
constexpr uint32_t kNumeric = kIntegral | kFloating;  // everything but bool
constexpr uint32_t kAll = kNumeric | kBoolSet;
constexpr bool contains(uint32_t set, ScalarType t) {
  return t != ScalarType::Undefined && (set & bit(t)) != 0;
}
}  // namespace dtypes

namespace detail {
[[noreturn]] void throw_unsupported_dtype(const char* op, ScalarType t);
}

template <uint32_t Set = dtypes::kAll, class F>
decltype(auto) visit_dtype(ScalarType t, const char* op, F&& f) {
  switch (t) {
#define MIXT_VISIT_CASE(e, cpp, n, c, a)                                 \
  case ScalarType::e:                                                    \
    if constexpr ((Set & dtypes::bit(ScalarType::e)) != 0) return f(TypeTag<cpp>{}); \
    break;
    MIXT_FORALL_DTYPES(MIXT_VISIT_CASE)
#undef MIXT_VISIT_CASE
    default: break;
  }
  detail::throw_unsupported_dtype(op, t);
}

}  // namespace mixt
