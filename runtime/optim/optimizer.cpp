// Optimizer base: parameter groups, the step loop, per-parameter state and state dicts.
#include <mixt/runtime/optim/optimizer.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_set>

#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/nn/module.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::optim {
namespace {

// The dtype updates compute in: the parameter's for float32/float64, else float32.
ScalarType working_dtype(ScalarType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

// The largest step count a float64 "step" state holds exactly.
constexpr int64_t kMaxSteps = int64_t{1} << 53;

// "a, b, c" ("none" when empty).
std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// "state.<index>.<name>" -> (index, name): the index names one of `num_params`
// parameters, the name one of `names` (raises as `op` otherwise).
std::pair<size_t, std::string> parse_state_key(const std::string& key, size_t num_params,
                                               const std::vector<std::string>& names, const std::string& op) {
  MIXT_CHECK(key.starts_with("state."), op, "unexpected tensor '{}' in an optimizer state dict", key);
  const size_t dot = key.find('.', 6);
  MIXT_CHECK(dot != std::string::npos, op, "malformed state key '{}'", key);
  int64_t i = -1;
  const char* first = key.data() + 6;
  auto [end, ec] = std::from_chars(first, key.data() + dot, i);
  MIXT_CHECK(ec == std::errc() && end == key.data() + dot && end != first, op, "malformed state key '{}'", key);
  MIXT_CHECK(i >= 0 && i < static_cast<int64_t>(num_params), op,
             "state key '{}' names parameter {}, but the optimizer has {}", key, i, num_params);
  std::string name = key.substr(dot + 1);
  MIXT_CHECK(std::find(names.begin(), names.end(), name) != names.end(), op,
             "'{}': this optimizer keeps no state named '{}' (its state: {})", key, name, joined(names));
  return {static_cast<size_t>(i), std::move(name)};
}

}  // namespace

void Optimizer::check_lr(const std::string& op, double lr) {
  MIXT_CHECK(std::isfinite(lr) && lr >= 0.0, op, "invalid learning rate: {} (must be finite and >= 0)", lr);
}

void Optimizer::check_weight_decay(const std::string& op, double weight_decay) {
  MIXT_CHECK(std::isfinite(weight_decay) && weight_decay >= 0.0, op,
             "invalid weight decay: {} (must be finite and >= 0)", weight_decay);
}

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups, double default_lr, double default_weight_decay)
    : name_(std::move(name)), default_lr_(default_lr), default_weight_decay_(default_weight_decay) {
  check_lr(name_, default_lr);
  check_weight_decay(name_, default_weight_decay);
  size_t total = 0;
  for (const ParamGroup& g : groups) total += g.params.size();
  MIXT_CHECK(total > 0, name_, "got an empty parameter list");
  for (ParamGroup& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  group.lr = group.lr.value_or(default_lr_);
  group.weight_decay = group.weight_decay.value_or(default_weight_decay_);
  check_lr(name_, *group.lr);
  check_weight_decay(name_, *group.weight_decay);
  std::unordered_set<const TensorImpl*> seen;
  for (const ParamGroup& g : groups_)
    for (const Tensor& p : g.params) seen.insert(p.impl());
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    MIXT_CHECK(p.defined(), name_, "parameter {} of group {} is undefined", i, groups_.size());
    MIXT_CHECK(p.is_floating_point() && p.is_leaf(), name_,
               "can only optimize floating-point leaf tensors; parameter {} of group {} is {}{}", i, groups_.size(),
               p.describe(), p.is_leaf() ? "" : " (not a leaf)");
    MIXT_CHECK(seen.insert(p.impl()).second, name_, "parameter {} of group {} ({}) appears in more than one place", i,
               groups_.size(), p.describe());
  }
  state_.resize(state_.size() + group.params.size());
  groups_.push_back(std::move(group));
}

void Optimizer::step() { run_step(Tensor()); }

void Optimizer::step_predicated(const Tensor& found_inf) {
  MIXT_CHECK(found_inf.defined() && found_inf.dtype() == kFloat32 && found_inf.numel() == 1, name_ + ".step_predicated",
             "found_inf must be a one-element float32 tensor, got {}",
             found_inf.defined() ? found_inf.describe() : "undefined");
  run_step(found_inf);
}

namespace {

// True when a fused multi-tensor update can take this parameter and gradient.
bool fusable(const Tensor& p, const Tensor& g) {
  return p.is_contiguous() && dtypes::contains(dtypes::kStandardFloat, p.dtype()) && g.dtype() == p.dtype() &&
         g.device() == p.device() && g.sizes() == p.sizes();
}

}  // namespace

