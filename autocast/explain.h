// Explain: a recorder guard that logs, for every op that passes an autocast
// key while it is alive, the device, the rule that fired, input and output
// dtypes, and each cast inserted (with cache hit or miss and bytes cast).
#pragma once

#include <string>
#include <vector>

#include <mixt/autocast/decision.h>

namespace mixt::autocast {

struct CastRecord {
  int input = 0;  // input index (list elements follow the inputs)
  ScalarType from = ScalarType::Undefined, to = ScalarType::Undefined;
  bool cached = false;     // eligible for the cache
  bool cache_hit = false;  // served from the cache
  int64_t bytes = 0;       // bytes written by the cast (0 on a hit)
};

struct ExplainRecord {
  std::string op;
  DeviceType device = DeviceType::CPU;         // the tensors' device
  DeviceType policy_device = DeviceType::CPU;  // whose policy applied (another device when rehearsed)
  Rule rule = Rule::PassThrough;
  Policy policy = Policy::PassThrough;
  std::vector<ScalarType> inputs;
  std::vector<ScalarType> outputs;
  DeviceType output_device = DeviceType::CPU;  // where output 0 lives (a `to` may move it)
  std::vector<CastRecord> casts;
  ScalarType set_dtype = ScalarType::Undefined;  // dtype attribute autocast set
  ScalarType predicted = ScalarType::Undefined;  // output dtype the decision predicted
  std::string error;
  int depth = 0;  // nesting: ops called by a composite op are one deeper
};

// How the ops of an explain run used one tracked parameter.
struct ParameterUse {
  std::string name;
  Tensor param;
  int64_t low_uses = 0;  // reads through a cast down to a low-precision dtype
  int64_t other_uses = 0;  // reads in its own dtype (or cast up)
  ScalarType low_dtype = ScalarType::Undefined;
};

class Explain {
 public:
  Explain();
  ~Explain();
  Explain(const Explain&) = delete;
  Explain& operator=(const Explain&) = delete;

  const std::vector<ExplainRecord>& records() const { return records_; }
  // A readable table, one line per op.
  std::string table() const;
  // The records as JSON.
  std::string json() const;
  // Writes json() to `path` (atomically).
  void write_json(const std::string& path) const;
  // Tracks how the ops use these parameters (e.g. module.named_parameters()).
  void track(const std::vector<std::pair<std::string, Tensor>>& named);
  const std::vector<ParameterUse>& parameter_uses() const { return params_; }
  // One line per tracked parameter: stored dtype and size, and its uses.
  std::string parameter_table() const;
  // Totals: casts, cache hits, bytes cast.
  int64_t casts() const;
  int64_t cache_hits() const;
  int64_t bytes_cast() const;

  // Used by the autocast kernel: opens a record (returns its index), edits it, closes it.
  size_t begin(ExplainRecord r);
  ExplainRecord& at(size_t i) { return records_[i]; }
  void end();
  // Counts a use of `t` if it is tracked (`cast_to`: the dtype it was cast to, if any).
  void note_use(const Tensor& t, ScalarType cast_to);

 private:
  std::vector<ExplainRecord> records_;
  std::vector<ParameterUse> params_;
  std::vector<size_t> open_;
  Explain* previous_;
  DispatchKeySet saved_excluded_;
};

// Where a decision applied, as explain's device column and autocast's errors name it: the
// tensors' device ("cuda"), or under a rehearsal both ("meta<cuda": meta tensors, CUDA's policy).
std::string device_label(DeviceType tensors, DeviceType policy);

// Stores, in their low dtype, the frozen parameters (not requiring grad) that every
// recorded use read through a cast down: the same bits from half the memory
// (seed: a frozen parameter is stored in the dtype its readers read). Returns
// the bytes saved.
int64_t compact_frozen_parameters(const Explain& ex);

namespace detail {
// The innermost live recorder on this thread (nullptr if none).
Explain* active_explain();
}  // namespace detail

}  // namespace mixt::autocast
