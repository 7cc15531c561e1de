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

namespace mixt {
// Raises, naming the op, when a kernel is asked to write into `t` and several of its
// elements share one memory location (an expanded tensor); `what` names the tensor.
inline void check_writable(const OpCall& call, const Tensor& t, const char* what = "the written tensor") {
  MIXT_CHECK_OP(!t.has_internal_overlap(), call,
                "{} has several elements at one memory location (an expanded tensor): clone() it first", what);
}
}  // namespace mixt
