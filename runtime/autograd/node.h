// The autograd graph: nodes (one per recorded op, plus one gradient
// accumulator per leaf) connected by edges that point at the node which
// receives a gradient and at which of its inputs it arrives.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <mixt/runtime/precision_scopes.h>
#include <mixt/runtime/tensor.h>

namespace mixt::autograd {

class Node;

// Where a gradient goes: `fn` receives it as its gradient input number `input_nr`.
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return static_cast<bool>(fn); }
};

// Shape, dtype and device of a tensor a node produced or consumed (to create
// zero gradients and to cast gradients back to the input's dtype).
struct TensorMeta {
  Shape sizes;
  ScalarType dtype = ScalarType::Undefined;
  Device device;
  static TensorMeta of(const Tensor& t) { return {t.sizes(), t.dtype(), t.device()}; }
};

// A hook on a gradient: may return a replacement (or an undefined tensor to keep it).
using GradHook = std::function<Tensor(const Tensor&)>;

class Node {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Gradients of the forward inputs (one per next edge) from the gradients of
  // the forward outputs (one per output; undefined = zero).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  // Name for errors and graph dumps ("MulBackward").
  virtual std::string name() const = 0;
  // Frees what the backward needed (called after use unless the graph is retained).
  virtual void release_saved() {}

  // Runs the hooks registered on output `i`'s gradient (the caller holds `mutex`).
  Tensor run_pre_hooks(uint32_t i, Tensor grad) const;
  // Adds a hook on output `output_nr`'s gradient.
  void add_pre_hook(uint32_t output_nr, GradHook hook);

  std::vector<Edge> next_edges;
  std::vector<TensorMeta> output_meta;  // one per forward output
  const uint64_t sequence_nr;           // creation order: later nodes run first
  // The precision scopes (islands, regions) open when the forward ran: the
  // backward runs under them, on whatever thread runs it. See Note [Backward scopes].
  const PrecisionScopes scopes;
  bool released = false;
  // Held while the node runs (hooks, apply, release): backward passes on several
  // threads that share it take turns. See Note [Autograd across threads].
  std::mutex mutex;

 private:
  std::vector<std::pair<uint32_t, GradHook>> pre_hooks_;
};

// Accumulates gradients into a leaf's .grad (in the leaf's dtype and device),
// then runs the leaf's hooks after accumulation.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  const Tensor& leaf() const { return leaf_; }

 private:
  Tensor leaf_;
};

// The edge a gradient of `t` flows into: its grad_fn, its leaf accumulator, or
// none (a tensor that does not require grad).
Edge gradient_edge(const Tensor& t);

}  // namespace mixt::autograd
