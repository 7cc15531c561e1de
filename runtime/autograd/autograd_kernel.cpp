// The generic kernel of the Autograd dispatch key.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/runtime/autograd/autograd.h>
#include <mixt/runtime/autograd/function.h>
#include <mixt/runtime/autograd_meta.h>

namespace mixt::autograd {
namespace {

bool any_requires_grad(const OpCall& c) {
  for (int i = 0; i < c.n_in; ++i)
    if (c.in[i].defined() && c.in[i].requires_grad()) return true;
  for (const Tensor& t : c.list)
    if (t.requires_grad()) return true;
  return false;
}

void run_below(OpCall& c, DispatchKeySet keys) {
  ExcludeKeysGuard below(DispatchKey::Autograd);
  redispatch(c, keys, DispatchKey::Autograd);
}

std::vector<Tensor> raise_undeclared_derivative(const BackwardContext& ctx, const std::vector<Tensor>&) {
  MIXT_FAIL(std::string(op_name(ctx.op())),
            "has no derivative, so gradients cannot flow through it: declare one (OpDefinition::derivative, "
            "register_derivative), write the op as a composite, or declare it not_differentiable()");
}
const Derivative kUndeclaredDerivative{.fn = raise_undeclared_derivative};

std::vector<Tensor> raise_not_differentiable(const BackwardContext& ctx, const std::vector<Tensor>&) {
  MIXT_FAIL(std::string(op_name(ctx.op())),
            "is not differentiable, so gradients cannot flow back through it: detach its inputs, or compute "
            "the gradients another way");
}
const Derivative kNotDifferentiable{.fn = raise_not_differentiable};

bool returns_an_input(const OpCall& c, const Tensor& out) {
  for (int i = 0; i < c.n_in; ++i)
    if (c.in[i].defined() && c.in[i].impl() == out.impl()) return true;
  return false;
}

}  // namespace

void autograd_kernel(OpCall& c, DispatchKeySet keys) {
  if (!is_grad_enabled() || !any_requires_grad(c)) {
    run_below(c, keys);
    return;
  }
  // A backend without a kernel of its own runs the op's composite here, above
  // autograd: the ops it calls record themselves (Note [Composite and backend kernels]).
  const OpEntry& e = op_entry(c.op);
  const DispatchKeySet backend = keys & DispatchKeySet::backends();
  if (!backend.empty() && e.runs_composite(backend.highest())) {
    e.composite(c, keys);
    return;
  }
  const Derivative* d = derivative_for(c.op);
  if (e.has(op_flags::BackwardRaises)) {
    d = &kNotDifferentiable;  // built-in ops recorded only so that backward raises (scaled_mm)
  } else if (d == nullptr) {
    // Note [Custom ops without a derivative]: the graph records the op, and backward
    // through it raises naming it, instead of the gradient silently stopping here.
    MIXT_CHECK_OP(e.has(op_flags::Custom), c, "is differentiable but has no backward formula (register_derivative)");
    d = &kUndeclaredDerivative;
  }
  if (e.has(op_flags::Inplace)) {
    const Tensor& self = c.in[0];
    MIXT_CHECK_OP(!(self.requires_grad() && is_leaf(self)), c,
                  "a leaf tensor that requires grad cannot be modified in place while recording (do the update "
                  "under NoGradGuard, as optimizers do)");
    MIXT_CHECK_OP(!self.impl()->is_view, c,
                  "in-place ops on views are not recorded by autograd: clone() the view, or write to the base "
                  "tensor");
  }
  std::vector<Edge> edges;
  edges.reserve(static_cast<size_t>(c.n_in) + c.list.size());
  for (int i = 0; i < c.n_in; ++i) edges.push_back(gradient_edge(c.in[i]));
  for (const Tensor& t : c.list) edges.push_back(gradient_edge(t));
  std::shared_ptr<OpNode> node;
  {
    NoGradGuard no_grad;  // copies taken for backward are not part of the graph
    node = std::make_shared<OpNode>(c, *d, std::move(edges));
  }
  run_below(c, keys);
  node->save_outputs(c);
  for (int i = 0; i < e.schema.outputs; ++i) {
    Tensor& out = c.out[static_cast<size_t>(i)];
    if (!out.defined() || !is_floating(out.dtype())) continue;
    // An out-of-place op that returned one of its inputs itself (a no-op `to`) made
    // nothing new: that tensor keeps its own history (and a leaf stays a leaf).
    if (!e.has(op_flags::Inplace) && returns_an_input(c, out)) continue;
    AutogradMeta& meta = autograd_meta(out);
    meta.grad_fn = node;
    meta.output_nr = static_cast<uint32_t>(i);
    out.impl()->requires_grad = true;
  }
}

// Built-in ops: differentiable ones record, and so do BackwardRaises ones (their backward
// raises); the others skip autograd. Every custom op records (the fallback) unless it is
// declared not differentiable.
void register_autograd_kernels() {
  for (int i = 0; i < kNumBuiltinOps; ++i) {
    const OpEntry& e = mixt::detail::g_ops[i];  // (op_entry() would wait for this very registration)
    register_kernel(static_cast<OpId>(i), DispatchKey::Autograd,
                    e.has(op_flags::Diff | op_flags::BackwardRaises) ? autograd_kernel : fallthrough_kernel);
  }
  register_fallback(DispatchKey::Autograd, autograd_kernel);
}

}  // namespace mixt::autograd
