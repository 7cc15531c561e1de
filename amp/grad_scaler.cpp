// The dynamic grad scaler. See Note [Grad scaler].
#include <mixt/amp/grad_scaler.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include <mixt/amp/ops.h>
#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops.h>
#include <mixt/runtime/optim/optimizer.h>

namespace mixt::amp {
namespace {

constexpr const char* kName = "GradScaler";

const GradScalerOptions& checked(const GradScalerOptions& o) {
  if (!o.enabled) return o;
  MIXT_CHECK(std::isfinite(o.initial_scale) && o.initial_scale > 0, kName, "initial_scale must be positive and finite, got {}",
             o.initial_scale);
  MIXT_CHECK(o.growth_factor > 1.0, kName, "growth_factor must be > 1, got {}", o.growth_factor);
  MIXT_CHECK(o.backoff_factor > 0.0 && o.backoff_factor < 1.0, kName, "backoff_factor must be in (0, 1), got {}",
             o.backoff_factor);
  MIXT_CHECK(o.growth_interval > 0 && o.growth_interval < (int64_t{1} << 31), kName,
             "growth_interval must be in [1, 2^31), got {}", o.growth_interval);
  MIXT_CHECK(o.hysteresis >= 1 && o.hysteresis < (int64_t{1} << 31), kName, "hysteresis must be >= 1, got {}",
             o.hysteresis);
  MIXT_CHECK(o.min_scale >= 0.0 && o.min_scale <= o.max_scale, kName,
             "need 0 <= min_scale <= max_scale, got min_scale {} and max_scale {}", o.min_scale, o.max_scale);
  MIXT_CHECK(o.initial_scale >= o.min_scale && o.initial_scale <= o.max_scale, kName,
             "initial_scale {} is outside [min_scale {}, max_scale {}]", o.initial_scale, o.min_scale, o.max_scale);
  MIXT_CHECK(o.floor_action != FloorAction::Report || o.on_floor, kName, "FloorAction::Report needs an on_floor callback");
  return o;
}

// A count read from a state dict: finite, integral and in [0, 2^62), else an error naming `key`
// (a corrupt file must raise, not reach an out-of-range conversion).
int64_t as_count(double v, const char* op, const char* key) {
  MIXT_CHECK(std::isfinite(v) && v >= 0 && v < 4.6e18 && v == std::floor(v), op,
             "'{}' must be a non-negative integer, got {}", key, v);
  return static_cast<int64_t>(v);
}

Tensor scalar_tensor(double v, ScalarType dt, const Device& d) { return full({}, v, {.dtype = dt, .device = d}); }

// Every gradient of the optimizer's parameters, by device.
std::vector<std::pair<Device, std::vector<Tensor>>> grads_by_device(const optim::Optimizer& opt) {
  std::vector<std::pair<Device, std::vector<Tensor>>> out;
  for (const optim::ParamGroup& g : opt.param_groups())
    for (const Tensor& p : g.params) {
      const Tensor& grad = p.grad();
      if (!grad.defined()) continue;
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == grad.device(); });
      if (it == out.end()) it = out.insert(out.end(), {grad.device(), {}});
      it->second.push_back(grad);
    }
  return out;
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : options_(checked(options)) {}

void GradScaler::lazy_init(const Device& device) {
  if (scale_.defined()) {
    if (scale_.device() == device) return;
    MIXT_CHECK(optimizers_.empty(), kName, "scale() on {} while an iteration on {} is in flight", device.str(),
               scale_.device().str());
    for (Tensor* t : {&scale_, &growth_tracker_, &hysteresis_tracker_, &skipped_, &floor_hits_, &last_found_inf_})
      *t = t->to(device);
    return;
  }
  scale_ = scalar_tensor(options_.initial_scale, kFloat32, device);
  growth_tracker_ = scalar_tensor(0, kInt32, device);
  hysteresis_tracker_ = scalar_tensor(static_cast<double>(options_.hysteresis), kInt32, device);
  skipped_ = scalar_tensor(0, kInt64, device);
  floor_hits_ = scalar_tensor(0, kInt64, device);
  last_found_inf_ = scalar_tensor(0, kFloat32, device);
}

Tensor GradScaler::scale(const Tensor& loss) {
  if (!options_.enabled) return loss;
  MIXT_CHECK(loss.defined() && loss.is_floating_point(), "GradScaler.scale", "expects a floating loss, got {}",
             loss.defined() ? loss.describe() : "undefined");
  lazy_init(loss.device());
  return mul(loss, scale_);
}

GradScaler::PerOptimizer& GradScaler::entry(const optim::Optimizer& optimizer) {
  for (PerOptimizer& e : optimizers_)
    if (e.optimizer == &optimizer) return e;
  optimizers_.push_back(PerOptimizer{&optimizer, OptimizerStage::Ready, Tensor(), false});
  return optimizers_.back();
}

OptimizerStage GradScaler::stage(const optim::Optimizer& optimizer) const {
  for (const PerOptimizer& e : optimizers_)
    if (e.optimizer == &optimizer) return e.stage;
  return OptimizerStage::Ready;
}

void GradScaler::unscale(optim::Optimizer& optimizer) {
  if (!options_.enabled) return;
  PerOptimizer& e = entry(optimizer);
  MIXT_CHECK(e.stage != OptimizerStage::Unscaled, "GradScaler.unscale",
             "unscale() has already been called on this optimizer since the last update()");
  MIXT_CHECK(e.stage != OptimizerStage::Stepped, "GradScaler.unscale", "unscale() is being called after step()");
  MIXT_CHECK(scale_.defined(), "GradScaler.unscale", "no scale yet: call scale(loss) before unscale()");
  autograd::NoGradGuard no_grad;
  // 1/scale computed in float64 and rounded to float32 on the scale's device (no host read).
  const Tensor inv_scale = reciprocal(scale_.to(kFloat64)).to(kFloat32);
  Tensor found = zeros({}, {.dtype = kFloat32, .device = scale_.device()});
  for (auto& [device, grads] : grads_by_device(optimizer)) {
    Tensor found_here = device == scale_.device() ? found : zeros({}, {.dtype = kFloat32, .device = device});
    unscale_check_(grads, found_here, inv_scale.to(device));
    if (!found_here.is_same(found)) found = add(found, found_here.to(scale_.device()));
  }
  e.found_inf = found;
  e.reduced = false;
  e.stage = OptimizerStage::Unscaled;
}

Tensor GradScaler::iteration_flag(PerOptimizer& e) {
  if (!e.reduced) {
    if (reducer_) reducer_(e.found_inf);
    e.reduced = true;
  }
  return e.found_inf;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  PerOptimizer& e = entry(optimizer);
  MIXT_CHECK(e.stage != OptimizerStage::Stepped, "GradScaler.step",
             "step() has already been called since the last update()");
  if (e.stage == OptimizerStage::Ready) unscale(optimizer);  // fills e (the entry exists already)
  const bool found_inf = iteration_flag(e).item<float>() != 0.0f;  // the one host read
  if (!found_inf) optimizer.step();
  e.stage = OptimizerStage::Stepped;
  host_knows_overflow_ = host_knows_overflow_ || found_inf;
  return !found_inf;
}

void GradScaler::step_sync_free(optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return;
  }
  PerOptimizer& e = entry(optimizer);
  MIXT_CHECK(e.stage != OptimizerStage::Stepped, "GradScaler.step_sync_free",
             "step() has already been called since the last update()");
  if (e.stage == OptimizerStage::Ready) unscale(optimizer);
  optimizer.step_predicated(iteration_flag(e));
  e.stage = OptimizerStage::Stepped;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  Tensor total;
  for (PerOptimizer& e : optimizers_) {
    if (!e.found_inf.defined()) continue;
    const Tensor flag = iteration_flag(e).to(scale_.device());
    total = total.defined() ? add(total, flag) : flag.clone();
  }
  MIXT_CHECK(total.defined(), "GradScaler.update", "no inf checks were recorded prior to update(): call step() or unscale() first");
  const ScaleRule rule{.growth_factor = options_.growth_factor,
                       .backoff_factor = options_.backoff_factor,
                       .min_scale = options_.min_scale,
                       .max_scale = options_.max_scale,
                       .growth_interval = options_.growth_interval,
                       .hysteresis = options_.hysteresis,
                       .consecutive_hysteresis = options_.consecutive_hysteresis};
  update_scale_(scale_, growth_tracker_, hysteresis_tracker_, total, skipped_, floor_hits_, rule);
  last_found_inf_.copy_(total);
  optimizers_.clear();
  // When step() already read an overflow on the host, the floor check costs nothing more.
  if (host_knows_overflow_) check_floor();
  host_knows_overflow_ = false;
}

