// The pure decision function: what autocast does to one call on one device,
// from dtypes and the state alone. The autocast kernel uses it; tests and tools
// call it for any device (the CUDA policy is testable without a GPU).
#pragma once

#include <array>
#include <functional>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include <mixt/autocast/policy.h>
#include <mixt/autocast/state.h>
#include <mixt/dispatcher/op_call.h>

namespace mixt::autocast {

// What the decision needs to know about one input.
struct InputInfo {
  bool defined = false;
  ScalarType dtype = ScalarType::Undefined;
  Shape sizes;  // for the output-dtype prediction (the op runs on meta tensors of these sizes)
  DeviceType device = DeviceType::CPU;
  bool sensitive = false;        // marked with mark_sensitive
  OperandKind kind = OperandKind::Dim;  // how it counts in type promotion
  // The description of `t`; `with_sizes` false leaves `sizes` empty (only the prediction
  // reads them: the kernel skips the copy when nothing will predict).
  static InputInfo of(const Tensor& t, bool with_sizes = true);
};

// Which rule decided.
enum class Rule : uint8_t { PassThrough, Table, Island, Region, Disabled, Custom, SensitiveParam, Banned };
std::string_view rule_name(Rule r);
// Prints rule_name(r) (fmt: <mixt/autocast/formatters.h>).
std::ostream& operator<<(std::ostream& os, Rule r);

struct Decision {
  Rule rule = Rule::PassThrough;
  Policy policy = Policy::PassThrough;
  std::array<ScalarType, kMaxInputs> cast_to{};  // per input; Undefined = unchanged
  std::vector<ScalarType> list_cast_to;          // per list element
  ScalarType set_dtype = ScalarType::Undefined;  // dtype attribute to set (opt_dtype, out_dtype)
  ScalarType output_dtype = ScalarType::Undefined;  // predicted dtype of output 0
  std::string error;                               // non-empty: the call raises this
  bool run_without_autocast = false;               // DisabledInside
};

namespace detail {
// The casting part of a decision (no error text, no prediction): what decide() and the
// autocast kernel share. `raises`: the call raises (decide() writes the message).
struct CastPlan {
  Rule rule = Rule::PassThrough;
  Policy policy = Policy::PassThrough;
  std::array<ScalarType, kMaxInputs> cast_to = [] {
    std::array<ScalarType, kMaxInputs> a;
    a.fill(ScalarType::Undefined);
    return a;
  }();
  ScalarType set_dtype = ScalarType::Undefined;
  bool run_without_autocast = false;
  bool raises = false;
};
// The plan for a call without a tensor list, read from its tensors in place (the kernel's
// path when nothing records: no InputInfo, no sizes). `table` = policy_of(device, op).
// Tensors on `tensors_device` count as `device`'s (a rehearsed policy decides for them).
CastPlan plan_casts(DeviceType device, OpId op, Policy table, std::span<const Tensor> inputs,
                    DeviceType tensors_device, ScalarType attrs_dtype, const State& st);
}  // namespace detail

// The decision for `op` on `device` with these inputs and attributes under `st`.
// `predict`: also fill output_dtype, by running the op on meta tensors of the inputs'
// shapes (Note [Predicted output dtypes]; the kernel asks only while explain records).
Decision decide(DeviceType device, OpId op, std::span<const InputInfo> inputs, std::span<const InputInfo> list,
                const Attrs& attrs, const State& st, bool predict = true);

// One input of the convenience decide(): a dtype and, for the prediction, a shape
// (none: a 0-dim tensor).
struct TypedInput {
  TypedInput(ScalarType dtype, Shape sizes = {}) : dtype(dtype), sizes(sizes) {}
  ScalarType dtype;
  Shape sizes;
};
// Convenience: the decision for plain inputs (all on `device`, none a parameter). `attrs`
// holds the call's named attributes, or none ({}): the op's defaults stand in, and where the
// output dtype cannot be predicted with them decide() raises, naming what the call needs.
Decision decide(DeviceType device, OpId op, std::initializer_list<TypedInput> inputs, const Attrs& attrs,
                const State& st);
// The same with the call's named attributes as their struct, e.g. for conv2d
// decide(DeviceType::CUDA, OpId::conv2d, inputs, attrs::Conv{.stride = {1, 1}, ...}, st).
// Raises when `op` takes another struct.
template <class Named>
  requires requires { Named::kSchema; }
Decision decide(DeviceType device, OpId op, std::initializer_list<TypedInput> inputs, const Named& named,
                const State& st) {
  Attrs a;
  a.reset(Named::kSchema);
  a.get<Named>() = named;
  return decide(device, op, inputs, a, st);
}

}  // namespace mixt::autocast
