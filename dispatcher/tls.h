// Thread-local included/excluded key sets and the RAII guards that change them.
#pragma once

#include <mixt/dispatcher/keys.h>

namespace mixt {

struct LocalDispatchKeys {
  DispatchKeySet included;
  DispatchKeySet excluded = kAutocastKeys;  // autocast starts off
};

// This thread's key sets (constant-initialized: reading it costs one TLS load).
inline thread_local LocalDispatchKeys tls_dispatch_keys;

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
