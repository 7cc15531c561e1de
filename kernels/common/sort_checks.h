// Host-side checks of the sorting ops (sort, argsort, topk), shared by their CPU kernels
// and meta rules so both refuse a call with the same mixt::Error. Host code only.
#pragma once

#include <algorithm>
#include <cstdint>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>

namespace mixt::sort_checks {

// The dim sorted along, wrapped over t viewed as at least 1-D (a 0-dim tensor sorts as one element).
inline int sort_dim(const OpCall& c, const Tensor& t, int64_t dim) {
  return static_cast<int>(wrap_dim(dim, std::max<int64_t>(t.dim(), 1), op_name(c.op).data()));
}

// topk: the result's sizes (k at the wrapped dim); k must lie in [0, size of that dim].
inline Shape topk_sizes(const OpCall& c, const Tensor& t) {
  const auto& a = c.attrs.get<attrs::Topk>();
  const int d = sort_dim(c, t, a.dim);
  const int64_t len = t.dim() == 0 ? 1 : t.sizes()[d];
  MIXT_CHECK_OP(t.dim() > 0 || a.k == 1, c, "k must be 1 for a 0-dim input, got {}", a.k);
  MIXT_CHECK_OP(a.k >= 0 && a.k <= len, c, "k ({}) is out of range for dimension {} of size {} (input shape {})", a.k,
                d, len, t.sizes());
  Shape sizes = t.sizes();
  if (t.dim() > 0) sizes[d] = a.k;
  return sizes;
}

}  // namespace mixt::sort_checks
