// Front ends of the fused optimizer steps: one multi-tensor op updates a whole
// parameter group, optionally predicated on the grad scaler's found_inf flag
// (nonzero: nothing changes, step counters included), so a skipped step needs
// no host read. The optimizers of runtime/optim call them.
// See Note [Fused optimizer steps].
#pragma once

#include <span>

#include <mixt/dispatcher/op.h>
#include <mixt/runtime/tensor.h>

namespace mixt::optim::fused {

struct AdamHyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  bool amsgrad = false;
  bool decoupled = false;  // AdamW
};
// params/grads/exp_avgs/exp_avg_sqs[/max_exp_avg_sqs]/steps: one entry per parameter.
void adam_step_(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> exp_avgs,
                std::span<const Tensor> exp_avg_sqs, std::span<const Tensor> max_exp_avg_sqs,
                std::span<const Tensor> steps, const Tensor& found_inf, const AdamHyper& h);

struct SgdHyper {
  double lr = 1e-3, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false;
};
// momentum_buffers and steps are empty when momentum == 0.
void sgd_step_(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> momentum_buffers,
               std::span<const Tensor> steps, const Tensor& found_inf, const SgdHyper& h);

// True when `op` has a kernel for `device`'s backend (else the optimizer updates
// parameter by parameter with composite ops).
bool available(OpId op, const Device& device);

}  // namespace mixt::optim::fused
