#include <mixt/runtime/autograd/node.h>

#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/autograd_meta.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::autograd {
namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
}

Node::Node()
    : sequence_nr(g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed)), scopes(capture_precision_scopes()) {}

Tensor Node::run_pre_hooks(uint32_t i, Tensor grad) const {
  for (const auto& [nr, hook] : pre_hooks_) {
    if (nr != i) continue;
    Tensor replaced = hook(grad);
    if (replaced.defined()) grad = std::move(replaced);
  }
  return grad;
}

void Node::add_pre_hook(uint32_t output_nr, GradHook hook) {
  std::lock_guard lock(mutex);
  pre_hooks_.emplace_back(output_nr, std::move(hook));
}

AccumulateGrad::AccumulateGrad(Tensor leaf) : leaf_(std::move(leaf)) {
  output_meta.push_back(TensorMeta::of(leaf_));
}

// Note [Autograd across threads]: backward passes on several threads may share
// nodes and leaves (Hogwild training, one shared forward and backward per worker).
// A leaf's meta is created when it starts to require grad, before threads share
// it, so readers never race with its creation. Its accumulator is made under
// meta.mutex (one accumulator per leaf at a time), and the accumulation with the
// post-accumulate hooks runs under meta.grad_mutex: no update is lost and a hook
// sees the gradient it was called for. The engine runs each node under its own
// mutex, so a node shared by two passes runs its hooks (retain_grad's cell
// among them), formula and release one pass at a time; with retain_graph=false,
// the pass that comes second finds the graph freed and raises.
std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  Tensor g = std::move(grads.at(0));
  if (!g.defined()) return {};
  AutogradMeta& meta = autograd_meta(leaf_);
  std::vector<GradHook> hooks;
  std::vector<std::function<void(const Tensor&)>> post_hooks;
  {
    std::lock_guard lock(meta.mutex);  // (empty lists copy without allocating)
    hooks = meta.leaf_hooks;
    post_hooks = meta.post_accumulate_hooks;
  }
  for (const auto& hook : hooks) {
    Tensor replaced = hook(g);
    if (replaced.defined()) g = std::move(replaced);
  }
  MIXT_CHECK(g.sizes() == leaf_.sizes(), "backward", "gradient of shape {} for a leaf of shape {}", g.sizes(),
             leaf_.sizes());
  NoGradGuard no_grad;
  if (g.dtype() != leaf_.dtype() || g.device() != leaf_.device()) g = to(g, leaf_.device(), leaf_.dtype());
  std::lock_guard lock(meta.grad_mutex);
  if (!meta.grad.defined()) {
    // Own the gradient: the engine's buffer may be shared with another node.
    meta.grad = g.use_count() > 1 || !g.is_contiguous() ? g.clone() : g;
  } else {
    add_(meta.grad, g);
  }
  for (const auto& hook : post_hooks) hook(leaf_);
  return {};
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  AutogradMeta& meta = autograd_meta(t);
  if (meta.grad_fn) return {meta.grad_fn, meta.output_nr};
  std::lock_guard lock(meta.mutex);
  std::shared_ptr<Node> acc = meta.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    meta.grad_accumulator = acc;
  }
  return {acc, 0};
}

}  // namespace mixt::autograd
