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

namespace mixt::autocast {

// A precision scope. Innermost wins.
enum class ScopeKind : uint8_t {
  Island,    // every op computes in float32 and its output stays float32
  Region,    // every op computes in `dtype` (bfloat16 or float16), even without autocast
  Disabled,  // no casting at all (autocast::Disable)
};
struct Scope {
  ScopeKind kind = ScopeKind::Disabled;
  ScalarType dtype = ScalarType::Undefined;  // Region's dtype
};

constexpr int kMaxScopeDepth = 16;

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
struct ScopeSnapshot {
  std::array<Scope, kMaxScopeDepth> scopes{};
  int depth = 0;
};

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
// The current precision scopes (for autograd nodes).
ScopeSnapshot capture_scopes();
// Installs `s` as the current scopes until the guard dies (autograd's backward).
class ScopeRestoreGuard {
 public:
  explicit ScopeRestoreGuard(const ScopeSnapshot& s);
  ~ScopeRestoreGuard();
  ScopeRestoreGuard(const ScopeRestoreGuard&) = delete;
  ScopeRestoreGuard& operator=(const ScopeRestoreGuard&) = delete;

 private:
  State saved_;
  DispatchKeySet saved_excluded_;
};

namespace detail {
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
