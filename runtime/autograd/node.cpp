#include <mixt/runtime/autograd/node.h>

#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/autograd_meta.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops.h>

namespace mixt::autograd {
namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
}

Node::Node()
    : sequence_nr(g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed)), scopes(autocast::capture_scopes()) {}

Tensor Node::run_pre_hooks(uint32_t i, Tensor grad) const {
  for (const auto& [nr, hook] : pre_hooks_) {
    if (nr != i) continue;
    Tensor replaced = hook(grad);
    if (replaced.defined()) grad = std::move(replaced);
  }
  return grad;
}

void Node::add_pre_hook(uint32_t output_nr, GradHook hook) { pre_hooks_.emplace_back(output_nr, std::move(hook)); }

AccumulateGrad::AccumulateGrad(Tensor leaf) : leaf_(std::move(leaf)) {
  output_meta.push_back(TensorMeta::of(leaf_));
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  Tensor g = std::move(grads.at(0));
  if (!g.defined()) return {};
  AutogradMeta& meta = autograd_meta(leaf_);
  for (const auto& hook : meta.leaf_hooks) {
    Tensor replaced = hook(g);
    if (replaced.defined()) g = std::move(replaced);
  }
  MIXT_CHECK(g.sizes() == leaf_.sizes(), "backward", "gradient of shape {} for a leaf of shape {}", g.sizes(),
             leaf_.sizes());
  NoGradGuard no_grad;
  if (g.dtype() != leaf_.dtype() || g.device() != leaf_.device()) g = to(g, leaf_.device(), leaf_.dtype());
  if (!meta.grad.defined()) {
    // Own the gradient: the engine's buffer may be shared with another node.
    meta.grad = g.use_count() > 1 || !g.is_contiguous() ? g.clone() : g;
  } else {
    add_(meta.grad, g);
  }
  for (const auto& hook : meta.post_accumulate_hooks) hook(leaf_);
  return {};
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  AutogradMeta& meta = autograd_meta(t);
  if (meta.grad_fn) return {meta.grad_fn, meta.output_nr};
  std::shared_ptr<Node> acc = meta.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    meta.grad_accumulator = acc;
  }
  return {acc, 0};
}

}  // namespace mixt::autograd
