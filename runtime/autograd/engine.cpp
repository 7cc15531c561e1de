// The backward engine: dependency counting over the graph reachable from the
// roots, then nodes run in reverse creation order as their inputs complete.
#include <mutex>
#include <queue>
#include <unordered_map>

#include <mixt/runtime/autograd/autograd.h>
#include <mixt/runtime/autograd_meta.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::autograd {
namespace {

struct NodeState {
  int dependencies = 0;
  std::vector<Tensor> buffer;  // gradient per node input
};

struct LaterFirst {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr < b->sequence_nr; }
};

void accumulate(std::vector<Tensor>& buffer, uint32_t slot, const Tensor& g) {
  if (buffer.size() <= slot) buffer.resize(slot + 1);
  Tensor& b = buffer[slot];
  b = b.defined() ? add(b, g) : g;
}

// Runs the graph from `edges` seeded with `grads`. When `capture` is non-empty,
// gradients arriving at those edges are stored in `captured` and leaves are not
// touched (grad()); otherwise leaves accumulate (backward()).
void execute(const std::vector<Edge>& edges, const std::vector<Tensor>& grads, bool retain_graph,
             const std::vector<Edge>& capture, std::vector<Tensor>* captured) {
  NoGradGuard no_grad;
  std::unordered_map<Node*, NodeState> states;
  std::unordered_map<Node*, std::shared_ptr<Node>> owners;
  // Count dependencies over everything reachable.
  std::vector<Node*> stack;
  for (const Edge& e : edges) {
    if (!owners.count(e.fn.get())) {
      owners[e.fn.get()] = e.fn;
      states[e.fn.get()];
      stack.push_back(e.fn.get());
    }
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& next : n->next_edges) {
      if (!next.valid()) continue;
      Node* child = next.fn.get();
      if (!owners.count(child)) {
        owners[child] = next.fn;
        stack.push_back(child);
      }
      ++states[child].dependencies;
    }
  }
  for (size_t i = 0; i < edges.size(); ++i) accumulate(states[edges[i].fn.get()].buffer, edges[i].input_nr, grads[i]);

  auto capture_slot = [&](Node* n, uint32_t nr) -> int {
    for (size_t i = 0; i < capture.size(); ++i)
      if (capture[i].fn.get() == n && capture[i].input_nr == nr) return static_cast<int>(i);
    return -1;
  };

  std::priority_queue<Node*, std::vector<Node*>, LaterFirst> ready;
  for (auto& [n, s] : states)
    if (s.dependencies == 0) ready.push(n);
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    NodeState& s = states[n];
    const size_t n_slots = std::max(s.buffer.size(), n->output_meta.size());
    s.buffer.resize(n_slots);
    std::vector<Tensor> out;
    {
      std::lock_guard lock(n->mutex);  // Note [Autograd across threads]
      for (uint32_t i = 0; i < n_slots; ++i) {
        if (!s.buffer[i].defined()) continue;
        s.buffer[i] = n->run_pre_hooks(i, s.buffer[i]);
        if (!capture.empty()) {
          const int slot = capture_slot(n, i);
          if (slot >= 0) (*captured)[static_cast<size_t>(slot)] = s.buffer[i];
        }
      }
      const bool is_leaf_node = dynamic_cast<AccumulateGrad*>(n) != nullptr;
      if (!(is_leaf_node && !capture.empty())) {
        PrecisionScopeGuard scoped(n->scopes);  // Note [Backward scopes]
        out = n->apply(std::move(s.buffer));
        if (!retain_graph) n->release_saved();
      }
    }
    s.buffer.clear();
    for (size_t i = 0; i < n->next_edges.size(); ++i) {
      const Edge& next = n->next_edges[i];
      if (!next.valid()) continue;
      NodeState& child = states[next.fn.get()];
      if (i < out.size() && out[i].defined()) accumulate(child.buffer, next.input_nr, out[i]);
      if (--child.dependencies == 0) ready.push(next.fn.get());
    }
  }
}