void GradScaler::update(double new_scale) {
  if (!options_.enabled) return;
  MIXT_CHECK(std::isfinite(new_scale) && new_scale > 0, "GradScaler.update", "new scale must be positive and finite, got {}",
             new_scale);
  lazy_init(scale_.defined() ? scale_.device() : Device::cpu());
  scale_.fill_(new_scale);
  growth_tracker_.fill_(0);
  hysteresis_tracker_.fill_(options_.hysteresis);
  optimizers_.clear();
  host_knows_overflow_ = false;
}

void GradScaler::check_floor() const {
  if (!floor_hits_.defined()) return;
  const int64_t hits = floor_hits_.item<int64_t>();
  if (hits <= floor_hits_seen_) return;
  const int64_t fresh = hits - floor_hits_seen_;
  floor_hits_seen_ = hits;
  switch (options_.floor_action) {
    case FloorAction::Raise:
      MIXT_FAIL(kName,
                "gradients overflowed with the scale already at min_scale {} ({} time(s)): the loss or the model "
                "produces Inf/NaN that no loss scale can avoid (use FloorAction::KeepSkip to keep skipping)",
                options_.min_scale, hits);
    case FloorAction::Report:
      for (int64_t i = 0; i < fresh; ++i) options_.on_floor(options_.min_scale);
      break;
    case FloorAction::KeepSkip: break;
  }
}

