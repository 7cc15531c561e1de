#include <mixt/amp/precision_state.h>


#include <fmt/format.h>

#include <mixt/amp/grad_scaler.h>
#include <mixt/autocast/policy.h>
#include <mixt/autocast/state.h>
#include <mixt/dispatcher/op.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/warnings.h>

namespace mixt::amp {
namespace {

constexpr const char* kFingerprintKey = "fingerprint";

// The policies that differ from the built-in tables ("cuda:mm=lower_f32_out").
std::string changed_policies() {
  std::string out;
  for (int i = 0; i < num_ops(); ++i)
    for (DeviceType dev : {DeviceType::CPU, DeviceType::CUDA}) {
      const auto op = static_cast<OpId>(i);
      const autocast::Policy p = autocast::policy_of(dev, op);
      if (p != autocast::builtin_policy(dev, op))
        out += fmt::format("{}{}:{}={}", out.empty() ? "" : ",", device_type_name(dev), op_name(op),
                           autocast::policy_name(p));
    }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string precision_fingerprint() {
  const autocast::State& st = autocast::state();
  std::string scopes;
  for (int i = 0; i < st.depth; ++i) {
    const autocast::Scope& s = st.scopes[static_cast<size_t>(i)];
    scopes += i ? "," : "";
    scopes += s.kind == autocast::ScopeKind::Island   ? std::string("island")
              : s.kind == autocast::ScopeKind::Region ? fmt::format("region({})", dtype_name(s.dtype))
                                                      : std::string("disabled");
  }
  std::string out;
  for (DeviceType d : {DeviceType::CPU, DeviceType::CUDA})
    out += fmt::format("{}={}:{}; ", device_type_name(d), autocast::is_enabled(d) ? "on" : "off",
                       dtype_name(autocast::get_dtype(d)));
  out += fmt::format("tables=v{}; changed={}; scopes={}", autocast::kPolicyTableVersion, changed_policies(),
                     scopes.empty() ? "none" : scopes);
  return out;
}

void save_training_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer& optimizer,
                              const GradScaler& scaler, const optim::WarmupCosine* schedule,
                              const io::CheckpointParts& extra) {
  io::StateDict precision;
  precision.metadata[kFingerprintKey] = precision_fingerprint();
  io::CheckpointParts parts{{"scaler", scaler.state_dict()}, {"precision", precision}};
  for (const auto& p : extra) parts.push_back(p);
  io::save_checkpoint(path, model, optimizer, schedule, parts);
}

ResumeReport load_training_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& optimizer,
                                      GradScaler& scaler, optim::WarmupCosine* schedule, bool quiet,
                                      const io::LoadOptions& options) {
  // Every part is checked before anything is restored (Note [State loads]).
  const io::CheckpointParts parts = io::load_checkpoint_parts(path);
  const io::StateDict& precision = io::checkpoint_part(parts, "precision");
  auto fp = precision.metadata.find(kFingerprintKey);
  MIXT_CHECK(fp != precision.metadata.end(), "load_training_checkpoint", "{}: the precision part has no fingerprint", path);
  io::StagedLoad staged = io::stage_checkpoint(parts, model, optimizer, schedule, options);
  staged.add(scaler.stage_state_dict(io::checkpoint_part(parts, "scaler")));
  ResumeReport report;
  report.saved_fingerprint = fp->second;
  report.extra = io::other_parts(parts, {"model", "optim", "schedule", "rng", "scaler", "precision"});
  const std::string now = precision_fingerprint();
  report.policy_matches = now == report.saved_fingerprint;
  // Before the commit: a handler that raises leaves everything as it was.
  if (!report.policy_matches && !quiet)
    warn("load_training_checkpoint", fmt::format("{} was saved under the precision policy\n  {}\nand resumes under\n  {}",
                                                 path, report.saved_fingerprint, now));
  staged.commit();
  return report;
}

}  // namespace mixt::amp
