// PyTorch 2.11's autocast op lists (aten/src/ATen/autocast_mode.{h,cpp}), per device and
// policy, in PyTorch's op names, each mapped to the mixt op that implements it or to the
// reason mixt has none. The specification the autocast policy tables are checked against
// (tests/cpu/test_autocast_policy.cpp) and the source of op_support.md's summary.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <mixt/mixt.h>

namespace mixt::testing {

// PyTorch's cast policies, by its names.
enum class AtenPolicy { LowerPrecisionFp, Fp32, Fp32SetOptDtype, Fp32AppendDtype, Promote, Banned };

// "lower_precision_fp", "fp32", ... as autocast_mode.h spells them.
std::string_view aten_policy_name(AtenPolicy p);

// The mixt policy that does what `p` does. fp32_append_dtype (norm's) is mixt's
// Fp32OptDtype: both give a float32 result from an eligible first input, else its dtype.
autocast::Policy mixt_policy(AtenPolicy p);

// One op on a list. An op's overloads (`pow.Scalar`, `sum.dim_IntList`, `_convolution.deprecated`)
// share its policy and count as the op.
struct ListedOp {
  const char* aten;     // PyTorch's op name
  AtenPolicy policy;
  const char* mixt_op;  // the op of dispatcher/op_table.def that implements it, or nullptr
  const char* reason;   // when mixt_op is nullptr: why mixt has none
};

// The list of CUDA (DeviceType::CUDA; XPU, MTIA and MAIA reuse it) or the CPU.
const std::vector<ListedOp>& pytorch_autocast_list(DeviceType device);

// The policy each mapped mixt op takes from `device`'s list. Raises mixt::Error when two
// entries map one mixt op to different policies.
std::map<std::string, autocast::Policy> policies_from_pytorch_list(DeviceType device);

}  // namespace mixt::testing