double GradScaler::current_scale() const {
  if (!options_.enabled) return 1.0;
  if (!scale_.defined()) return options_.initial_scale;
  check_floor();
  return scale_.item<double>();
}

bool GradScaler::last_step_skipped() const {
  if (!options_.enabled) return false;
  for (const PerOptimizer& e : optimizers_)
    if (e.stage == OptimizerStage::Stepped && e.found_inf.defined()) return e.found_inf.item<float>() != 0.0f;
  return last_found_inf_.defined() && last_found_inf_.item<float>() != 0.0f;
}

int64_t GradScaler::skipped_steps() const {
  if (!options_.enabled || !skipped_.defined()) return 0;
  check_floor();
  return skipped_.item<int64_t>();
}

ScalerState GradScaler::state() const {
  ScalerState s;
  if (!options_.enabled) {
    s.scale = 1.0;  // what current_scale() reports
    return s;
  }
  if (!scale_.defined()) {
    s.scale = options_.initial_scale;
    s.hysteresis_tracker = options_.hysteresis;
    return s;
  }
  s.scale = scale_.item<double>();
  s.growth_tracker = growth_tracker_.item<int64_t>();
  s.hysteresis_tracker = hysteresis_tracker_.item<int64_t>();
  s.skipped_steps = skipped_.item<int64_t>();
  s.floor_hits = floor_hits_.item<int64_t>();
  return s;
}

void GradScaler::load_state(const ScalerState& s) {
  if (!options_.enabled) return;
  MIXT_CHECK(std::isfinite(s.scale) && s.scale > 0, "GradScaler.load_state", "scale must be positive and finite, got {}",
             s.scale);
  MIXT_CHECK(s.growth_tracker >= 0 && s.hysteresis_tracker >= 0 && s.skipped_steps >= 0 && s.floor_hits >= 0,
             "GradScaler.load_state", "counters must be >= 0 (growth {}, hysteresis {}, skipped {}, floor hits {})",
             s.growth_tracker, s.hysteresis_tracker, s.skipped_steps, s.floor_hits);
  MIXT_CHECK(optimizers_.empty(), "GradScaler.load_state", "an iteration is in flight: call update() first");
  lazy_init(scale_.defined() ? scale_.device() : Device::cpu());
  scale_.fill_(s.scale);
  growth_tracker_.fill_(s.growth_tracker);
  hysteresis_tracker_.fill_(s.hysteresis_tracker);
  skipped_.fill_(s.skipped_steps);
  floor_hits_.fill_(s.floor_hits);
  floor_hits_seen_ = s.floor_hits;
}

