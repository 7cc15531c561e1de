// The dynamic grad scaler: loss scaling for float16 training. PyTorch's
// GradScaler semantics (scale, unscale, step, update, state), plus hysteresis,
// a floor and a ceiling with a chosen action at the floor, a device counter of
// skipped steps, and a sync-free step. See docs/amp.md and Note [Grad scaler].
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <mixt/runtime/io/state_dict.h>
#include <mixt/runtime/io/state_load.h>
#include <mixt/runtime/tensor.h>

namespace mixt::optim {
class Optimizer;
}

namespace mixt::amp {

// What the scaler does when an overflow would take the scale below min_scale.
enum class FloorAction : uint8_t {
  Raise,     // throw mixt::Error at the host read that sees it (the default: never collapse silently)
  KeepSkip,  // stay at min_scale and keep skipping overflowing steps
  Report,    // stay at min_scale, keep skipping, and call on_floor once per hit
};

struct GradScalerOptions {
  double initial_scale = 65536.0;
  double growth_factor = 2.0;   // > 1
  double backoff_factor = 0.5;  // in (0, 1)
  int64_t growth_interval = 2000;  // finite steps between growths (> 0)
  bool enabled = true;             // false: every call is a pass-through (bfloat16 training)
  // Beyond PyTorch:
  int64_t hysteresis = 1;         // overflowing steps tolerated (skipped, scale kept) before a backoff; 1 = PyTorch
  bool consecutive_hysteresis = false;  // refill the hysteresis budget after every finite step (else after a growth)
  double min_scale = 1.0;         // floor of the scale (> 0)
  double max_scale = std::numeric_limits<double>::infinity();  // ceiling of the scale (none, as PyTorch)
  FloorAction floor_action = FloorAction::Raise;
  std::function<void(double scale)> on_floor = nullptr;  // FloorAction::Report's callback
};

// The scaler's state as plain numbers (state() / load_state(), checkpoints).
struct ScalerState {
  double scale = 65536.0;
  int64_t growth_tracker = 0;      // finite steps since the last growth or backoff
  int64_t hysteresis_tracker = 1;  // overflows left before the next backoff
  int64_t skipped_steps = 0;       // steps skipped for non-finite gradients, all time
  int64_t floor_hits = 0;          // overflows that found the scale at min_scale
};

// Where one optimizer is in the current iteration (Note [Grad scaler]).
enum class OptimizerStage : uint8_t { Ready, Unscaled, Stepped };

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // loss * scale (the scale moved to the loss's device and dtype); the loss itself when disabled.
  Tensor scale(const Tensor& loss);
  // Multiplies the gradients of `optimizer`'s parameters by 1/scale in one fused
  // pass per (device, dtype) and records whether any is non-finite. Once per
  // optimizer per iteration: a second call, or a call after step(), raises.
  void unscale(optim::Optimizer& optimizer);
  // Unscales if not yet done, reads the non-finite flag (one host read) and steps
  // the optimizer if every gradient is finite. Returns false when the step was skipped.
  bool step(optim::Optimizer& optimizer);
  // The sync-free step: unscales if not yet done and steps the optimizer with its
  // update predicated on the device flag: nothing is read on the host. Optimizers
  // without a fused step (custom ones) read the flag instead. The decision is
  // readable afterwards with last_step_skipped() (one host read).
  void step_sync_free(optim::Optimizer& optimizer);
  // Updates the scale from this iteration's flags (growth, hysteresis, backoff,
  // floor, ceiling) on the device, and makes every optimizer ready again.
  void update();
  // Sets the scale (e.g. after a manual intervention); resets the trackers.
  void update(double new_scale);

  // The current scale (a host read; 1.0 when disabled).
  double current_scale() const;
  // The scale tensor (float32, one element) on its device; undefined until the first scale() or load.
  const Tensor& scale_tensor() const { return scale_; }
  // The non-finite flag of the last update()d iteration (or of the iteration in
  // flight once step() ran): a host read.
  bool last_step_skipped() const;
  // Steps skipped so far (a host read of the device counter): what a scheduler reads.
  int64_t skipped_steps() const;
  OptimizerStage stage(const optim::Optimizer& optimizer) const;
  bool is_enabled() const { return options_.enabled; }
  const GradScalerOptions& options() const { return options_; }

  // The state as numbers (host reads).
  ScalerState state() const;
  // Restores a state, refusing (and changing nothing) when the scale is not positive
  // and finite in float32 or lies outside [min_scale, max_scale], or a counter does not
  // fit (growth_tracker in [0, growth_interval), hysteresis_tracker in [0, hysteresis]).
  void load_state(const ScalerState& s);
  // The state as a state dict (tensors "scale", "growth_tracker", ... and the options
  // in metadata), for checkpoints.
  io::StateDict state_dict() const;
  // Restores a state_dict(): its options by the constructor's rules, its state by
  // load_state's; unknown entries raise. A refused load changes nothing.
  void load_state_dict(const io::StateDict& sd);
  // Checks `sd` as load_state_dict does; nothing changes until the result is committed.
  io::StagedLoad stage_state_dict(const io::StateDict& sd);

  // Where found_inf flags are reduced across processes before any decision (the
  // distributed layer installs an all-reduce(max) here). Called once per
  // iteration with this iteration's flag, on its device, in place.
  using FlagReducer = std::function<void(Tensor& found_inf)>;
  void set_flag_reducer(FlagReducer reducer) { reducer_ = std::move(reducer); }

 private:
  struct PerOptimizer {
    const optim::Optimizer* optimizer = nullptr;
    OptimizerStage stage = OptimizerStage::Ready;
    Tensor found_inf;  // float32, one element, on the scale's device
    bool reduced = false;  // found_inf went through the flag reducer
  };
  PerOptimizer& entry(const optim::Optimizer& optimizer);
  void lazy_init(const Device& device);
  // This iteration's combined, reduced flag (float32 on the scale's device).
  Tensor iteration_flag(PerOptimizer& e);
  // Acts on floor hits not yet seen (a host read of the counter).
  void check_floor() const;
  // Writes a checked state into the scaler's tensors.
  void apply_state(const ScalerState& s);

  GradScalerOptions options_;
  Tensor scale_;               // float32 [1]
  Tensor growth_tracker_;      // int32 [1]
  Tensor hysteresis_tracker_;  // int32 [1]
  Tensor skipped_;             // int64 [1]
  Tensor floor_hits_;          // int64 [1]
  Tensor last_found_inf_;      // float32 [1]: the last decided iteration's flag
  std::vector<PerOptimizer> optimizers_;
  FlagReducer reducer_;
  mutable int64_t floor_hits_seen_ = 0;
  bool host_knows_overflow_ = false;  // step() read an overflow this iteration
};

// The seed's helpers: scaler.scale(loss).backward(), and step + update.
void backward(GradScaler& scaler, const Tensor& loss);
bool step(GradScaler& scaler, optim::Optimizer& optimizer);

}  // namespace mixt::amp
