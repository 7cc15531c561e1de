// Autocast's thread-local state and the RAII scopes that change it. The state
// is a value: it can be captured and restored exactly (autograd nodes capture
// the precision scopes of their forward and restore them for their backward).
// See Note [Autocast state].
#pragma once

#include <array>
#include <cstdint>

#include <mixt/dispatcher/keys.h>
#include <mixt/runtime/device.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/precision_scopes.h>

namespace mixt::autocast {

// A precision scope (its kind: Island, Region, Disabled). Innermost wins. The types live
// in runtime/precision_scopes.h, where autograd reaches them without autocast.
using ScopeKind = PrecisionScopeKind;
using Scope = PrecisionScope;

constexpr int kMaxScopeDepth = kMaxPrecisionScopeDepth;

struct State {
  std::array<bool, kNumDeviceTypes> enabled{};                     // autocast on, per device
  std::array<ScalarType, kNumDeviceTypes> dtype{kBFloat16, kFloat16, kFloat16};  // CPU bf16, CUDA fp16, meta
  // Whose policy table the tensors of each device follow: their own, or the device a
  // guard rehearses on them (Note [Policy rehearsal]).
  std::array<DeviceType, kNumDeviceTypes> table{DeviceType::CPU, DeviceType::CUDA, DeviceType::Meta};
  bool cache_enabled = true;
  int nesting = 0;  // autocast guards entered and not left (any device, enabled or not)
  std::array<Scope, kMaxScopeDepth> scopes{};
  int depth = 0;

  const Scope* top() const { return depth > 0 ? &scopes[static_cast<size_t>(depth - 1)] : nullptr; }
};

// The precision scopes alone: what an autograd node records of its forward.
using ScopeSnapshot = PrecisionScopes;

// This thread's state. Change it through the guards, which keep the dispatch
// key exclusions in step.
const State& state();
// The autocast dispatch key of a device type.
constexpr DispatchKey autocast_key(DeviceType d) {
  switch (d) {
    case DeviceType::CPU: return DispatchKey::AutocastCPU;
    case DeviceType::CUDA: return DispatchKey::AutocastCUDA;
    case DeviceType::Meta: return DispatchKey::AutocastMeta;
  }
  return DispatchKey::AutocastCPU;
}
// True when autocast is enabled for `device` on this thread.
bool is_enabled(DeviceType device);
// The autocast dtype of `device` on this thread.
ScalarType get_dtype(DeviceType device);
// The current precision scopes (what autograd nodes capture, through runtime/precision_scopes.h).
ScopeSnapshot capture_scopes();

namespace detail {
// Makes autocast the precision layer autograd captures scopes from (runtime/precision_scopes.h).
void install_precision_scope_hooks();
// Observers (explain) keep the autocast keys live so every op is seen.
void add_observer(int delta);

// Installs `st` as this thread's whole state, with no explain recorder or observer
// active, until it dies; everything comes back after, also on exceptions. How decide()
// predicts an output dtype: the op runs on meta tensors under `st` (Note [Meta functions]).
class StateSwap {
 public:
  explicit StateSwap(const State& st);
  ~StateSwap();
  StateSwap(const StateSwap&) = delete;
  StateSwap& operator=(const StateSwap&) = delete;

 private:
  State saved_;
  int saved_observers_;
  void* saved_explain_;
  DispatchKeySet saved_excluded_;
};
}  // namespace detail

}  // namespace mixt::autocast
