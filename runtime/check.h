// Checks that raise mixt::Error with a formatted message. Host code only: keep
// this header (and fmt) out of .cu files.
#pragma once

#include <string_view>

#include <fmt/format.h>

#include <mixt/runtime/device.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/error.h>
#include <mixt/runtime/macros.h>
#include <mixt/runtime/scalar.h>
#include <mixt/runtime/shape.h>

namespace mixt::detail {
template <class... A>
[[noreturn]] void throw_error(std::string_view op, fmt::format_string<A...> f, A&&... a) {
  throw Error(std::string(op), fmt::format(f, std::forward<A>(a)...));
}
}  // namespace mixt::detail

// Throws mixt::Error(op, formatted message) unless `cond` holds.
#define MIXT_CHECK(cond, op, ...) \
  do {                            \
    if (MIXT_UNLIKELY(!(cond))) ::mixt::detail::throw_error(op, __VA_ARGS__); \
  } while (0)

// Throws mixt::Error(op, formatted message).
#define MIXT_FAIL(op, ...) ::mixt::detail::throw_error(op, __VA_ARGS__)

template <>
struct fmt::formatter<mixt::ScalarType> : fmt::formatter<std::string_view> {
  auto format(mixt::ScalarType t, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(mixt::dtype_name(t), ctx);
  }
};
template <>
struct fmt::formatter<mixt::Device> : fmt::formatter<std::string_view> {
  auto format(const mixt::Device& d, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(d.str(), ctx);
  }
};
template <>
struct fmt::formatter<mixt::Shape> : fmt::formatter<std::string_view> {
  auto format(const mixt::Shape& s, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(s.str(), ctx);
  }
};
template <>
struct fmt::formatter<mixt::Scalar> : fmt::formatter<std::string_view> {
  auto format(const mixt::Scalar& s, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(s.str(), ctx);
  }
};