io::StateDict GradScaler::state_dict() const {
  io::StateDict sd;
  sd.metadata["enabled"] = options_.enabled ? "true" : "false";
  if (!options_.enabled) return sd;
  const ScalerState s = state();
  sd.tensors.emplace_back("scale", full({}, s.scale, {.dtype = kFloat64}));
  for (auto [name, v] : {std::pair{"growth_tracker", s.growth_tracker}, {"hysteresis_tracker", s.hysteresis_tracker},
                         {"skipped_steps", s.skipped_steps}, {"floor_hits", s.floor_hits}})
    sd.tensors.emplace_back(name, full({}, v, {.dtype = kInt64}));
  sd.metadata["growth_factor"] = fmt::format("{}", options_.growth_factor);
  sd.metadata["backoff_factor"] = fmt::format("{}", options_.backoff_factor);
  sd.metadata["growth_interval"] = std::to_string(options_.growth_interval);
  sd.metadata["hysteresis"] = std::to_string(options_.hysteresis);
  sd.metadata["min_scale"] = fmt::format("{}", options_.min_scale);
  sd.metadata["max_scale"] = fmt::format("{}", options_.max_scale);
  return sd;
}

void GradScaler::load_state_dict(const io::StateDict& sd) {
  constexpr const char* kLoad = "GradScaler.load_state_dict";
  if (!options_.enabled) return;
  auto it = sd.metadata.find("enabled");
  MIXT_CHECK(it != sd.metadata.end(), kLoad, "not a grad scaler state dict (no 'enabled' entry)");
  MIXT_CHECK(it->second == "true", kLoad, "the state dict is from a disabled scaler: it holds no scale to load");
  auto number = [&](const char* key) {
    const Tensor* t = sd.find(key);
    MIXT_CHECK(t != nullptr && t->numel() == 1, kLoad, "missing or malformed '{}'", key);
    return t->item<double>();
  };
  auto option = [&](const char* key) {
    auto m = sd.metadata.find(key);
    MIXT_CHECK(m != sd.metadata.end(), kLoad, "missing option '{}'", key);
    char* end = nullptr;
    const double v = std::strtod(m->second.c_str(), &end);
    MIXT_CHECK(!m->second.empty() && *end == '\0', kLoad, "option '{}': '{}' is not a number", key, m->second);
    return v;
  };
  auto count = [&](const char* key) { return as_count(number(key), kLoad, key); };
  ScalerState s{.scale = number("scale"),
                .growth_tracker = count("growth_tracker"),
                .hysteresis_tracker = count("hysteresis_tracker"),
                .skipped_steps = count("skipped_steps"),
                .floor_hits = count("floor_hits")};
  GradScalerOptions o = options_;  // the factors travel with the state, as in PyTorch
  o.growth_factor = option("growth_factor");
  o.backoff_factor = option("backoff_factor");
  o.growth_interval = as_count(option("growth_interval"), kLoad, "growth_interval");
  o.hysteresis = as_count(option("hysteresis"), kLoad, "hysteresis");
  o.min_scale = option("min_scale");
  o.max_scale = option("max_scale");
  o.initial_scale = std::clamp(s.scale, o.min_scale, o.max_scale);
  checked(o);
  MIXT_CHECK(std::isfinite(s.scale) && s.scale > 0, kLoad, "scale must be positive and finite, got {}", s.scale);
  MIXT_CHECK(optimizers_.empty(), kLoad, "an iteration is in flight: call update() first");
  options_ = o;  // nothing below can fail
  load_state(s);
}

void backward(GradScaler& scaler, const Tensor& loss) { scaler.scale(loss).backward(); }

bool step(GradScaler& scaler, optim::Optimizer& optimizer) {
  const bool stepped = scaler.step(optimizer);
  scaler.update();
  return stepped;
}

}  // namespace mixt::amp
