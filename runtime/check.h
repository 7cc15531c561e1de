// Checks that raise mixt::Error with a formatted message. Host code only: keep
// this header (and fmt) out of .cu files.
#pragma once

#include <string_view>

#include <fmt/format.h>

#include <mixt/runtime/device.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/error.h>
#include <mixt/runtime/formatters.h>
#include <mixt/runtime/macros.h>
#include <mixt/runtime/scalar.h>
#include <mixt/runtime/shape.h>

namespace mixt::detail {
// "1 input", "0 inputs", "3 inputs": a count with its noun, for messages.
inline std::string counted(int64_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

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

