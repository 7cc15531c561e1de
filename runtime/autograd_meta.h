// Per-tensor autograd state, allocated on first use by the autograd engine
// (runtime/autograd).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <mixt/runtime/tensor.h>

namespace mixt {

namespace autograd {
class Node;
}

// What backward passes on several threads share is locked: see Note [Autograd across threads].
struct AutogradMeta {
  std::mutex mutex;       // guards grad_accumulator, the hook lists and retained_grad's creation
  std::mutex grad_mutex;  // held while a gradient is accumulated into `grad` and the post hooks run
  Tensor grad;                                      // accumulated gradient of a leaf (or a retained one)
  std::shared_ptr<autograd::Node> grad_fn;          // producer of a non-leaf
  uint32_t output_nr = 0;                           // which output of grad_fn this is
  std::weak_ptr<autograd::Node> grad_accumulator;   // a leaf's AccumulateGrad, shared by all its uses
  std::vector<std::function<Tensor(const Tensor&)>> leaf_hooks;  // run on a leaf's gradient before accumulation
  std::vector<std::function<void(const Tensor&)>> post_accumulate_hooks;  // run after a leaf's .grad is updated
  std::shared_ptr<Tensor> retained_grad;            // a non-leaf's gradient, when retain_grad() was called
};

// The tensor's autograd meta, created when absent.
AutogradMeta& autograd_meta(const Tensor& t);

}  // namespace mixt
