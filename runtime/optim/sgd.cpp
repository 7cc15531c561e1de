// SGD with momentum, dampening, weight decay and Nesterov momentum (torch.optim.SGD's rules).
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops.h>
#include <mixt/runtime/optim/fused_step.h>
#include <mixt/runtime/optim/optimizer.h>

namespace mixt::optim {
namespace {

const SGDOptions& checked(const SGDOptions& o) {
  MIXT_CHECK(o.momentum >= 0.0, "SGD", "invalid momentum: {} (must be >= 0)", o.momentum);
  MIXT_CHECK(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0), "SGD",
             "Nesterov momentum requires a positive momentum and zero dampening (momentum={}, dampening={})",
             o.momentum, o.dampening);
  return o;
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : SGD(single_group(std::move(params)), options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options)
    : Optimizer("SGD", std::move(groups), options.lr, options.weight_decay), options_(checked(options)) {}

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

std::vector<std::pair<std::string, Optimizer::OptionRef>> SGD::hyperparameters() {
  return {{"momentum", &options_.momentum}, {"dampening", &options_.dampening}, {"nesterov", &options_.nesterov}};
}

}  // namespace mixt::optim
