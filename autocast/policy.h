// Casting policies: what autocast does to an op's inputs on one device. The
// tables (policy_tables.cpp) follow PyTorch's autocast lists for every op
// mixt has; applications can change an op's policy or register one for a
// custom op. See docs/autocast.md.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include <mixt/dispatcher/op.h>
#include <mixt/runtime/device.h>

namespace mixt::autocast {

enum class Policy : uint8_t {
  PassThrough,    // unlisted: run in the inputs' dtypes
  Lower,          // cast eligible inputs to the autocast dtype (matmul family, conv, attention)
  Fp32,           // cast eligible inputs to float32 (exp/log/pow family, norms, losses)
  Fp32OptDtype,   // set an unset dtype attribute to float32 when input 0 is eligible (softmax, sum, ...)
  Promote,        // cast eligible inputs to the widest eligible dtype (cat, stack, addcmul, ...)
  Banned,         // raise, naming the safe alternative (binary_cross_entropy on CUDA)
  LowerF32Out,    // low-precision operands, float32 accumulation and output (via out_dtype)
  DisabledInside  // run with autocast off: the op computes in its inputs' dtypes (custom solvers)
};

// "lower", "fp32", ... as printed by explain and the policy dump.
std::string_view policy_name(Policy p);
// Prints policy_name(p) (fmt: <mixt/autocast/formatters.h>).
std::ostream& operator<<(std::ostream& os, Policy p);

// The policy of `op` on `device` (PyTorch's lists, or what was set/registered).
Policy policy_of(DeviceType device, OpId op);
// The policy of `op` on `device` in the built-in tables (pass-through for custom ops).
Policy builtin_policy(DeviceType device, OpId op);
// Changes the policy of `op` on `device` (e.g. LowerF32Out for a GEMM feeding an f32 island).
void set_policy(DeviceType device, OpId op, Policy p);
// Restores the built-in tables (tests).
void reset_policies();
// The error text of a banned op ("" when not banned).
std::string_view banned_message(DeviceType device, OpId op);
// The policy table of `device`, grouped by policy (the ops of each policy, in op
// table order), as plain text or as a markdown table.
std::string describe_policies(DeviceType device, bool markdown);
// Version of the built-in tables (part of the precision fingerprint of checkpoints). 2: cross_entropy
// joined CUDA's fp32 list (the float32 loss of PyTorch's decomposition, on every backend).
constexpr int kPolicyTableVersion = 2;

}  // namespace mixt::autocast