void Optimizer::run_step(const Tensor& found_inf) {
  autograd::NoGradGuard no_grad;
  // Parameters without a fused update read found_inf on the host, once.
  std::optional<bool> host_skip;
  auto skipped_on_host = [&] {
    if (!found_inf.defined()) return false;
    if (!host_skip) host_skip = found_inf.item<float>() != 0.0f;
    return *host_skip;
  };
  size_t index = 0;
  for (const ParamGroup& group : groups_) {
    // Per device: the fusable parameters, their gradients and states.
    struct Bucket {
      Device device;
      std::vector<Tensor> params, grads;
      std::vector<ParamState*> states;
    };
    std::vector<Bucket> buckets;
    std::vector<std::pair<Tensor, ParamState*>> one_by_one;
    for (const Tensor& p : group.params) {
      ParamState& st = state_[index++];
      const Tensor& grad = p.grad();
      if (!grad.defined()) continue;
      if (!fusable(p, grad)) {
        one_by_one.emplace_back(p, &st);
        continue;
      }
      auto it = std::find_if(buckets.begin(), buckets.end(), [&](const Bucket& b) { return b.device == p.device(); });
      if (it == buckets.end()) it = buckets.insert(buckets.end(), Bucket{p.device(), {}, {}, {}});
      it->params.push_back(p);
      it->grads.push_back(grad.contiguous());
      it->states.push_back(&st);
    }
    for (Bucket& b : buckets) {
      if (fused_update(group, b.states, b.params, b.grads, found_inf)) continue;
      for (size_t i = 0; i < b.params.size(); ++i) one_by_one.emplace_back(b.params[i], b.states[i]);
    }
    if (one_by_one.empty() || skipped_on_host()) continue;
    for (auto& [p, st] : one_by_one) {
      const ScalarType dt = working_dtype(p.dtype());
      Tensor work = dt == p.dtype() ? p : p.to(dt);
      const Tensor g = p.grad().to(p.device(), dt);
      update(group, *st, work, g);
      if (!work.is_same(p)) Tensor(p).copy_(work);
    }
  }
  ++step_count_;
}

void Optimizer::zero_grad(bool set_to_none) {
  for (const ParamGroup& g : groups_) nn::zero_grad_of(g.params, set_to_none);
}

double Optimizer::lr(size_t group) const {
  MIXT_CHECK(group < groups_.size(), name_, "group {} does not exist ({} groups)", group, groups_.size());
  return *groups_[group].lr;
}

void Optimizer::set_lr(double lr) {
  for (size_t g = 0; g < groups_.size(); ++g) set_lr(g, lr);
}

void Optimizer::set_lr(size_t group, double lr) {
  MIXT_CHECK(group < groups_.size(), name_, "group {} does not exist ({} groups)", group, groups_.size());
  check_lr(name_, lr);
  groups_[group].lr = lr;
}

Tensor* Optimizer::find_state(ParamState& state, const std::string& key, const Tensor& like) {
  auto it = state.tensors.find(key);
  if (it == state.tensors.end()) return nullptr;
  Tensor& t = it->second;
  if (t.dtype() != like.dtype() || t.device() != like.device()) t = t.to(like.device(), like.dtype());
  return &t;
}

Tensor& Optimizer::zeros_state(ParamState& state, const std::string& key, const Tensor& like) {
  if (Tensor* t = find_state(state, key, like)) return *t;
  return state.tensors[key] = zeros_like(like);
}

Tensor& Optimizer::working_state(ParamState& state, const std::string& key, const Tensor& param) {
  const ScalarType dt = working_dtype(param.dtype());
  auto it = state.tensors.find(key);
  if (it == state.tensors.end()) return state.tensors[key] = zeros(param.sizes(), {.dtype = dt, .device = param.device()});
  Tensor& t = it->second;
  if (t.dtype() != dt || t.device() != param.device()) t = t.to(param.device(), dt);
  return t;
}

Tensor& Optimizer::step_state(ParamState& state, const Tensor& param) {
  auto it = state.tensors.find("step");
  if (it != state.tensors.end()) {
    if (it->second.device() != param.device()) it->second = it->second.to(param.device());
    return it->second;
  }
  return state.tensors["step"] = zeros({}, {.dtype = kFloat64, .device = param.device()});
}

// ---- state dicts -----------------------------------------------------------------

io::StateDict Optimizer::state_dict() const {
  io::StateDict sd;
  auto& m = sd.metadata;
  m["type"] = name_;
  m["step_count"] = std::to_string(step_count_);
  m["param_groups"] = std::to_string(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = fmt::format("param_groups.{}.", g);
    m[prefix + "params"] = std::to_string(groups_[g].params.size());
    m[prefix + "lr"] = fmt::format("{}", *groups_[g].lr);
    m[prefix + "weight_decay"] = fmt::format("{}", *groups_[g].weight_decay);
  }
  // hyperparameters() hands out pointers for loading; here they are only read.
  for (const auto& [key, ref] : const_cast<Optimizer*>(this)->hyperparameters())
    m["options." + key] = std::visit([](auto* v) { return fmt::format("{}", *v); }, ref);
  for (size_t i = 0; i < state_.size(); ++i) {
    for (const auto& [key, t] : state_[i].tensors) sd.tensors.emplace_back(fmt::format("state.{}.{}", i, key), t);
  }
  return sd;
}

