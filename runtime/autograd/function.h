// Backward formulas and the node that runs them. Every differentiable op has a
// Derivative: which inputs and outputs its formula reads, and the formula,
// written in mixt ops. Custom ops register theirs with register_derivative().
#pragma once

#include <vector>

#include <mixt/dispatcher/op_call.h>
#include <mixt/runtime/autograd/node.h>

namespace mixt::autograd {

// A tensor kept for backward: an alias of the data (no autograd history, so no
// reference cycle) and the version it had when saved.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool is_output);
  // The saved data; throws mixt::Error if it was modified in place since.
  Tensor unpack(std::string_view op) const;
  bool defined() const { return data_.defined(); }
  void reset() { data_ = Tensor(); }

 private:
  Tensor data_;
  uint32_t version_ = 0;
};

class BackwardContext;
// Gradients of the forward inputs (one per input; undefined where not needed).
using BackwardFn = std::vector<Tensor> (*)(const BackwardContext& ctx, const std::vector<Tensor>& grads);

struct Derivative {
  BackwardFn fn = nullptr;
  uint32_t save_inputs = 0;   // bit i: the formula reads forward input i
  uint32_t save_outputs = 0;  // bit i: the formula reads forward output i
  bool save_list = false;     // the formula reads the tensor-list input
};

// Registers (or replaces) the backward formula of op `id`.
void register_derivative(OpId id, Derivative d);
// The formula of op `id`, or nullptr.
const Derivative* derivative_for(OpId id);
// Registers the formulas of the built-in ops (done once, on first use).
void register_builtin_derivatives();

// What a backward formula sees.
class BackwardContext {
 public:
  // Forward input `i` (must be in save_inputs).
  Tensor input(int i) const;
  // Forward output `i` (must be in save_outputs).
  Tensor output(int i) const;
  // The tensor-list input (cat, stack), when save_list.
  std::vector<Tensor> list() const;
  // Number of forward inputs (optional trailing inputs that were absent are not counted).
  int num_inputs() const { return static_cast<int>(inputs_meta.size()); }
  // Shape, dtype and device of forward input `i` (an empty meta when absent) / list element `i`.
  const TensorMeta& input_meta(int i) const {
    static const TensorMeta absent;
    return static_cast<size_t>(i) < inputs_meta.size() ? inputs_meta[static_cast<size_t>(i)] : absent;
  }
  const TensorMeta& list_meta(int i) const { return list_meta_[static_cast<size_t>(i)]; }
  size_t list_size() const { return list_meta_.size(); }
  // True when forward input `i` (or list element `i`) needs a gradient.
  bool needs_grad(int i) const { return static_cast<size_t>(i) < needs.size() && needs[static_cast<size_t>(i)]; }
  const Attrs& attrs() const { return attrs_; }
  OpId op() const { return op_; }

 private:
  friend class OpNode;
  OpId op_ = OpId::kNumBuiltinOps;
  Attrs attrs_;
  std::vector<SavedTensor> saved_inputs, saved_outputs, saved_list;
  std::vector<TensorMeta> inputs_meta, list_meta_;
  std::vector<bool> needs;
};

// The node of one recorded op call.
class OpNode final : public Node {
 public:
  // Captures what `d` needs from `call` (inputs before the op ran, for in-place
  // ops a copy of the original self).
  OpNode(const OpCall& call, const Derivative& d, std::vector<Edge> edges);
  // After the op ran: saves the outputs the formula reads.
  void save_outputs(const OpCall& call);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override;
  void release_saved() override;

 private:
  const Derivative& derivative_;
  BackwardContext ctx_;
};

// Sums `grad` down to `sizes` (undoing broadcasting).
Tensor sum_to(const Tensor& grad, const Shape& sizes);

}  // namespace mixt::autograd
