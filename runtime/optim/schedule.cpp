// WarmupCosine learning-rate schedule.
#include <mixt/runtime/optim/schedule.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include <mixt/runtime/check.h>

namespace mixt::optim {

WarmupCosine::WarmupCosine(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps, double min_lr_ratio)
    : optimizer_(optimizer), warmup_steps_(warmup_steps), total_steps_(total_steps), min_lr_ratio_(min_lr_ratio) {
  MIXT_CHECK(warmup_steps >= 0 && total_steps > 0 && warmup_steps <= total_steps, "WarmupCosine",
             "need 0 <= warmup_steps <= total_steps and total_steps > 0, got warmup_steps={}, total_steps={}",
             warmup_steps, total_steps);
  MIXT_CHECK(min_lr_ratio >= 0.0 && min_lr_ratio <= 1.0, "WarmupCosine", "min_lr_ratio must be in [0, 1], got {}",
             min_lr_ratio);
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) base_lrs_.push_back(optimizer.lr(g));
  apply();
}

double WarmupCosine::factor_at(int64_t step) const {
  MIXT_CHECK(step >= 0, "WarmupCosine", "negative step {}", step);
  if (step < warmup_steps_) return static_cast<double>(step) / static_cast<double>(warmup_steps_);
  const int64_t decay_steps = total_steps_ - warmup_steps_;
  const double progress =
      decay_steps == 0 ? 1.0
                       : std::min(1.0, static_cast<double>(step - warmup_steps_) / static_cast<double>(decay_steps));
  return min_lr_ratio_ + (1.0 - min_lr_ratio_) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

double WarmupCosine::lr_at(int64_t step, size_t group) const {
  MIXT_CHECK(group < base_lrs_.size(), "WarmupCosine", "group {} does not exist ({} groups)", group, base_lrs_.size());
  return base_lrs_[group] * factor_at(step);
}

void WarmupCosine::step() {
  ++step_;
  apply();
}

void WarmupCosine::apply() {
  for (size_t g = 0; g < base_lrs_.size(); ++g) optimizer_.set_lr(g, lr_at(step_, g));
}

io::StateDict WarmupCosine::state_dict() const {
  io::StateDict sd;
  sd.metadata["step"] = std::to_string(step_);
  sd.metadata["warmup_steps"] = std::to_string(warmup_steps_);
  sd.metadata["total_steps"] = std::to_string(total_steps_);
  sd.metadata["min_lr_ratio"] = fmt::format("{}", min_lr_ratio_);
  for (size_t g = 0; g < base_lrs_.size(); ++g)
    sd.metadata[fmt::format("base_lr.{}", g)] = fmt::format("{}", base_lrs_[g]);
  return sd;
}

void WarmupCosine::load_state_dict(const io::StateDict& sd) { stage_state_dict(sd).commit(); }

io::StagedLoad WarmupCosine::stage_state_dict(const io::StateDict& sd) {
  constexpr const char* kOp = "WarmupCosine.load_state_dict";
  const io::StateDict mine = state_dict();
  for (const char* key : {"warmup_steps", "total_steps", "min_lr_ratio"}) {
    const std::string& saved = io::meta_text(sd, key, kOp);
    MIXT_CHECK(saved == mine.metadata.at(key), kOp, "setting '{}' is {} in the state dict, {} here", key, saved,
               mine.metadata.at(key));
  }
  for (const auto& [key, value] : sd.metadata)
    MIXT_CHECK(mine.metadata.count(key), kOp, "unexpected entry '{}' (the schedule has {} parameter group(s))", key,
               base_lrs_.size());
  MIXT_CHECK(sd.tensors.empty(), kOp, "unexpected tensor '{}' (a schedule's state is metadata)", sd.tensors.front().first);
  std::vector<double> base(base_lrs_.size());
  for (size_t g = 0; g < base.size(); ++g) {
    base[g] = io::meta_double(sd, fmt::format("base_lr.{}", g), kOp);
    Optimizer::check_lr(kOp, base[g]);
  }
  const int64_t step = io::meta_int(sd, "step", kOp);
  MIXT_CHECK(step >= 0, kOp, "'step' must be >= 0, got {}", step);
  return io::StagedLoad([this, step, base = std::move(base)] {
    step_ = step;
    base_lrs_ = base;
    apply();
  });
}

}  // namespace mixt::optim
