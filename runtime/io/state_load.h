// What every load_state_dict shares: StagedLoad, the validate-then-apply step
// (a load is checked and prepared completely, then applied by a commit that cannot
// fail on the input), and strict readers of state dict entries. See Note [State loads].
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <mixt/runtime/io/state_dict.h>

namespace mixt::io {

// A validated, prepared state load. Nothing has changed while it exists; commit()
// applies it (every check already passed). It refers to the objects it restores, which
// must outlive it. Loads of several objects combine with add() and apply together.
class StagedLoad {
 public:
  StagedLoad() = default;
  // A load applied by `apply` (which must not throw on account of the input).
  explicit StagedLoad(std::function<void()> apply) { steps_.push_back(std::move(apply)); }
  // Appends `other`'s steps: committing applies this load, then `other`.
  StagedLoad& add(StagedLoad other) {
    for (auto& s : other.steps_) steps_.push_back(std::move(s));
    return *this;
  }
  // Applies every step in order; a second commit does nothing.
  void commit() {
    std::vector<std::function<void()>> steps = std::move(steps_);
    steps_.clear();
    for (auto& s : steps) s();
  }

 private:
  std::vector<std::function<void()>> steps_;
};

// Metadata entry `key` of `sd`; raises mixt::Error naming `op` when it is absent.
const std::string& meta_text(const StateDict& sd, const std::string& key, const char* op);
// Metadata entry `key` as a decimal int64 (the whole text); raises otherwise.
int64_t meta_int(const StateDict& sd, const std::string& key, const char* op);
// Metadata entry `key` as a double (the whole text; "inf" and "nan" parse: the caller's
// rules decide whether they are allowed); raises when it is not a number.
double meta_double(const StateDict& sd, const std::string& key, const char* op);
// Metadata entry `key`, "true" or "false"; raises otherwise.
bool meta_bool(const StateDict& sd, const std::string& key, const char* op);

// `v` as a count in [0, max]: finite and integral, else mixt::Error naming `op` and `key`
// (no out-of-range float-to-integer conversion is ever reached).
int64_t exact_count(double v, int64_t max, const char* op, std::string_view key);
// The value of a one-element integer or floating tensor as a count in [0, max] (integer
// tensors are read exactly); raises for an undefined, bool or multi-element tensor.
int64_t tensor_count(const Tensor& t, int64_t max, const char* op, std::string_view key);
// Raises when two tensors of `sd` share a name.
void check_unique_names(const StateDict& sd, const char* op);

}  // namespace mixt::io
