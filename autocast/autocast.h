// Autocast: the public API. Per-device casting policies run in the
// AutocastCPU / AutocastCUDA dispatch keys; these guards turn them on, nest,
// and open precision scopes (float32 islands, low-precision regions).
#pragma once

#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <mixt/autocast/policy.h>
#include <mixt/autocast/state.h>
#include <mixt/dispatcher/tls.h>
#include <mixt/runtime/tensor.h>

namespace mixt::autocast {

// The seed's autocast options.
struct Options {
  DeviceType device = DeviceType::CUDA;      // whose casting policy (table) applies
  ScalarType dtype = ScalarType::Undefined;  // Undefined: the device's current autocast dtype
  bool enabled = true;                       // false: autocast off inside, call site kept
  std::optional<bool> cache = std::nullopt;  // unset: inherit the thread's cache flag
  // Rehearsal: apply `device`'s policy to the tensors of this device instead (CUDA's
  // rules on CPU or meta tensors, in CPU-only CI). Note [Policy rehearsal].
  std::optional<Device> rehearse_on = std::nullopt;
};

// Enables (or disables) autocast for one device for its lifetime; nesting
// restores the previous state exactly, also on exceptions. Leaving the
// outermost guard clears the cast cache.
class Guard {
 public:
  explicit Guard(Options options);
  ~Guard();
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  State saved_;
  DispatchKeySet saved_excluded_;
};

// Turns every autocast behaviour off inside (no casts, no scopes): a custom
// solver runs in its inputs' dtypes.
class Disable {
 public:
  Disable();
  ~Disable();
  Disable(const Disable&) = delete;
  Disable& operator=(const Disable&) = delete;

 private:
  State saved_;
  DispatchKeySet saved_excluded_;
};

// A float32 island ("sensitivity high"): every op inside computes in float32
// and its output stays float32.
class Island {
 public:
  Island();
  ~Island();
  Island(const Island&) = delete;
  Island& operator=(const Island&) = delete;

 private:
  State saved_;
  DispatchKeySet saved_excluded_;
};

// A low-precision region: every op inside computes in `dtype` (bfloat16 or
// float16), even without autocast and even under a float32 policy.
class Region {
 public:
  explicit Region(ScalarType dtype = kBFloat16);
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

 private:
  State saved_;
  DispatchKeySet saved_excluded_;
};

namespace detail {
// Casts the floating tensors of a region's result to `dtype`.
Tensor cast_result(Tensor r, ScalarType dtype);
std::vector<Tensor> cast_result(std::vector<Tensor> r, ScalarType dtype);
// The dtype results of a region are cast back to: the enclosing region's dtype,
// or float32.
ScalarType outer_dtype();
}  // namespace detail

// Functional forms.
template <class F>
auto scope(Options options, F&& f) {
  Guard g(options);
  return f();
}
template <class F>
auto island(F&& f) {
  Island g;
  return f();
}
// Runs f in a region and casts its floating results back to the outer dtype.
template <class F>
auto region(ScalarType dtype, F&& f) {
  const ScalarType outer = detail::outer_dtype();
  using R = std::invoke_result_t<F>;
  if constexpr (std::is_void_v<R>) {
    Region g(dtype);
    f();
  } else {
    R r = [&] {
      Region g(dtype);
      return f();
    }();
    return detail::cast_result(std::move(r), outer);
  }
}

// Sets the autocast dtype of a device for this thread (bfloat16 or float16).
void set_dtype(DeviceType device, ScalarType dtype);
// Sets this thread's cast-cache flag.
void set_cache_enabled(bool enabled);

// ---- the cast cache (one per thread: Note [Cast cache]) ----
struct CacheStats {
  int64_t entries = 0;
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t invalidations = 0;  // entries replaced because their source was modified in place
  int64_t bytes = 0;          // memory held by cached casts
};
// This thread's cache: entries, bytes, and hit/miss/invalidation counters.
CacheStats cache_stats();
// Empties this thread's cache (the counters keep counting).
void clear_cache();
// Resets this thread's counters (tests, benchmarks).
void reset_cache_stats();

// Registers the autocast kernels as the AutocastCPU/AutocastCUDA fallbacks (done on first use).
void register_autocast_kernels();

// ---- parameters ----
// A sensitive parameter's uses read the float32 master, never a down-cast: an
// op under a `lower` policy that reads it computes in float32.
void mark_sensitive(const Tensor& param, bool sensitive = true);
bool is_sensitive(const Tensor& param);

}  // namespace mixt::autocast
