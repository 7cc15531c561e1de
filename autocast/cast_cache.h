// The cast cache: down-casts of float32 leaf tensors that require grad
// (parameters), keyed by tensor identity and target dtype, dropped when the
// source's version moves. See Note [Cast cache].
#pragma once

#include <mixt/runtime/tensor.h>

namespace mixt::autocast {

// True when a cast of `t` to `to` may be cached: caching is on (State::cache_enabled),
// `to` is the device's low dtype and `t` a float32 parameter (a leaf requiring grad, not a view).
bool cacheable(const Tensor& t, ScalarType to, ScalarType device_lower_dtype, bool cache_enabled);
// `t` cast to `to`, from the cache when cacheable (hit) or made and stored (miss).
// `hit` reports which (false for uncached casts).
Tensor cached_cast(const Tensor& t, ScalarType to, bool use_cache, bool* hit);

}  // namespace mixt::autocast