std::vector<Tensor> root_grads(const std::vector<Tensor>& roots, const std::vector<Tensor>& given) {
  MIXT_CHECK(given.empty() || given.size() == roots.size(), "backward", "{} gradients given for {} roots",
             given.size(), roots.size());
  std::vector<Tensor> grads;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    MIXT_CHECK(r.defined(), "backward", "root {} is undefined", i);
    MIXT_CHECK(r.requires_grad(), "backward",
               "root {} ({}) does not require grad and has no grad_fn: nothing to differentiate", i, r.describe());
    if (!given.empty() && given[i].defined()) {
      MIXT_CHECK(given[i].sizes() == r.sizes(), "backward", "gradient of shape {} for root {} of shape {}",
                 given[i].sizes(), i, r.sizes());
      grads.push_back(given[i]);
    } else {
      MIXT_CHECK(r.numel() == 1, "backward",
                 "a gradient can be implied only for one-element roots; root {} has shape {}: pass its gradient",
                 i, r.sizes());
      grads.push_back(ones_like(r));
    }
  }
  return grads;
}

}  // namespace

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots, bool retain_graph) {
  const std::vector<Tensor> grads = root_grads(roots, grad_roots);
  std::vector<Edge> edges;
  for (const Tensor& r : roots) edges.push_back(gradient_edge(r));
  execute(edges, grads, retain_graph, {}, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph, bool allow_unused) {
  const std::vector<Tensor> grads = root_grads(outputs, grad_outputs);
  std::vector<Edge> edges, capture;
  for (const Tensor& r : outputs) edges.push_back(gradient_edge(r));
  for (size_t i = 0; i < inputs.size(); ++i) {
    MIXT_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "grad", "input {} does not require grad", i);
    capture.push_back(gradient_edge(inputs[i]));
  }
  std::vector<Tensor> result(inputs.size());
  execute(edges, grads, retain_graph, capture, &result);
  for (size_t i = 0; i < result.size(); ++i)
    MIXT_CHECK(allow_unused || result[i].defined(), "grad",
               "input {} ({}) is not used by the outputs (pass allow_unused=true to accept that)", i,
               inputs[i].describe());
  return result;
}

Tensor detach(const Tensor& t) {
  MIXT_CHECK(t.defined(), "detach", "the tensor is undefined");
  return make_view(t, t.sizes(), t.strides(), t.storage_offset());
}

bool is_leaf(const Tensor& t) { return !t.impl()->autograd || !t.impl()->autograd->grad_fn; }

std::shared_ptr<Node> grad_fn(const Tensor& t) {
  return t.impl()->autograd ? t.impl()->autograd->grad_fn : nullptr;
}

void register_hook(const Tensor& t, GradHook hook) {
  MIXT_CHECK(t.requires_grad(), "register_hook", "the tensor does not require grad");
  AutogradMeta& m = autograd_meta(t);
  if (m.grad_fn) {
    m.grad_fn->add_pre_hook(m.output_nr, std::move(hook));
    return;
  }
  std::lock_guard lock(m.mutex);
  m.leaf_hooks.push_back(std::move(hook));
}

void register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor&)> hook) {
  MIXT_CHECK(leaf.requires_grad() && is_leaf(leaf), "register_post_accumulate_grad_hook",
             "only leaves that require grad accumulate gradients");
  AutogradMeta& m = autograd_meta(leaf);
  std::lock_guard lock(m.mutex);
  m.post_accumulate_hooks.push_back(std::move(hook));
}

void retain_grad(const Tensor& t) {
  MIXT_CHECK(t.requires_grad(), "retain_grad", "the tensor does not require grad");
  AutogradMeta& m = autograd_meta(t);
  if (!m.grad_fn) return;
  std::shared_ptr<Tensor> cell;
  {
    std::lock_guard lock(m.mutex);
    if (m.retained_grad) return;
    // The node's hook and the tensor share one cell (the hook must not keep the tensor alive).
    cell = m.retained_grad = std::make_shared<Tensor>();
  }
  // The hook runs under the node's mutex, which also orders the passes that write the cell.
  m.grad_fn->add_pre_hook(m.output_nr, [cell](const Tensor& g) {
    NoGradGuard no_grad;
    *cell = cell->defined() ? add(*cell, g) : g.clone();
    return Tensor();
  });
}

}  // namespace mixt::autograd
