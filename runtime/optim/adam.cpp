// Adam and AdamW (torch.optim.Adam / AdamW's single-tensor update rules).
#include <cmath>

#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/ops.h>
#include <mixt/runtime/ops/optim.h>
#include <mixt/runtime/optim/optimizer.h>

namespace mixt::optim {
namespace {

// The constructor's rules for Adam's own hyperparameters (`op` names the caller).
const AdamOptions& checked(const std::string& op, const AdamOptions& o) {
  for (double beta : o.betas)
    MIXT_CHECK(beta >= 0.0 && beta < 1.0, op, "invalid betas ({}, {}): each must be in [0, 1)", o.betas[0],
               o.betas[1]);
  MIXT_CHECK(std::isfinite(o.eps) && o.eps >= 0.0, op, "invalid eps: {} (must be finite and >= 0)", o.eps);
  return o;
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options) : Adam(single_group(std::move(params)), options) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options)
    : Adam("Adam", std::move(groups), options, 0.0, false) {}

Adam::Adam(std::string name, std::vector<ParamGroup> groups, AdamOptions options, double default_weight_decay,
           bool decoupled)
    : Optimizer(name, std::move(groups), options.lr, options.weight_decay.value_or(default_weight_decay)),
      options_(checked(name, options)),
      decoupled_(decoupled) {
  options_.weight_decay = options.weight_decay.value_or(default_weight_decay);
}

void Adam::update(const ParamGroup& group, ParamState& state, Tensor& param, const Tensor& grad) {
  const double lr = *group.lr, wd = *group.weight_decay;
  const auto [beta1, beta2] = options_.betas;
  Tensor g = grad;  // read only: may alias the parameter's .grad
  if (wd != 0.0) {
    if (decoupled_)
      param.mul_(1.0 - lr * wd);
    else
      g = add(g, param, wd);
  }
  Tensor& exp_avg = zeros_state(state, "exp_avg", param);
  Tensor& exp_avg_sq = zeros_state(state, "exp_avg_sq", param);
  lerp_(exp_avg, g, 1.0 - beta1);
  addcmul_(exp_avg_sq.mul_(beta2), g, g, 1.0 - beta2);
  const double step = step_state(state, param).add_(1.0).item<double>();
  const double bias_correction1 = 1.0 - std::pow(beta1, step);
  const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(beta2, step));
  Tensor second = exp_avg_sq;
  if (options_.amsgrad) {
    Tensor& max_sq = zeros_state(state, "max_exp_avg_sq", param);
    max_sq.copy_(maximum(max_sq, exp_avg_sq));
    second = max_sq;
  }
  Tensor denom = sqrt(second);
  add_(denom.div_(bias_correction2_sqrt), options_.eps);
  addcdiv_(param, exp_avg, denom, -lr / bias_correction1);
}

bool Adam::fused_update(const ParamGroup& group, std::span<ParamState* const> states, std::span<const Tensor> params,
                        std::span<const Tensor> grads, const Tensor& found_inf) {
  if (!fused::available(OpId::adam_step_, params[0].device())) return false;
  std::vector<Tensor> exp_avgs, exp_avg_sqs, maxes, steps;
  for (size_t i = 0; i < params.size(); ++i) {
    exp_avgs.push_back(working_state(*states[i], "exp_avg", params[i]));
    exp_avg_sqs.push_back(working_state(*states[i], "exp_avg_sq", params[i]));
    if (options_.amsgrad) maxes.push_back(working_state(*states[i], "max_exp_avg_sq", params[i]));
    steps.push_back(step_state(*states[i], params[i]));
  }
  fused::adam_step_(params, grads, exp_avgs, exp_avg_sqs, maxes, steps, found_inf,
                    {.lr = *group.lr, .beta1 = options_.betas[0], .beta2 = options_.betas[1], .eps = options_.eps,
                     .weight_decay = *group.weight_decay, .amsgrad = options_.amsgrad, .decoupled = decoupled_});
  return true;
}

Optimizer::OptionFields Adam::fields(AdamOptions& o) {
  return {{"beta1", &o.betas[0]}, {"beta2", &o.betas[1]}, {"eps", &o.eps}, {"amsgrad", &o.amsgrad}};
}

Optimizer::OptionFields Adam::hyperparameters() { return fields(options_); }

Optimizer::StagedOptions Adam::stage_options(const io::StateDict& sd, const std::string& op) {
  AdamOptions o = options_;
  read_options(sd, fields(o), op);
  checked(op, o);
  std::vector<std::string> state = {"exp_avg", "exp_avg_sq", "step"};
  if (o.amsgrad) state.push_back("max_exp_avg_sq");
  return {[this, o] { options_ = o; }, std::move(state)};
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options) : AdamW(single_group(std::move(params)), options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options)
    : Adam("AdamW", std::move(groups), options, 1e-2, true) {}

}  // namespace mixt::optim
