// fmt formatters for the dispatcher's value types (dispatch keys and key sets, op ids,
// the enumerated attributes): fmt::format("{}", x) gives what `os << x` prints. Host
// code only; <mixt/mixt.h> includes it (runtime/formatters.h has the runtime's types).
#pragma once

#include <mixt/dispatcher/attrs.h>
#include <mixt/dispatcher/keys.h>
#include <mixt/dispatcher/op.h>
#include <mixt/runtime/formatters.h>

template <>
struct fmt::formatter<mixt::DispatchKey> : mixt::detail::TextFormatter<mixt::DispatchKey, mixt::dispatch_key_name> {};
template <>
struct fmt::formatter<mixt::DispatchKeySet> : mixt::detail::StreamFormatter<mixt::DispatchKeySet> {};
template <>
struct fmt::formatter<mixt::OpId> : mixt::detail::TextFormatter<mixt::OpId, mixt::op_name> {};
template <>
struct fmt::formatter<mixt::Reduction> : mixt::detail::StreamFormatter<mixt::Reduction> {};
template <>
struct fmt::formatter<mixt::Rounding> : mixt::detail::StreamFormatter<mixt::Rounding> {};
template <>
struct fmt::formatter<mixt::GeluApprox> : mixt::detail::StreamFormatter<mixt::GeluApprox> {};
