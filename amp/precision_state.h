// The precision state of a training run in checkpoints: model, optimizer,
// grad scaler, schedule, the random generators and a fingerprint of the precision
// policy, saved together atomically; resume restores them all and says when the
// policy differs.
#pragma once

#include <string>

#include <mixt/runtime/io/checkpoint.h>

namespace mixt::amp {

class GradScaler;

// A readable fingerprint of this thread's precision policy: per device whether
// autocast is on and its dtype, the policy-table version, the policies changed
// from the built-in tables, and the precision scopes open now. Two runs with
// the same fingerprint cast the same ops the same way.
std::string precision_fingerprint();

struct ResumeReport {
  io::CheckpointParts extra;      // parts the caller saved beside the standard ones
  std::string saved_fingerprint;  // the precision policy the checkpoint was written under
  bool policy_matches = true;     // false: the run resumes under a different policy
};

// Saves model, optimizer, scaler, the random generators (io::rng_state()), the
// precision fingerprint and optionally a schedule and extra parts in one file, atomically.
void save_training_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer& optimizer,
                              const GradScaler& scaler, const optim::WarmupCosine* schedule = nullptr,
                              const io::CheckpointParts& extra = {});
// Restores what save_training_checkpoint wrote into existing objects. Every part is
// checked against its object first: a refused load changes nothing. When the saved
// fingerprint differs from the current one it warns (runtime/warnings.h; unless `quiet`),
// before anything is restored, and reports it. `options` as for io::load_checkpoint
// (`.restore_rng = false` keeps the current random generator).
ResumeReport load_training_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& optimizer,
                                      GradScaler& scaler, optim::WarmupCosine* schedule = nullptr, bool quiet = false,
                                      const io::LoadOptions& options = {});

}  // namespace mixt::amp
