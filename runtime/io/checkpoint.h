// Checkpoints: the state of a training run (model, optimizer, schedule, the random
// generators, and any other parts) in one safetensors file, written atomically. Each
// part's entries are stored under its name ("model.layers.0.weight",
// "optim.state.3.exp_avg", "rng.default.offset").
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <mixt/runtime/io/state_dict.h>
#include <mixt/runtime/io/state_load.h>

namespace mixt::nn {
class Module;
}
namespace mixt::optim {
class Optimizer;
class WarmupCosine;
}

namespace mixt::io {

// Named parts to save together ("model", "optim", "schedule", "scaler", ...).
using CheckpointParts = std::vector<std::pair<std::string, StateDict>>;

// Writes the parts to `path` atomically (a crash mid-save leaves the old file intact).
void save_checkpoint(const std::string& path, const CheckpointParts& parts);
// Reads `path` and splits it into the parts it holds.
CheckpointParts load_checkpoint_parts(const std::string& path);
// The part called `name` of a loaded checkpoint; throws mixt::Error when absent.
const StateDict& checkpoint_part(const CheckpointParts& parts, const std::string& name);
// The parts whose names are not in `taken` (what a loader hands back to its caller).
CheckpointParts other_parts(const CheckpointParts& parts, std::initializer_list<std::string_view> taken);

// The random generators' state (the "rng" part): the default generator's seed and
// offset under "default.". It is the only one: every device's random ops draw from it
// (CUDA's random kernels draw the same Philox stream; there is no per-device generator).
// See Note [Generator state].
StateDict rng_state();
// Checks an rng_state() and prepares its restoration; nothing changes until it is committed.
StagedLoad stage_rng_state(const StateDict& sd);

// What a load restores besides the model, the optimizer and (when given) the schedule.
struct LoadOptions {
  // The random generators' state saved with the checkpoint (the default, for resuming:
  // the resumed run draws what the interrupted one would have). false leaves this
  // process's generator as it is, e.g. to load a model in the middle of a run without
  // changing its later random draws; the rng part is still checked.
  bool restore_rng = true;
};

// Saves a model, its optimizer and the random generators (rng_state()), and optionally
// a schedule and extra parts.
void save_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer& optimizer,
                     const optim::WarmupCosine* schedule = nullptr, const CheckpointParts& extra = {});
// Restores what save_checkpoint wrote into existing objects; returns the extra parts.
// Every part is checked against its object before any is restored: a refused load
// (a part missing or not fitting) changes nothing. See Note [State loads].
// `options.restore_rng = false` keeps the current random generator:
//   io::load_checkpoint(path, model, optimizer, nullptr, {.restore_rng = false});
CheckpointParts load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& optimizer,
                                optim::WarmupCosine* schedule = nullptr, const LoadOptions& options = {});
// Checks the "model", "optim", (when `schedule` is given) "schedule" and "rng" parts
// against the objects and prepares their restoration (the rng part's only when
// `options.restore_rng`); nothing changes until it is committed.
StagedLoad stage_checkpoint(const CheckpointParts& parts, nn::Module& model, optim::Optimizer& optimizer,
                            optim::WarmupCosine* schedule = nullptr, const LoadOptions& options = {});

}  // namespace mixt::io
