// dispatch: keys = (input keys | tls.included) - tls.excluded, masked by the
// op's kernels; the highest key's kernel runs (a rehearsed backend's: the kernel or
// composite of the backend it rehearses). See Note [Dispatch keys].
#pragma once

#include <new>
#include <stdexcept>

#include <mixt/dispatcher/op_call.h>
#include <mixt/dispatcher/tls.h>
#include <mixt/runtime/error.h>

namespace mixt {
namespace detail {
[[noreturn]] void throw_no_kernel(const OpCall& call, DispatchKeySet keys);
[[noreturn]] void throw_bad_arity(const OpCall& call, const OpEntry& e);
[[noreturn]] void rethrow_with_context(const Error& e, const OpCall& call);
[[noreturn]] void throw_out_of_memory(const OpCall& call);

// Every required input is present and defined.
MIXT_ALWAYS_INLINE void check_arity(const OpCall& call, const OpEntry& e) {
  bool ok = call.n_in >= e.schema.min_inputs && call.n_in <= e.schema.max_inputs;
  for (int i = 0; ok && i < e.schema.min_inputs; ++i) ok = call.in[i].defined();
  if (MIXT_UNLIKELY(!ok)) throw_bad_arity(call, e);
}
}  // namespace detail

// Routes `call` to the kernel of its highest key.
MIXT_ALWAYS_INLINE void dispatch(OpCall& call) {
  const OpEntry& e = op_entry(call.op);
  detail::check_arity(call, e);
  LocalDispatchKeys& tls = tls_dispatch_keys;
  ++tls.dispatches;
  const DispatchKeySet ks = ((call.input_keys(e) | tls.included) - tls.excluded) & e.mask;
  if (MIXT_UNLIKELY(ks.empty())) detail::throw_no_kernel(call, ((call.input_keys(e) | tls.included) - tls.excluded));
  try {
    e.kernel_for(ks.highest(), tls)(call, ks);
  } catch (const Error& err) {
    // Errors raised by shared helpers carry no inputs: attach this call's.
    if (err.context().empty()) detail::rethrow_with_context(err, call);
    throw;
  } catch (const std::bad_alloc&) {
    detail::throw_out_of_memory(call);  // a host buffer a kernel needed (std::vector, ...)
  } catch (const std::length_error&) {
    detail::throw_out_of_memory(call);
  }
}

// The key set `call` would be dispatched with: (input keys | tls.included) -
// tls.excluded, masked by the keys that have kernels for the op. For tools and
// explanations; dispatch() computes the same inline.
inline DispatchKeySet dispatch_keys(const OpCall& call) {
  const OpEntry& e = op_entry(call.op);
  return ((call.input_keys(e) | tls_dispatch_keys.included) - tls_dispatch_keys.excluded) & e.mask;
}

// From inside the kernel of `current`: routes `call` to the next key below it.
inline void redispatch(OpCall& call, DispatchKeySet keys, DispatchKey current) {
  const OpEntry& e = op_entry(call.op);
  LocalDispatchKeys& tls = tls_dispatch_keys;
  ++tls.redispatches;
  const DispatchKeySet ks = keys & DispatchKeySet::below(current) & e.mask;
  if (MIXT_UNLIKELY(ks.empty())) detail::throw_no_kernel(call, keys & DispatchKeySet::below(current));
  e.kernel_for(ks.highest(), tls)(call, ks);
}

// Dispatches and returns out[0] (the common front-end pattern).
inline Tensor call_op(OpCall& call) {
  dispatch(call);
  return std::move(call.out[0]);
}

// Dispatches an in-place op on `self` (out[0] = self) and bumps its version.
// The bump comes first, so a layer that records the call (autograd) sees the
// version the tensor has after the write.
inline Tensor& call_inplace(OpCall& call, Tensor& self) {
  call.out[0] = self;
  self.bump_version();
  dispatch(call);
  return self;
}

}  // namespace mixt
