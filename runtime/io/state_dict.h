// StateDict: named tensors (in insertion order) plus string metadata — what
// modules, optimizers and the grad scaler save, and what checkpoints store.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <mixt/runtime/tensor.h>

namespace mixt::io {

struct StateDict {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, std::string> metadata;

  // The tensor called `name`, or nullptr.
  const Tensor* find(std::string_view name) const {
    for (const auto& [n, t] : tensors)
      if (n == name) return &t;
    return nullptr;
  }
  // Adds (or replaces) a tensor.
  void set(std::string name, Tensor t) {
    for (auto& [n, existing] : tensors)
      if (n == name) {
        existing = std::move(t);
        return;
      }
    tensors.emplace_back(std::move(name), std::move(t));
  }
  // Entries of `other` under `prefix` (tensors and metadata keys alike).
  void merge(const StateDict& other, const std::string& prefix) {
    for (const auto& [n, t] : other.tensors) set(prefix + n, t);
    for (const auto& [k, v] : other.metadata) metadata[prefix + k] = v;
  }
  // The entries whose names start with `prefix`, with the prefix removed.
  StateDict extract(const std::string& prefix) const {
    StateDict out;
    for (const auto& [n, t] : tensors)
      if (n.compare(0, prefix.size(), prefix) == 0) out.tensors.emplace_back(n.substr(prefix.size()), t);
    for (const auto& [k, v] : metadata)
      if (k.compare(0, prefix.size(), prefix) == 0) out.metadata[k.substr(prefix.size())] = v;
    return out;
  }
};

}  // namespace mixt::io
