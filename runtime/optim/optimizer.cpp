// Optimizer base: parameter groups, the step loop, per-parameter state and state dicts.
#include <mixt/runtime/optim/optimizer.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <unordered_set>

#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/nn/module.h>
#include <mixt/runtime/ops.h>

namespace mixt::optim {
namespace {

constexpr const char* kLoad = "Optimizer.load_state_dict";

// The dtype updates compute in: the parameter's for float32/float64, else float32.
ScalarType working_dtype(ScalarType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

// Metadata value `key` (raises when absent).
const std::string& meta(const io::StateDict& sd, const std::string& key) {
  auto it = sd.metadata.find(key);
  MIXT_CHECK(it != sd.metadata.end(), kLoad, "the state dict has no '{}' entry", key);
  return it->second;
}

// The whole of `text` as an integer (raises naming `key` otherwise).
int64_t parse_int(const std::string& key, std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  MIXT_CHECK(ec == std::errc() && end == text.data() + text.size(), kLoad, "'{}': '{}' is not an integer", key, text);
  return v;
}

double parse_double(const std::string& key, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  MIXT_CHECK(!text.empty() && end == text.c_str() + text.size(), kLoad, "'{}': '{}' is not a number", key, text);
  return v;
}

// Checks a learning rate or weight decay.
void check_setting(const std::string& optimizer, const char* what, double v) {
  MIXT_CHECK(v >= 0.0, optimizer, "invalid {}: {} (must be >= 0)", what, v);
}

}  // namespace

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups, double default_lr, double default_weight_decay)
    : name_(std::move(name)), default_lr_(default_lr), default_weight_decay_(default_weight_decay) {
  check_setting(name_, "learning rate", default_lr);
  check_setting(name_, "weight decay", default_weight_decay);
  size_t total = 0;
  for (const ParamGroup& g : groups) total += g.params.size();
  MIXT_CHECK(total > 0, name_, "got an empty parameter list");
  for (ParamGroup& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  group.lr = group.lr.value_or(default_lr_);
  group.weight_decay = group.weight_decay.value_or(default_weight_decay_);
  check_setting(name_, "learning rate", *group.lr);
  check_setting(name_, "weight decay", *group.weight_decay);
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
  check_setting(name_, "learning rate", lr);
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

void Optimizer::load_state_dict(const io::StateDict& sd) {
  MIXT_CHECK(meta(sd, "type") == name_, kLoad, "the state dict is from a {} optimizer, this is {}", meta(sd, "type"),
             name_);
  const int64_t num_groups = parse_int("param_groups", meta(sd, "param_groups"));
  MIXT_CHECK(num_groups == static_cast<int64_t>(groups_.size()), kLoad,
             "the state dict has {} parameter groups, the {} optimizer has {}", num_groups, name_, groups_.size());
  // Parse and check everything first; `commit` applies it once nothing can fail.
  std::vector<std::function<void()>> commit;
  std::vector<const Tensor*> params;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = fmt::format("param_groups.{}.", g);
    const int64_t n = parse_int(prefix + "params", meta(sd, prefix + "params"));
    MIXT_CHECK(n == static_cast<int64_t>(groups_[g].params.size()), kLoad,
               "group {} has {} parameters in the state dict, {} in the optimizer", g, n, groups_[g].params.size());
    for (const Tensor& p : groups_[g].params) params.push_back(&p);
    const double lr = parse_double(prefix + "lr", meta(sd, prefix + "lr"));
    const double wd = parse_double(prefix + "weight_decay", meta(sd, prefix + "weight_decay"));
    commit.emplace_back([this, g, lr, wd] {
      groups_[g].lr = lr;
      groups_[g].weight_decay = wd;
    });
  }
  for (const auto& [key, ref] : hyperparameters()) {
    const std::string& text = meta(sd, "options." + key);
    if (auto* d = std::get_if<double*>(&ref)) {
      commit.emplace_back([d = *d, v = parse_double(key, text)] { *d = v; });
    } else {
      MIXT_CHECK(text == "true" || text == "false", kLoad, "'options.{}': '{}' is not a bool", key, text);
      commit.emplace_back([b = std::get<bool*>(ref), v = text == "true"] { *b = v; });
    }
  }
  // "state.<index>.<name>" -> (index, name), checking the index.
  auto split = [&](const std::string& key) {
    const size_t dot = key.find('.', 6);
    MIXT_CHECK(dot != std::string::npos, kLoad, "malformed state key '{}'", key);
    const int64_t i = parse_int(key, std::string_view(key).substr(6, dot - 6));
    MIXT_CHECK(i >= 0 && i < static_cast<int64_t>(params.size()), kLoad,
               "state key '{}' names parameter {}, but the optimizer has {}", key, i, params.size());
    return std::pair(static_cast<size_t>(i), key.substr(dot + 1));
  };
  std::vector<ParamState> state(params.size());
  for (const auto& [key, t] : sd.tensors) {
    MIXT_CHECK(key.starts_with("state."), kLoad, "unexpected tensor '{}' in an optimizer state dict", key);
    const auto [i, name] = split(key);
    const Tensor& p = *params[i];
    if (name == "step") {  // the update counter: one float element
      MIXT_CHECK(t.defined() && t.numel() == 1 && t.is_floating_point(), kLoad,
                 "'{}' must be a one-element float tensor, got {}", key, t.defined() ? t.describe() : "undefined");
      const double steps = t.item<double>();
      MIXT_CHECK(std::isfinite(steps) && steps >= 0 && steps == std::floor(steps) && steps <= 9007199254740992.0, kLoad,
                 "'{}' must count updates (an integer in [0, 2^53]), got {}", key, steps);
      state[i].tensors[name] = t.to(p.device(), kFloat64).reshape({}).clone();
      continue;
    }
    MIXT_CHECK(t.defined() && t.sizes() == p.sizes(), kLoad, "'{}' is {}, but parameter {} is {}", key, t.describe(), i,
               p.describe());
    Tensor copy = t.to(p.device(), working_dtype(p.dtype()));
    state[i].tensors[name] = copy.is_same(t) ? copy.clone() : copy;
  }
  const int64_t steps = parse_int("step_count", meta(sd, "step_count"));
  for (auto& f : commit) f();
  state_ = std::move(state);
  step_count_ = steps;
}

}  // namespace mixt::optim
