// SGD with momentum, dampening, weight decay and Nesterov momentum (torch.optim.SGD's rules).
#include <cmath>

#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/ops.h>
#include <mixt/runtime/ops/optim.h>
#include <mixt/runtime/optim/optimizer.h>

namespace mixt::optim {
namespace {

// The constructor's rules for SGD's own hyperparameters (`op` names the caller).
const SGDOptions& checked(const std::string& op, const SGDOptions& o) {
  MIXT_CHECK(std::isfinite(o.momentum) && o.momentum >= 0.0, op, "invalid momentum: {} (must be finite and >= 0)",
             o.momentum);
  MIXT_CHECK(std::isfinite(o.dampening), op, "invalid dampening: {} (must be finite)", o.dampening);
  MIXT_CHECK(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0), op,
             "Nesterov momentum requires a positive momentum and zero dampening (momentum={}, dampening={})",
             o.momentum, o.dampening);
  return o;
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : SGD(single_group(std::move(params)), options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options)
    : Optimizer("SGD", std::move(groups), options.lr, options.weight_decay), options_(checked("SGD", options)) {}

void SGD::update(const ParamGroup& group, ParamState& state, Tensor& param, const Tensor& grad) {
  Tensor d = grad;  // read only: may alias the parameter's .grad
  if (*group.weight_decay != 0.0) d = add(d, param, *group.weight_decay);
  if (options_.momentum != 0.0) {
    Tensor& step = step_state(state, param);
    Tensor& buf = working_state(state, "momentum_buffer", param);
    if (step.item<double>() == 0.0)
      buf.copy_(d);
    else
      buf.mul_(options_.momentum).add_(d, 1.0 - options_.dampening);
    step.add_(1.0);
    d = options_.nesterov ? add(d, buf, options_.momentum) : buf;
  }
  param.add_(d, -*group.lr);
}

bool SGD::fused_update(const ParamGroup& group, std::span<ParamState* const> states, std::span<const Tensor> params,
                       std::span<const Tensor> grads, const Tensor& found_inf) {
  if (!fused::available(OpId::sgd_step_, params[0].device())) return false;
  std::vector<Tensor> buffers, steps;
  if (options_.momentum != 0.0)
    for (size_t i = 0; i < params.size(); ++i) {
      buffers.push_back(working_state(*states[i], "momentum_buffer", params[i]));
      steps.push_back(step_state(*states[i], params[i]));
    }
  fused::sgd_step_(params, grads, buffers, steps, found_inf,
                   {.lr = *group.lr, .momentum = options_.momentum, .dampening = options_.dampening,
                    .weight_decay = *group.weight_decay, .nesterov = options_.nesterov});
  return true;
}

Optimizer::OptionFields SGD::fields(SGDOptions& o) {
  return {{"momentum", &o.momentum}, {"dampening", &o.dampening}, {"nesterov", &o.nesterov}};
}

Optimizer::OptionFields SGD::hyperparameters() { return fields(options_); }

Optimizer::StagedOptions SGD::stage_options(const io::StateDict& sd, const std::string& op) {
  SGDOptions o = options_;
  read_options(sd, fields(o), op);
  checked(op, o);
  std::vector<std::string> state;
  if (o.momentum != 0.0) state = {"momentum_buffer", "step"};
  return {[this, o] { options_ = o; }, std::move(state)};
}

}  // namespace mixt::optim
