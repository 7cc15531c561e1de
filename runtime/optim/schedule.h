// Learning-rate schedules that set an optimizer's per-group learning rates.
#pragma once

#include <cstdint>
#include <vector>

#include <mixt/runtime/io/state_dict.h>
#include <mixt/runtime/io/state_load.h>
#include <mixt/runtime/optim/optimizer.h>

namespace mixt::optim {

// Linear warmup from 0 to each group's base lr over `warmup_steps`, then cosine
// decay to min_lr_ratio * base at `total_steps` (held there afterwards). The base
// lrs are the groups' lrs at construction, which sets the lr of step 0.
class WarmupCosine {
 public:
  WarmupCosine(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps, double min_lr_ratio = 0.0);
  // Advances one step and sets the optimizer's lrs for it (call after optimizer.step()).
  void step();
  // The multiplier of the base lr at `step` (a pure function).
  double factor_at(int64_t step) const;
  // The lr of `group` at `step` (a pure function).
  double lr_at(int64_t step, size_t group = 0) const;
  // The current step (0 after construction).
  int64_t current_step() const { return step_; }
  // The step counter and settings, in metadata.
  io::StateDict state_dict() const;
  // Restores the step and base lrs of state_dict() (warmup, total and min ratio must
  // match; the step is an integer >= 0, each base lr follows the optimizer's rule) and
  // sets the lrs of that step. A refused load changes nothing.
  void load_state_dict(const io::StateDict& sd);
  // Checks `sd` as load_state_dict does; nothing changes until the result is committed.
  io::StagedLoad stage_state_dict(const io::StateDict& sd);

 private:
  void apply();
  Optimizer& optimizer_;
  int64_t warmup_steps_, total_steps_;
  double min_lr_ratio_;
  std::vector<double> base_lrs_;
  int64_t step_ = 0;
};

}  // namespace mixt::optim
