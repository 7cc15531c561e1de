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
// (CUDA has no random kernels of its own yet). See Note [Generator state].
StateDict rng_state();
// Checks an rng_state() and prepares its restoration; nothing changes until it is committed.
StagedLoad stage_rng_state(const StateDict& sd);

// Saves a model, its optimizer and the random generators (rng_state()), and optionally
// a schedule and extra parts.
void save_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer& optimizer,
                     const optim::WarmupCosine* schedule = nullptr, const CheckpointParts& extra = {});
// Restores what save_checkpoint wrote into existing objects; returns the extra parts.
// Every part is checked against its object before any is restored: a refused load
// (a part missing or not fitting) changes nothing. See Note [State loads].
CheckpointParts load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& optimizer,
                                optim::WarmupCosine* schedule = nullptr);
// Checks the "model", "optim", (when `schedule` is given) "schedule" and "rng" parts
// against the objects and prepares their restoration; nothing changes until it is committed.
StagedLoad stage_checkpoint(const CheckpointParts& parts, nn::Module& model, optim::Optimizer& optimizer,
                            optim::WarmupCosine* schedule = nullptr);

}  // namespace mixt::io
