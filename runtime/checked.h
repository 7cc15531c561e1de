// Checked size arithmetic: every size, stride, element count, byte count and
// offset that comes from a caller, a file or a capsule is combined with these,
// never with bare * and +. An overflow raises mixt::Error naming the op and the
// operands instead of wrapping. See Note [Checked size arithmetic].
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <mixt/runtime/macros.h>

namespace mixt {

class Shape;

namespace detail {
[[noreturn]] void throw_size_overflow(const char* op, const char* what, long double a, long double b);
}  // namespace detail

// a * b, or mixt::Error(op, "... overflows") when the product does not fit in T.
template <class T>
MIXT_ALWAYS_INLINE T checked_mul(T a, T b, const char* op) {
  static_assert(std::is_integral_v<T>);
  T r;
  if (MIXT_UNLIKELY(__builtin_mul_overflow(a, b, &r)))
    detail::throw_size_overflow(op, "*", static_cast<long double>(a), static_cast<long double>(b));
  return r;
}

// a + b, or mixt::Error(op, "... overflows") when the sum does not fit in T.
template <class T>
MIXT_ALWAYS_INLINE T checked_add(T a, T b, const char* op) {
  static_assert(std::is_integral_v<T>);
  T r;
  if (MIXT_UNLIKELY(__builtin_add_overflow(a, b, &r)))
    detail::throw_size_overflow(op, "+", static_cast<long double>(a), static_cast<long double>(b));
  return r;
}

// a - b, or mixt::Error(op, "... overflows") when the difference does not fit in T.
template <class T>
MIXT_ALWAYS_INLINE T checked_sub(T a, T b, const char* op) {
  static_assert(std::is_integral_v<T>);
  T r;
  if (MIXT_UNLIKELY(__builtin_sub_overflow(a, b, &r)))
    detail::throw_size_overflow(op, "-", static_cast<long double>(a), static_cast<long double>(b));
  return r;
}

// `v` as size_t; raises when it is negative.
size_t checked_size(int64_t v, const char* op);
// `v` as int64_t; raises when it exceeds INT64_MAX.
int64_t checked_int64(uint64_t v, const char* op);

// Number of elements of `sizes` (0 when any size is 0). Raises, naming `op`, for
// a negative size or when the sizes (zeros counted as ones) multiply past
// INT64_MAX. See Note [Checked size arithmetic].
int64_t checked_numel(const Shape& sizes, const char* op);
// numel * element_size, raising when the byte count does not fit in int64.
int64_t checked_nbytes(int64_t numel, int64_t element_size, const char* op);
// One past the furthest element a view (sizes, strides, offset) reaches, in
// elements (offset itself for an empty view). Raises for negative sizes,
// strides or offset and on overflow.
int64_t checked_extent(const Shape& sizes, const Shape& strides, int64_t offset, const char* op);

}  // namespace mixt
