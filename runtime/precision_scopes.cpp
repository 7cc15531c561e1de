#include <mixt/runtime/precision_scopes.h>

#include <atomic>

#include <mixt/dispatcher/tls.h>

namespace mixt {
namespace {
// Set once, during the one registration of the built-in kernels (mixt::init).
std::atomic<const PrecisionScopeHooks*> g_hooks{nullptr};
}  // namespace

void set_precision_scope_hooks(const PrecisionScopeHooks* hooks) { g_hooks.store(hooks, std::memory_order_release); }

PrecisionScopes capture_precision_scopes() {
  const PrecisionScopeHooks* h = g_hooks.load(std::memory_order_acquire);
  return h ? h->capture() : PrecisionScopes{};
}

PrecisionScopeGuard::PrecisionScopeGuard(const PrecisionScopes& scopes)
    : hooks_(g_hooks.load(std::memory_order_acquire)), saved_excluded_(tls_dispatch_keys.excluded) {
  if (!hooks_) return;
  saved_ = hooks_->capture();
  hooks_->install(scopes);
}

PrecisionScopeGuard::~PrecisionScopeGuard() {
  if (hooks_) hooks_->install(saved_);
  tls_dispatch_keys.excluded = saved_excluded_;
}

}  // namespace mixt
