// The thread-local autocast state, its guards, and the dispatch-key exclusions
// they keep in step. See Note [Autocast state].
#include <mixt/autocast/autocast.h>
#include <mixt/autocast/cast_cache.h>
#include <mixt/autocast/explain.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::autocast {
namespace {

thread_local State t_state;
thread_local int t_observers = 0;

// The dispatcher's kernel choice, in step with the tables: the backend of a device whose
// tensors follow another device's policy runs that device's choice of kernel or
// composite (Note [Rehearsed kernel choice]).
void sync_kernel_choice() {
  LocalDispatchKeys& tls = tls_dispatch_keys;
  tls.rehearsed = {};
  for (int d = 0; d < kNumDeviceTypes; ++d) {
    const DeviceType on = static_cast<DeviceType>(d), table = t_state.table[static_cast<size_t>(d)];
    if (table == on) continue;
    const DispatchKey k = backend_key_for(Device(on));
    tls.rehearsed |= k;
    tls.choice_of[static_cast<size_t>(k)] = backend_key_for(Device(table));
  }
}

// The autocast key of a device is live when autocast is on for it or a scope
// (island or region) is open; a Disabled scope turns both keys off.
void sync_keys() {
  DispatchKeySet& excluded = tls_dispatch_keys.excluded;
  const Scope* top = t_state.top();
  const bool scoped = top && top->kind != ScopeKind::Disabled;
  const bool disabled = top && top->kind == ScopeKind::Disabled;
  for (int d = 0; d < kNumDeviceTypes; ++d) {
    const DispatchKey k = autocast_key(static_cast<DeviceType>(d));
    const bool live = !disabled && (t_state.enabled[static_cast<size_t>(d)] || scoped || t_observers > 0);
    excluded = live ? excluded - k : excluded | k;
  }
  sync_kernel_choice();
}

// Makes `saved` this thread's state again, with the key sets it had (a guard's exit).
void restore(const State& saved, DispatchKeySet saved_excluded) {
  t_state = saved;
  tls_dispatch_keys.excluded = saved_excluded;
  sync_kernel_choice();
}

void push_scope(Scope s, const char* what) {
  MIXT_CHECK(t_state.depth < kMaxScopeDepth, what, "precision scopes nest at most {} deep", kMaxScopeDepth);
  t_state.scopes[static_cast<size_t>(t_state.depth++)] = s;
  sync_keys();
}

void check_low_dtype(ScalarType dtype, const char* what) {
  MIXT_CHECK(dtype == kBFloat16 || dtype == kFloat16, what,
             "the low-precision dtype must be bfloat16 or float16, got {}", dtype);
}

}  // namespace

const State& state() { return t_state; }
bool is_enabled(DeviceType device) { return t_state.enabled[static_cast<size_t>(device)]; }
ScalarType get_dtype(DeviceType device) { return t_state.dtype[static_cast<size_t>(device)]; }

ScopeSnapshot capture_scopes() {
  ScopeSnapshot s;
  s.depth = t_state.depth;
  for (int i = 0; i < t_state.depth; ++i) s.scopes[static_cast<size_t>(i)] = t_state.scopes[static_cast<size_t>(i)];
  return s;
}

namespace {
// Makes `s` this thread's scopes, with the autocast keys in step.
void install_scopes(const ScopeSnapshot& s) {
  t_state.depth = s.depth;
  t_state.scopes = s.scopes;
  sync_keys();
}
constexpr PrecisionScopeHooks kPrecisionScopeHooks{capture_scopes, install_scopes};
}  // namespace

void detail::install_precision_scope_hooks() { set_precision_scope_hooks(&kPrecisionScopeHooks); }

