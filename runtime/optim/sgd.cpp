// SGD with momentum, dampening, weight decay and Nesterov momentum (torch.optim.SGD's rules).
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops.h>
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
    Tensor* buf = find_state(state, "momentum_buffer", param);
    if (buf == nullptr) {
      buf = &(state.tensors["momentum_buffer"] = d.clone());
    } else {
      buf->mul_(options_.momentum).add_(d, 1.0 - options_.dampening);
    }
    d = options_.nesterov ? add(d, *buf, options_.momentum) : *buf;
  }
  param.add_(d, -*group.lr);
}

std::vector<std::pair<std::string, Optimizer::OptionRef>> SGD::hyperparameters() {
  return {{"momentum", &options_.momentum}, {"dampening", &options_.dampening}, {"nesterov", &options_.nesterov}};
}

}  // namespace mixt::optim
