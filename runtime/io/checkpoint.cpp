#include <mixt/runtime/io/checkpoint.h>

#include <algorithm>

#include <mixt/runtime/check.h>
#include <mixt/runtime/generator.h>
#include <mixt/runtime/io/safetensors.h>
#include <mixt/runtime/nn/module.h>
#include <mixt/runtime/optim/optimizer.h>
#include <mixt/runtime/optim/schedule.h>

namespace mixt::io {
namespace {
constexpr const char* kPartsKey = "checkpoint.parts";
constexpr const char* kDefaultGenerator = "default.";
}

void save_checkpoint(const std::string& path, const CheckpointParts& parts) {
  StateDict all;
  std::string names;
  for (const auto& [name, part] : parts) {
    MIXT_CHECK(!name.empty() && name.find(',') == std::string::npos && name.find('.') == std::string::npos,
               "save_checkpoint", "part name '{}' must be non-empty, without '.' or ','", name);
    MIXT_CHECK(("," + names + ",").find("," + name + ",") == std::string::npos, "save_checkpoint",
               "part '{}' is given twice", name);
    all.merge(part, name + ".");
    names += (names.empty() ? "" : ",") + name;
  }
  all.metadata[kPartsKey] = names;
  save_safetensors(path, all);
}

CheckpointParts load_checkpoint_parts(const std::string& path) {
  const StateDict all = load_safetensors(path);
  auto it = all.metadata.find(kPartsKey);
  MIXT_CHECK(it != all.metadata.end(), "load_checkpoint", "{} is a safetensors file but not a mixt checkpoint ({} missing)",
             path, kPartsKey);
  CheckpointParts parts;
  const std::string& names = it->second;
  size_t start = 0;
  while (!names.empty()) {
    const size_t comma = names.find(',', start);
    const std::string name = names.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    MIXT_CHECK(!name.empty() && name.find('.') == std::string::npos, "load_checkpoint",
               "{}: malformed part list '{}'", path, names);
    for (const auto& [n, part] : parts)
      MIXT_CHECK(n != name, "load_checkpoint", "{}: part '{}' is listed twice", path, name);
    parts.emplace_back(name, all.extract(name + "."));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

const StateDict& checkpoint_part(const CheckpointParts& parts, const std::string& name) {
  for (const auto& [n, part] : parts)
    if (n == name) return part;
  MIXT_FAIL("load_checkpoint", "the checkpoint has no part '{}'", name);
}

// Note [Generator state]: dropout and the random factories draw from the default
// generator, so an exact resume needs its position; every checkpoint saved from objects
// carries it (part "rng") and every load restores it, staged with the other parts.
StateDict rng_state() {
  StateDict sd;
  sd.merge(default_generator().state_dict(), kDefaultGenerator);
  return sd;
}

StagedLoad stage_rng_state(const StateDict& sd) {
  const std::string prefix = kDefaultGenerator;
  for (const auto& [key, value] : sd.metadata)
    MIXT_CHECK(key.compare(0, prefix.size(), prefix) == 0, "load_checkpoint",
               "the rng part has an entry '{}' for no known generator (expected '{}*')", key, prefix);
  MIXT_CHECK(sd.tensors.empty(), "load_checkpoint", "the rng part holds no tensors, got '{}'", sd.tensors.front().first);
  return default_generator().stage_state_dict(sd.extract(prefix));
}

void save_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer& optimizer,
                     const optim::WarmupCosine* schedule, const CheckpointParts& extra) {
  CheckpointParts parts{{"model", model.state_dict()}, {"optim", optimizer.state_dict()}};
  if (schedule) parts.emplace_back("schedule", schedule->state_dict());
  parts.emplace_back("rng", rng_state());
  for (const auto& p : extra) parts.push_back(p);
  save_checkpoint(path, parts);
}

CheckpointParts other_parts(const CheckpointParts& parts, std::initializer_list<std::string_view> taken) {
  CheckpointParts out;
  for (const auto& p : parts)
    if (std::find(taken.begin(), taken.end(), p.first) == taken.end()) out.push_back(p);
  return out;
}

StagedLoad stage_checkpoint(const CheckpointParts& parts, nn::Module& model, optim::Optimizer& optimizer,
                            optim::WarmupCosine* schedule, const LoadOptions& options) {
  StagedLoad staged = model.stage_state_dict(checkpoint_part(parts, "model"));
  staged.add(optimizer.stage_state_dict(checkpoint_part(parts, "optim")));
  // After the optimizer: the schedule sets the lrs of its step.
  if (schedule) staged.add(schedule->stage_state_dict(checkpoint_part(parts, "schedule")));
  // The rng part is checked either way: a corrupt checkpoint is refused whatever is restored.
  StagedLoad rng = stage_rng_state(checkpoint_part(parts, "rng"));
  if (options.restore_rng) staged.add(std::move(rng));
  return staged;
}

CheckpointParts load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& optimizer,
                                optim::WarmupCosine* schedule, const LoadOptions& options) {
  const CheckpointParts parts = load_checkpoint_parts(path);
  stage_checkpoint(parts, model, optimizer, schedule, options).commit();
  return other_parts(parts, {"model", "optim", "schedule", "rng"});
}

}  // namespace mixt::io
