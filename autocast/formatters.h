// fmt formatters for autocast's value types (policies and decision rules):
// fmt::format("{}", x) gives what `os << x` prints. Host code only; <mixt/mixt.h>
// includes it (runtime/formatters.h has the runtime's types).
#pragma once

#include <mixt/autocast/decision.h>
#include <mixt/autocast/policy.h>
#include <mixt/runtime/formatters.h>

template <>
struct fmt::formatter<mixt::autocast::Policy> : mixt::detail::TextFormatter<mixt::autocast::Policy, mixt::autocast::policy_name> {};
template <>
struct fmt::formatter<mixt::autocast::Rule> : mixt::detail::TextFormatter<mixt::autocast::Rule, mixt::autocast::rule_name> {};
