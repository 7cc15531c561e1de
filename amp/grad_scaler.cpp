// The dynamic grad scaler. See Note [Grad scaler].
#include <mixt/amp/grad_scaler.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/amp.h>
#include <mixt/runtime/ops/ops.h>
#include <mixt/runtime/optim/optimizer.h>

namespace mixt::amp {
namespace {

constexpr const char* kName = "GradScaler";

// `v` as float32, the way the scale tensor holds it (beyond float32's range: Inf).
float as_float32(double v) {
  return std::fabs(v) > std::numeric_limits<float>::max() ? std::copysign(std::numeric_limits<float>::infinity(), v)
                                                           : static_cast<float>(v);
}

// The rule of every scale the scaler takes (initial, loaded, set by update(s)): positive
// and finite once rounded to float32 (1e300 would be Inf, 1e-50 zero), and within
// [min_scale, max_scale] as float32 values (the floor and ceiling the update kernel applies).
void check_scale(const char* op, const char* what, double scale, const GradScalerOptions& o) {
  const float f = as_float32(scale);
  MIXT_CHECK(std::isfinite(f) && f > 0.0f, op, "{} must be positive and finite in float32, got {}", what, scale);
  MIXT_CHECK(f >= as_float32(o.min_scale) && f <= as_float32(o.max_scale), op,
             "{} {} is outside [min_scale {}, max_scale {}]", what, scale, o.min_scale, o.max_scale);
}

// The rules of the options besides the initial scale (constructor and loads).
void check_rule(const char* op, const GradScalerOptions& o) {
  MIXT_CHECK(o.growth_factor > 1.0 && std::isfinite(o.growth_factor), op,
             "growth_factor must be > 1 and finite, got {}", o.growth_factor);
  MIXT_CHECK(o.backoff_factor > 0.0 && o.backoff_factor < 1.0, op, "backoff_factor must be in (0, 1), got {}",
             o.backoff_factor);
  MIXT_CHECK(o.growth_interval > 0 && o.growth_interval < (int64_t{1} << 31), op,
             "growth_interval must be in [1, 2^31), got {}", o.growth_interval);
  MIXT_CHECK(o.hysteresis >= 1 && o.hysteresis < (int64_t{1} << 31), op, "hysteresis must be in [1, 2^31), got {}",
             o.hysteresis);
  MIXT_CHECK(o.min_scale >= 0.0 && o.min_scale <= o.max_scale, op,
             "need 0 <= min_scale <= max_scale, got min_scale {} and max_scale {}", o.min_scale, o.max_scale);
  MIXT_CHECK(o.floor_action != FloorAction::Report || o.on_floor, op, "FloorAction::Report needs an on_floor callback");
}

// The constructor's rules.
const GradScalerOptions& checked(const GradScalerOptions& o) {
  if (!o.enabled) return o;
  check_rule(kName, o);
  check_scale(kName, "initial_scale", o.initial_scale, o);
  return o;
}

// The rules of a state under options `o` (load_state and load_state_dict): the scale's,
// and counters that fit the scaler's: the growth tracker below growth_interval, the
// hysteresis tracker within [0, hysteresis] (both held in int32), the others >= 0.
void check_state(const char* op, const ScalerState& s, const GradScalerOptions& o) {
  check_scale(op, "scale", s.scale, o);
  MIXT_CHECK(s.growth_tracker >= 0 && s.growth_tracker < o.growth_interval, op,
             "growth_tracker {} must be in [0, growth_interval {})", s.growth_tracker, o.growth_interval);
  MIXT_CHECK(s.hysteresis_tracker >= 0 && s.hysteresis_tracker <= o.hysteresis, op,
             "hysteresis_tracker {} must be in [0, hysteresis {}]", s.hysteresis_tracker, o.hysteresis);
  MIXT_CHECK(s.skipped_steps >= 0 && s.floor_hits >= 0, op, "counters must be >= 0 (skipped {}, floor hits {})",
             s.skipped_steps, s.floor_hits);
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
  check_scale("GradScaler.update", "the new scale", new_scale, options_);
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
  constexpr const char* kOp = "GradScaler.load_state";
  if (!options_.enabled) return;
  check_state(kOp, s, options_);
  MIXT_CHECK(optimizers_.empty(), kOp, "an iteration is in flight: call update() first");
  apply_state(s);
}

void GradScaler::apply_state(const ScalerState& s) {
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

void GradScaler::load_state_dict(const io::StateDict& sd) { stage_state_dict(sd).commit(); }

io::StagedLoad GradScaler::stage_state_dict(const io::StateDict& sd) {
  constexpr const char* kLoad = "GradScaler.load_state_dict";
  if (!options_.enabled) return {};
  MIXT_CHECK(sd.metadata.count("enabled"), kLoad, "not a grad scaler state dict (no 'enabled' entry)");
  MIXT_CHECK(io::meta_bool(sd, "enabled", kLoad), kLoad,
             "the state dict is from a disabled scaler: it holds no scale to load");
  const io::StateDict mine = state_dict();
  for (const auto& [key, value] : sd.metadata)
    MIXT_CHECK(mine.metadata.count(key), kLoad, "unexpected entry '{}' in a grad scaler state dict", key);
  io::check_unique_names(sd, kLoad);
  for (const auto& [key, t] : sd.tensors)
    MIXT_CHECK(mine.find(key), kLoad, "unexpected tensor '{}' in a grad scaler state dict", key);
  auto tensor = [&](const char* key) -> const Tensor& {
    const Tensor* t = sd.find(key);
    MIXT_CHECK(t != nullptr, kLoad, "the state dict has no '{}'", key);
    return *t;
  };
  const Tensor& scale = tensor("scale");
  MIXT_CHECK(scale.defined() && scale.numel() == 1 && scale.is_floating_point(), kLoad,
             "'scale' must be a one-element floating tensor, got {}", scale.defined() ? scale.describe() : "undefined");
  constexpr int64_t kAny = std::numeric_limits<int64_t>::max();
  auto count = [&](const char* key) { return io::tensor_count(tensor(key), kAny, kLoad, key); };
  const ScalerState s{.scale = scale.item<double>(),
                      .growth_tracker = count("growth_tracker"),
                      .hysteresis_tracker = count("hysteresis_tracker"),
                      .skipped_steps = count("skipped_steps"),
                      .floor_hits = count("floor_hits")};
  GradScalerOptions o = options_;  // the factors travel with the state, as in PyTorch
  o.growth_factor = io::meta_double(sd, "growth_factor", kLoad);
  o.backoff_factor = io::meta_double(sd, "backoff_factor", kLoad);
  o.growth_interval = io::meta_int(sd, "growth_interval", kLoad);
  o.hysteresis = io::meta_int(sd, "hysteresis", kLoad);
  o.min_scale = io::meta_double(sd, "min_scale", kLoad);
  o.max_scale = io::meta_double(sd, "max_scale", kLoad);
  check_rule(kLoad, o);
  check_state(kLoad, s, o);
  o.initial_scale = s.scale;
  MIXT_CHECK(optimizers_.empty(), kLoad, "an iteration is in flight: call update() first");
  return io::StagedLoad([this, o, s] {
    options_ = o;
    apply_state(s);
  });
}

void backward(GradScaler& scaler, const Tensor& loss) { scaler.scale(loss).backward(); }

bool step(GradScaler& scaler, optim::Optimizer& optimizer) {
  const bool stepped = scaler.step(optimizer);
  scaler.update();
  return stepped;
}

}  // namespace mixt::amp
