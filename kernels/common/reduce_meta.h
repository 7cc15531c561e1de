// Backend-independent parts of the reductions, scans, softmax and normalizations: which dims are reduced,
// the result's shape, and the result dtype of each op (PyTorch's rules). Host
// code only (errors are formatted with fmt): a CUDA backend calls these from its
// .cpp launchers, never from .cu files.
#pragma once

#include <cstdint>
#include <limits>

#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/reduce_geometry.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/tensor.h>

namespace mixt {

struct ReduceSpec {
  uint32_t mask = 0;          // bit d set: dimension d is reduced
  Shape out_sizes;            // the result's sizes (keepdim applied)
  int64_t reduced_numel = 1;  // elements folded into each output
};

// Wraps and validates `dims` (empty: every dim; negative: from the end; no repeats)
// for an input of `sizes`; errors name the op of `call` and describe its inputs.
inline ReduceSpec make_reduce_spec(const OpCall& call, const Shape& sizes, const Shape& dims, bool keepdim) {
  ReduceSpec s;
  const int nd = sizes.size();
  const int64_t n = nd > 0 ? nd : 1;  // a 0-dim tensor accepts dim 0 and -1
  if (dims.empty()) {
    s.mask = nd > 0 ? (1u << nd) - 1u : 0u;
  } else {
    uint32_t seen = 0;
    for (int64_t d : dims) {
      MIXT_CHECK_OP(d >= -n && d < n, call, "dimension {} is out of range for a tensor of {}", d,
                    detail::counted(nd, "dimension"));
      const int w = static_cast<int>(d < 0 ? d + n : d);
      MIXT_CHECK_OP(!(seen & (1u << w)), call, "dimension {} appears more than once in the dims {}", w, dims);
      seen |= 1u << w;
    }
    s.mask = nd > 0 ? seen : 0u;
  }
  for (int d = 0; d < nd; ++d) {
    if (s.mask & (1u << d)) {
      s.reduced_numel *= sizes[d];
      if (keepdim) s.out_sizes.push_back(1);
    } else {
      s.out_sizes.push_back(sizes[d]);
    }
  }
  return s;
}

// `in`'s geometry split by `mask` into kept and reduced dims (reduce_geometry.h). An empty
// input reads nothing: only the output's extent matters, and its strides (and the
// products of its other sizes) are not bounded by any storage.
inline ReduceGeometry make_reduce_geometry(const Tensor& in, uint32_t mask) {
  if (in.numel() == 0) {
    ReduceGeometry g;
    Shape kept;
    for (int d = 0; d < in.dim(); ++d)
      if (!(mask & (1u << d))) kept.push_back(in.sizes()[d]);
    g.out_numel = checked_numel(kept, "reduction");
    g.red_numel = 0;
    return g;
  }
  // Strides are bounded: the storage covers the view.
  return make_reduce_geometry(in.dim(), in.sizes().data(), in.strides().data(), in.element_size(), mask);
}

// Result dtype of sum, prod, cumsum and cumprod: `requested` when given, else
// int64 for integer and bool inputs, else the input's dtype.
inline ScalarType sum_result_dtype(ScalarType in, ScalarType requested) {
  if (requested != ScalarType::Undefined) return requested;
  return is_floating(in) ? in : kInt64;
}

// Result dtype of mean, var, std and norm: `requested` or the input's; both must be
// floating (PyTorch refuses to infer a floating dtype for these).
inline ScalarType floating_result_dtype(const OpCall& call, ScalarType in, ScalarType requested) {
  if (requested != ScalarType::Undefined) {
    MIXT_CHECK_OP(is_floating(requested), call, "the requested dtype must be floating, got {}", requested);
    return requested;
  }
  MIXT_CHECK_OP(is_floating(in), call, "expected a floating input (or a floating dtype= argument), got {}", in);
  return in;
}

// Result dtype of logsumexp: integer and bool inputs give float32.
inline ScalarType logsumexp_result_dtype(ScalarType in) { return is_floating(in) ? in : kFloat32; }

// Raises the error of max-like ops (amax, amin, max, min, argmax, argmin) over an empty
// reduced extent.
inline void check_reduce_nonempty(const OpCall& call, const ReduceSpec& spec) {
  MIXT_CHECK_OP(spec.reduced_numel > 0, call,
                "cannot reduce over a zero-size dimension (the operation has no identity); specify a dim that is "
                "not empty");
}

// The scanned dim of cumsum / cumprod for an input of `ndim` dims, wrapped (a 0-dim
// tensor accepts 0 and -1).
inline int scan_dim(const OpCall& call, int64_t dim, int64_t ndim) {
  const int64_t n = ndim > 0 ? ndim : 1;
  MIXT_CHECK_OP(dim >= -n && dim < n, call, "dimension {} is out of range for a tensor of {}", dim,
                detail::counted(ndim, "dimension"));
  return static_cast<int>(dim < 0 ? dim + n : dim);
}

// softmax / log_softmax: dtype= (when given) is floating, and so is the input unless
// dtype= converts it.
inline void check_softmax_dtypes(const OpCall& call, ScalarType in, ScalarType requested) {
  MIXT_CHECK_OP(requested == ScalarType::Undefined || is_floating(requested), call,
                "dtype must be a floating type, got {}", requested);
  MIXT_CHECK_OP(is_floating(in) || requested != ScalarType::Undefined, call,
                "expected a floating input, got {} (pass a floating dtype to convert it first)", in);
}

// rms_norm's default eps: the machine epsilon of `t` (as torch.finfo(dtype).eps).
inline double rms_norm_default_eps(ScalarType t) {
  switch (t) {
    case kFloat64: return std::numeric_limits<double>::epsilon();
    case kFloat16: return 0x1p-10;
    case kBFloat16: return 0x1p-7;
    case kFloat8_e4m3fn: return 0x1p-3;
    case kFloat8_e5m2: return 0x1p-2;
    default: return std::numeric_limits<float>::epsilon();
  }
}

}  // namespace mixt
