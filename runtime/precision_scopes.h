// The precision scopes a thread has open (f32 islands, low-precision regions, autocast
// disabled), as a value, and the interface through which autograd captures them for a
// node and restores them for its backward without knowing the layer that owns them:
// autocast installs the hooks when it registers (Note [Backward scopes]).
#pragma once

#include <array>
#include <cstdint>

#include <mixt/dispatcher/keys.h>
#include <mixt/runtime/dtype.h>

namespace mixt {

// What a precision scope does. Innermost wins.
enum class PrecisionScopeKind : uint8_t {
  Island,    // every op computes in float32 and its output stays float32
  Region,    // every op computes in `dtype` (bfloat16 or float16), even without autocast
  Disabled,  // no casting at all (autocast::Disable)
};
// One open scope.
struct PrecisionScope {
  PrecisionScopeKind kind = PrecisionScopeKind::Disabled;
  ScalarType dtype = ScalarType::Undefined;  // a Region's dtype
};

constexpr int kMaxPrecisionScopeDepth = 16;

// The open scopes of a thread, outermost first: what an autograd node records of its forward.
struct PrecisionScopes {
  std::array<PrecisionScope, kMaxPrecisionScopeDepth> scopes{};
  int depth = 0;
};

// The precision layer's side of the interface (autocast/state.cpp implements it).
struct PrecisionScopeHooks {
  PrecisionScopes (*capture)();                     // this thread's open scopes
  void (*install)(const PrecisionScopes& scopes);  // makes `scopes` this thread's, keys kept in step
};

// Installs the precision layer's hooks (once, when its kernels register).
void set_precision_scope_hooks(const PrecisionScopeHooks* hooks);
// This thread's open scopes (none when no precision layer is installed).
PrecisionScopes capture_precision_scopes();

// Makes `scopes` this thread's precision scopes until it dies, then restores the scopes
// and the dispatch key exclusions exactly as they were (autograd's backward).
class PrecisionScopeGuard {
 public:
  explicit PrecisionScopeGuard(const PrecisionScopes& scopes);
  ~PrecisionScopeGuard();
  PrecisionScopeGuard(const PrecisionScopeGuard&) = delete;
  PrecisionScopeGuard& operator=(const PrecisionScopeGuard&) = delete;

 private:
  const PrecisionScopeHooks* hooks_;
  PrecisionScopes saved_;
  DispatchKeySet saved_excluded_;
};

}  // namespace mixt