Guard::Guard(Options o) : saved_(t_state), saved_excluded_(tls_dispatch_keys.excluded) {
  MIXT_CHECK(o.device != DeviceType::Meta, "autocast::Guard",
             "meta has no casting policy of its own: rehearse a device's policy on it "
             "({{.device = DeviceType::CUDA, .rehearse_on = Device::meta()}})");
  const DeviceType on = o.rehearse_on ? o.rehearse_on->type() : o.device;
  const auto d = static_cast<size_t>(on);
  if (o.dtype != ScalarType::Undefined) check_low_dtype(o.dtype, "autocast::Guard");
  t_state.enabled[d] = o.enabled;
  t_state.table[d] = o.device;
  // The policy's dtype: given, else the current dtype of the device whose policy it is.
  t_state.dtype[d] = o.dtype != ScalarType::Undefined ? o.dtype : t_state.dtype[static_cast<size_t>(o.device)];
  ++t_state.nesting;
  if (o.cache) t_state.cache_enabled = *o.cache;
  sync_keys();
}

Guard::~Guard() {
  if (--t_state.nesting == 0) clear_cache();
  restore(saved_, saved_excluded_);
}

Disable::Disable() : saved_(t_state), saved_excluded_(tls_dispatch_keys.excluded) {
  push_scope({ScopeKind::Disabled, ScalarType::Undefined}, "autocast::Disable");
}
Disable::~Disable() {
  restore(saved_, saved_excluded_);
}

Island::Island() : saved_(t_state), saved_excluded_(tls_dispatch_keys.excluded) {
  push_scope({ScopeKind::Island, kFloat32}, "autocast::Island");
}
Island::~Island() {
  restore(saved_, saved_excluded_);
}

Region::Region(ScalarType dtype) : saved_(t_state), saved_excluded_(tls_dispatch_keys.excluded) {
  check_low_dtype(dtype, "autocast::Region");
  push_scope({ScopeKind::Region, dtype}, "autocast::Region");
}
Region::~Region() {
  restore(saved_, saved_excluded_);
}

void set_dtype(DeviceType device, ScalarType dtype) {
  check_low_dtype(dtype, "autocast::set_dtype");
  t_state.dtype[static_cast<size_t>(device)] = dtype;
}

void set_cache_enabled(bool enabled) { t_state.cache_enabled = enabled; }

void mark_sensitive(const Tensor& param, bool sensitive) {
  MIXT_CHECK(param.defined(), "autocast::mark_sensitive", "the tensor is undefined");
  param.impl()->autocast_sensitive = sensitive;
}

bool is_sensitive(const Tensor& param) { return param.defined() && param.impl()->autocast_sensitive; }

namespace detail {

void add_observer(int delta) {
  t_observers += delta;
  sync_keys();
}

Explain* swap_active_explain(Explain* e);  // explain.cpp

StateSwap::StateSwap(const State& st)
    : saved_(t_state),
      saved_observers_(t_observers),
      saved_explain_(swap_active_explain(nullptr)),
      saved_excluded_(tls_dispatch_keys.excluded) {
  t_state = st;
  t_observers = 0;
  sync_keys();
}

StateSwap::~StateSwap() {
  t_observers = saved_observers_;
  swap_active_explain(static_cast<Explain*>(saved_explain_));
  restore(saved_, saved_excluded_);
}

ScalarType outer_dtype() {
  for (int i = t_state.depth - 1; i >= 0; --i) {
    const Scope& s = t_state.scopes[static_cast<size_t>(i)];
    if (s.kind == ScopeKind::Region) return s.dtype;
    if (s.kind == ScopeKind::Island) return kFloat32;
  }
  return kFloat32;
}

Tensor cast_result(Tensor r, ScalarType dtype) {
  return r.defined() && is_floating(r.dtype()) && r.dtype() != kFloat64 && r.dtype() != dtype ? to(r, dtype) : r;
}

std::vector<Tensor> cast_result(std::vector<Tensor> r, ScalarType dtype) {
  for (Tensor& t : r) t = cast_result(std::move(t), dtype);
  return r;
}

}  // namespace detail

}  // namespace mixt::autocast
