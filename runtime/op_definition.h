// One block that declares an application's op: its schema, meta function, kernels,
// derivative and autocast policies. Everything is checked before anything is
// registered. See docs/dispatcher.md and Note [One registration block].
//
//   const OpId mish = OpDefinition("app::mish")
//                         .inputs(1)
//                         .meta(mish_meta)
//                         .kernel(DispatchKey::CPU, mish_cpu)
//                         .derivative({.fn = mish_backward, .save_inputs = 0b1})
//                         .autocast(DeviceType::CUDA, autocast::Policy::Fp32)
//                         .define();
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <mixt/autocast/policy.h>
#include <mixt/dispatcher/op.h>
#include <mixt/dispatcher/op_call.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/runtime/autograd/function.h>

namespace mixt {

using autograd::BackwardContext;
using autograd::Derivative;

class OpDefinition {
 public:
  // `name`: unique, by convention "namespace::op".
  explicit OpDefinition(std::string name);

  // Tensor inputs: exactly `n`, or between `min` and `max` (trailing ones optional).
  OpDefinition& inputs(int n) { return inputs(n, n); }
  OpDefinition& inputs(int min, int max);
  // Number of outputs (default 1).
  OpDefinition& outputs(int n);
  // The op also takes a tensor list (OpCall::list).
  OpDefinition& takes_list();
  // The attribute struct (declared with MIXT_ATTRS_STRUCT); default: none.
  template <class A>
  OpDefinition& attrs() {
    schema_.attrs = &A::kSchema;
    return *this;
  }
  // How the outputs' shapes and dtypes follow from the inputs: the op then runs on the
  // meta device, and autocast's explain and decide() predict its output dtype.
  OpDefinition& meta(MetaFn fn);
  // The kernel of one backend (DispatchKey::CPU, CUDA or Meta).
  OpDefinition& kernel(DispatchKey backend, KernelFn fn);
  // One kernel for every backend (it works on any device's tensors).
  OpDefinition& backend_kernel(KernelFn fn);
  // The op written in other ops: runs on every backend without a kernel of its own,
  // and is differentiated through its decomposition.
  OpDefinition& composite(KernelFn fn);
  // The backward formula used where a backend kernel runs.
  OpDefinition& derivative(Derivative d);
  // The outputs never carry gradients (indices, masks, counts).
  OpDefinition& not_differentiable();
  // The autocast policy on `device` (default: pass-through).
  OpDefinition& autocast(DeviceType device, autocast::Policy policy);

  // Checks the whole definition, then registers it; returns the op's id. Raises
  // mixt::Error (registering nothing) when the definition is incomplete or
  // contradictory: no kernel and no composite, backend kernels without a derivative
  // or not_differentiable(), not_differentiable() with a derivative or a composite, a key
  // that is not a backend, a duplicate name.
  OpId define() const;

 private:
  std::string name_;
  OpSchema schema_;
  std::vector<std::pair<DispatchKey, KernelFn>> kernels_;
  KernelFn composite_ = nullptr;
  std::optional<Derivative> derivative_;
  bool not_differentiable_ = false;
  std::vector<std::pair<DeviceType, autocast::Policy>> policies_;
  std::vector<std::string> problems_;  // found while declaring, reported by define()
};

}  // namespace mixt
