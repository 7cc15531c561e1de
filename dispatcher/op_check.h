// Checks inside kernels: the error names the op and describes every input.
// Host code only (uses fmt).
#pragma once

#include <mixt/dispatcher/op_call.h>
#include <mixt/runtime/check.h>

namespace mixt::detail {
[[noreturn]] void throw_op_error(const OpCall& call, std::string message);
}

// Throws mixt::Error(op name, formatted message, the call's inputs) unless `cond`.
#define MIXT_CHECK_OP(cond, call, ...)                                                   \
  do {                                                                                   \
    if (MIXT_UNLIKELY(!(cond))) ::mixt::detail::throw_op_error(call, fmt::format(__VA_ARGS__)); \
  } while (0)

// Throws mixt::Error(op name, formatted message, the call's inputs).
#define MIXT_FAIL_OP(call, ...) ::mixt::detail::throw_op_error(call, fmt::format(__VA_ARGS__))
