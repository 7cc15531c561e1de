#include <mixt/runtime/ops/optim.h>

#include <vector>

#include <mixt/dispatcher/dispatch.h>

namespace mixt::optim::fused {
namespace {

// Concatenates the lists (the op takes one list) and bumps the versions of every
// tensor but the gradients (list 1), which are only read.
std::vector<Tensor> concat(std::initializer_list<std::span<const Tensor>> lists) {
  std::vector<Tensor> all;
  size_t k = 0;
  for (std::span<const Tensor> l : lists) {
    for (const Tensor& t : l) {
      if (k != 1) t.bump_version();
      all.push_back(t);
    }
    ++k;
  }
  return all;
}

void run(OpCall& c, const Tensor& found_inf) {
  if (found_inf.defined()) c.push(found_inf);
  dispatch(c);
}

}  // namespace

void adam_step_(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> exp_avgs,
                std::span<const Tensor> exp_avg_sqs, std::span<const Tensor> max_exp_avg_sqs,
                std::span<const Tensor> steps, const Tensor& found_inf, const AdamHyper& h) {
  const std::vector<Tensor> all =
      h.amsgrad ? concat({params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps})
                : concat({params, grads, exp_avgs, exp_avg_sqs, steps});
  OpCall c(OpId::adam_step_);
  c.list = all;
  c.attrs.get<attrs::AdamStep>() = {static_cast<int64_t>(params.size()), h.amsgrad, h.decoupled, h.lr, h.beta1,
                                    h.beta2, h.eps, h.weight_decay};
  run(c, found_inf);
}

void sgd_step_(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> momentum_buffers,
               std::span<const Tensor> steps, const Tensor& found_inf, const SgdHyper& h) {
  const std::vector<Tensor> all = concat({params, grads, momentum_buffers, steps});
  OpCall c(OpId::sgd_step_);
  c.list = all;
  c.attrs.get<attrs::SgdStep>() = {static_cast<int64_t>(params.size()), h.lr, h.momentum, h.dampening,
                                   h.weight_decay, h.nesterov};
  run(c, found_inf);
}

bool available(OpId op, const Device& device) { return op_entry(op).mask.has(backend_key_for(device)); }

}  // namespace mixt::optim::fused
