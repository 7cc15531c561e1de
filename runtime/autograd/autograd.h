// Autograd: the public API. Ops record a graph when grad mode is on and an
// input requires grad; backward() walks it and accumulates leaf gradients.
#pragma once

#include <functional>
#include <vector>

#include <mixt/dispatcher/keys.h>
#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/autograd/node.h>
#include <mixt/runtime/tensor.h>

namespace mixt {
struct OpCall;
}

namespace mixt::autograd {

// Accumulates d(roots)/d(leaf) into every reachable leaf's .grad. Each root
// needs a gradient of its shape, or is a one-element tensor (gradient 1).
// With retain_graph the saved tensors survive for another backward.
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots = {},
              bool retain_graph = false);

// Returns d(outputs)/d(inputs) without touching any .grad. An input that the
// outputs do not depend on raises unless allow_unused (then: undefined).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool allow_unused = false);

// The same data, cut out of the graph (shares storage and the version counter).
Tensor detach(const Tensor& t);
// True for tensors with no grad_fn (created by the user, or not requiring grad).
bool is_leaf(const Tensor& t);
// The node that produced `t` (null for leaves).
std::shared_ptr<Node> grad_fn(const Tensor& t);
// Calls `hook(grad)` when the gradient of `t` is computed; a defined return
// value replaces the gradient.
void register_hook(const Tensor& t, GradHook hook);
// Calls `hook(leaf)` after a leaf's .grad has been updated (DDP uses this).
void register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor&)> hook);
// Makes a non-leaf store its gradient in .grad during backward.
void retain_grad(const Tensor& t);

// The generic Autograd-key kernel (runs the op below autograd and records an
// OpNode with the op's Derivative). Custom ops get it from register_derivative().
void autograd_kernel(OpCall& call, DispatchKeySet keys);
// Registers autograd_kernel (or the composite kernel) for every differentiable built-in op.
void register_autograd_kernels();

}  // namespace mixt::autograd