void Optimizer::read_options(const io::StateDict& sd, const OptionFields& fields, const std::string& op) {
  for (const auto& [key, ref] : fields) {
    if (double* const* d = std::get_if<double*>(&ref))
      **d = io::meta_double(sd, "options." + key, op.c_str());
    else
      *std::get<bool*>(ref) = io::meta_bool(sd, "options." + key, op.c_str());
  }
}

void Optimizer::load_state_dict(const io::StateDict& sd) { stage_state_dict(sd).commit(); }

io::StagedLoad Optimizer::stage_state_dict(const io::StateDict& sd) {
  const std::string op = name_ + ".load_state_dict";
  const char* const c_op = op.c_str();
  const std::string& type = io::meta_text(sd, "type", c_op);
  MIXT_CHECK(type == name_, op, "the state dict was saved by the {} optimizer; this optimizer is {}", type, name_);
  const int64_t num_groups = io::meta_int(sd, "param_groups", c_op);
  MIXT_CHECK(num_groups == static_cast<int64_t>(groups_.size()), op,
             "the state dict has {} parameter groups, the {} optimizer has {}", num_groups, name_, groups_.size());
  const int64_t steps = io::meta_int(sd, "step_count", c_op);
  MIXT_CHECK(steps >= 0, op, "'step_count' must be >= 0, got {}", steps);
  std::unordered_set<std::string> known = {"type", "param_groups", "step_count"};
  std::vector<std::pair<double, double>> settings;  // (lr, weight decay) per group
  std::vector<const Tensor*> params;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = fmt::format("param_groups.{}.", g);
    for (const char* k : {"params", "lr", "weight_decay"}) known.insert(prefix + k);
    const int64_t n = io::meta_int(sd, prefix + "params", c_op);
    MIXT_CHECK(n == static_cast<int64_t>(groups_[g].params.size()), op,
               "group {} has {} parameters in the state dict, {} in the optimizer", g, n, groups_[g].params.size());
    for (const Tensor& p : groups_[g].params) params.push_back(&p);
    const double lr = io::meta_double(sd, prefix + "lr", c_op), wd = io::meta_double(sd, prefix + "weight_decay", c_op);
    check_lr(op, lr);
    check_weight_decay(op, wd);
    settings.emplace_back(lr, wd);
  }
  StagedOptions options = stage_options(sd, op);
  for (const auto& [key, ref] : hyperparameters()) known.insert("options." + key);
  for (const auto& [key, value] : sd.metadata)
    MIXT_CHECK(known.count(key), op, "unexpected entry '{}' in a {} state dict", key, name_);

  io::check_unique_names(sd, c_op);
  std::vector<ParamState> state(params.size());
  for (const auto& [key, t] : sd.tensors) {
    const auto [i, name] = parse_state_key(key, params.size(), options.state_names, op);
    const Tensor& p = *params[i];
    if (name == "step") {  // the update counter: one element, an exact integer
      const int64_t n = io::tensor_count(t, kMaxSteps, c_op, key);
      state[i].tensors[name] = full({}, static_cast<double>(n), {.dtype = kFloat64, .device = p.device()});
      continue;
    }
    MIXT_CHECK(t.defined() && t.is_floating_point() && t.sizes() == p.sizes(), op,
               "'{}' is {}, but parameter {} is {} (state tensors are floating, of their parameter's shape)", key,
               t.defined() ? t.describe() : "undefined", i, p.describe());
    Tensor copy = t.to(p.device(), working_dtype(p.dtype()));
    state[i].tensors[name] = copy.is_same(t) ? copy.clone() : copy;
  }
  // A parameter has no state (never updated) or all of it.
  for (size_t i = 0; i < state.size(); ++i) {
    if (state[i].tensors.empty()) continue;
    for (const std::string& name : options.state_names)
      MIXT_CHECK(state[i].tensors.count(name), op, "the state of parameter {} has no '{}' (a {} parameter's state: {})",
                 i, name, name_, joined(options.state_names));
  }
  return io::StagedLoad([this, settings, install = std::move(options.install), state = std::move(state), steps]() mutable {
    for (size_t g = 0; g < groups_.size(); ++g) {
      groups_[g].lr = settings[g].first;
      groups_[g].weight_decay = settings[g].second;
    }
    install();
    state_ = std::move(state);
    step_count_ = steps;
  });
}

}  // namespace mixt::optim
