// OpCall: one call of one op, as every layer (autocast, autograd, backends)
// sees it. Inputs, outputs and attributes are stored inline: building and
// dispatching a call allocates nothing. See Note [One kernel signature].
#pragma once

#include <array>
#include <span>
#include <string>

#include <mixt/dispatcher/attrs.h>
#include <mixt/dispatcher/op.h>
#include <mixt/dispatcher/op_attrs.h>
#include <mixt/runtime/tensor.h>

namespace mixt {

constexpr int kMaxInputs = 6;
constexpr int kMaxOutputs = 3;

struct OpCall {
  // A call of `id` with its attributes at their declared defaults.
  explicit OpCall(OpId id) : op(id) { attrs.reset(*op_entry(id).schema.attrs); }

  // Appends an input (may be undefined for an optional input).
  void push(const Tensor& t) {
    if (MIXT_UNLIKELY(n_in >= kMaxInputs)) throw_too_many_inputs();
    in[n_in++] = t;
  }
  // The OR of the inputs' dispatch keys (and Attrs::device's backend where the op uses it).
  DispatchKeySet input_keys(const OpEntry& e) const {
    DispatchKeySet ks;
    for (int i = 0; i < n_in; ++i)
      if (in[i].defined()) ks |= in[i].impl()->keys;
    for (const Tensor& t : list) ks |= t.impl()->keys;
    if (e.schema.flags & (op_flags::Factory | op_flags::DeviceAttr)) ks |= backend_key_for(attrs.device);
    return ks;
  }
  // "float32[2, 3] cpu, int64[4] cpu": what errors print about the inputs.
  std::string describe_inputs() const;
  [[noreturn]] void throw_too_many_inputs() const;

  OpId op;
  uint8_t n_in = 0;
  std::array<Tensor, kMaxInputs> in;
  std::array<Tensor, kMaxOutputs> out;  // kernels fill undefined outputs, write into defined ones
  std::span<const Tensor> list;         // tensor-list input (not owned)
  Attrs attrs;
};

}  // namespace mixt
