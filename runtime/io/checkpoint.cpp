#include <mixt/runtime/io/checkpoint.h>

#include <mixt/runtime/check.h>
#include <mixt/runtime/io/safetensors.h>
#include <mixt/runtime/nn/module.h>
#include <mixt/runtime/optim/optimizer.h>
#include <mixt/runtime/optim/schedule.h>

namespace mixt::io {
namespace {
constexpr const char* kPartsKey = "checkpoint.parts";
}

void save_checkpoint(const std::string& path, const CheckpointParts& parts) {
  StateDict all;
  std::string names;
  for (const auto& [name, part] : parts) {
    MIXT_CHECK(!name.empty() && name.find(',') == std::string::npos && name.find('.') == std::string::npos,
               "save_checkpoint", "part name '{}' must be non-empty, without '.' or ','", name);
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
  std::string names = it->second;
  size_t start = 0;
  while (start <= names.size() && !names.empty()) {
    const size_t comma = names.find(',', start);
    const std::string name = names.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
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

void save_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer& optimizer,
                     const optim::WarmupCosine* schedule, const CheckpointParts& extra) {
  CheckpointParts parts{{"model", model.state_dict()}, {"optim", optimizer.state_dict()}};
  if (schedule) parts.emplace_back("schedule", schedule->state_dict());
  for (const auto& p : extra) parts.push_back(p);
  save_checkpoint(path, parts);
}

CheckpointParts load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& optimizer,
                                optim::WarmupCosine* schedule) {
  CheckpointParts parts = load_checkpoint_parts(path);
  model.load_state_dict(checkpoint_part(parts, "model"));
  optimizer.load_state_dict(checkpoint_part(parts, "optim"));
  if (schedule) schedule->load_state_dict(checkpoint_part(parts, "schedule"));
  CheckpointParts extra;
  for (auto& p : parts)
    if (p.first != "model" && p.first != "optim" && p.first != "schedule") extra.push_back(std::move(p));
  return extra;
}

}  // namespace mixt::io
