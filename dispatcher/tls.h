// Thread-local included/excluded key sets, the RAII guards that change them, and the
// thread's count of dispatcher entries.
#pragma once

#include <array>
#include <cstdint>

#include <mixt/dispatcher/keys.h>

namespace mixt {

struct LocalDispatchKeys {
  DispatchKeySet included;
  DispatchKeySet excluded = kAutocastKeys;  // autocast starts off
  // Backend keys whose choice between kernel and composite follows another backend's: the
  // backend whose policy a guard rehearses on them (Note [Rehearsed kernel choice]).
  DispatchKeySet rehearsed;
  std::array<DispatchKey, kNumBackendKeys> choice_of{};  // per key in `rehearsed`: the backend it follows
  // This thread's dispatcher entries (Note [Dispatch counters]): kept beside the key
  // sets, so counting costs no TLS access of its own.
  uint64_t dispatches = 0;    // dispatch() calls: front ends, and kernels that call ops
  uint64_t redispatches = 0;  // redispatch() calls: a layer handing its call below itself
};

// This thread's key sets (constant-initialized: reading it costs one TLS load).
inline thread_local LocalDispatchKeys tls_dispatch_keys;

// This thread's dispatcher entries so far (tests and tools; Note [Dispatch counters]).
struct DispatchCounts {
  uint64_t dispatches = 0;
  uint64_t redispatches = 0;
  // The entries of the calls made since `earlier` was taken.
  DispatchCounts operator-(const DispatchCounts& earlier) const {
    return {dispatches - earlier.dispatches, redispatches - earlier.redispatches};
  }
  bool operator==(const DispatchCounts&) const = default;
};
// The counts of this thread; subtract two readings to count the entries of some calls.
inline DispatchCounts dispatch_counts() { return {tls_dispatch_keys.dispatches, tls_dispatch_keys.redispatches}; }

// Adds keys to the thread's included set for its lifetime; restores the
// previous set (not just the bits it added) on exit.
class IncludeKeysGuard {
 public:
  explicit IncludeKeysGuard(DispatchKeySet keys) : saved_(tls_dispatch_keys.included) {
    tls_dispatch_keys.included = saved_ | keys;
  }
  ~IncludeKeysGuard() { tls_dispatch_keys.included = saved_; }
  IncludeKeysGuard(const IncludeKeysGuard&) = delete;
  IncludeKeysGuard& operator=(const IncludeKeysGuard&) = delete;

 private:
  DispatchKeySet saved_;
};

// Adds keys to the thread's excluded set for its lifetime; restores on exit.
class ExcludeKeysGuard {
 public:
  explicit ExcludeKeysGuard(DispatchKeySet keys) : saved_(tls_dispatch_keys.excluded) {
    tls_dispatch_keys.excluded = saved_ | keys;
  }
  ~ExcludeKeysGuard() { tls_dispatch_keys.excluded = saved_; }
  ExcludeKeysGuard(const ExcludeKeysGuard&) = delete;
  ExcludeKeysGuard& operator=(const ExcludeKeysGuard&) = delete;

 private:
  DispatchKeySet saved_;
};

// Removes keys from the thread's excluded set for its lifetime (how an autocast
// guard turns its key on); restores on exit.
class UnexcludeKeysGuard {
 public:
  explicit UnexcludeKeysGuard(DispatchKeySet keys) : saved_(tls_dispatch_keys.excluded) {
    tls_dispatch_keys.excluded = saved_ - keys;
  }
  ~UnexcludeKeysGuard() { tls_dispatch_keys.excluded = saved_; }
  UnexcludeKeysGuard(const UnexcludeKeysGuard&) = delete;
  UnexcludeKeysGuard& operator=(const UnexcludeKeysGuard&) = delete;

 private:
  DispatchKeySet saved_;
};

}  // namespace mixt
