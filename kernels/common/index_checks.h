// Host-side checks of the indexing ops that need no index values (shapes, dims, dtypes),
// shared by the CPU and CUDA kernels so both refuse a call with the same mixt::Error.
// The index values themselves are checked by the kernels: on the CPU before anything is
// written, on CUDA through the device error word (Note [Device-side errors]).
// Host code only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::index_checks {

constexpr uint32_t kIndexDtypes = dtypes::bit(kInt32) | dtypes::bit(kInt64);

// `t` as a 1-D view of one element when it is 0-dim (PyTorch treats 0-dim operands of indexing ops so).
inline Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? make_view(t, {1}, {1}, t.storage_offset()) : t; }

// The index tensor is int32 or int64.
inline void check_index_dtype(const OpCall& c, const Tensor& index) {
  MIXT_CHECK_OP(dtypes::contains(kIndexDtypes, index.dtype()), c, "expects an int64 or int32 index tensor, got {}",
                index.dtype());
}

// index_select(self, dim, index): the wrapped dim (of self viewed as at least 1-D) and the result's sizes.
struct IndexSelectShape {
  int dim;
  Shape sizes;
};
inline IndexSelectShape check_index_select(const OpCall& c, const Tensor& self, const Tensor& index) {
  MIXT_CHECK_OP(index.dim() <= 1, c, "the index must be a vector (got {} dimensions)", index.dim());
  const int d =
      static_cast<int>(wrap_dim(c.attrs.get<attrs::Dim>().dim, std::max<int64_t>(self.dim(), 1), "index_select"));
  MIXT_CHECK_OP(self.dim() > 0 || index.numel() == 1, c, "an index into a 0-dim tensor has one value, got {}",
                index.numel());
  check_index_dtype(c, index);
  Shape sizes = self.sizes();
  if (self.dim() > 0) sizes[d] = index.numel();
  return {d, sizes};
}

// embedding(weight [N, D], indices): the result's sizes, indices.shape + [D].
inline Shape check_embedding(const OpCall& c, const Tensor& weight, const Tensor& indices) {
  MIXT_CHECK_OP(weight.dim() == 2, c, "the weight must be 2-D [num_embeddings, dim], got {} dimensions",
                weight.dim());
  const int64_t num = weight.sizes()[0];
  const std::optional<int64_t> pad = c.attrs.get<attrs::Embedding>().padding_idx;
  MIXT_CHECK_OP(!pad || (*pad >= 0 && *pad < num), c, "padding_idx {} is out of range for {} embeddings", *pad, num);
  MIXT_CHECK_OP(indices.dim() < kMaxDims, c, "indices of {} dimensions give a result beyond {} dimensions",
                indices.dim(), kMaxDims);
  check_index_dtype(c, indices);
  Shape sizes = indices.sizes();
  sizes.push_back(weight.sizes()[1]);
  return sizes;
}

// gather(self, dim, index) with both viewed as at least 1-D: the wrapped dim.
inline int check_gather(const OpCall& c, const Tensor& self1, const Tensor& index1) {
  const int d = static_cast<int>(wrap_dim(c.attrs.get<attrs::Dim>().dim, self1.dim(), "gather"));
  MIXT_CHECK_OP(index1.dim() == self1.dim(), c, "the index must have as many dimensions as the input ({} vs {})",
                index1.dim(), self1.dim());
  for (int k = 0; k < self1.dim(); ++k)
    MIXT_CHECK_OP(k == d || index1.sizes()[k] <= self1.sizes()[k], c,
                  "index size {} exceeds the input's size {} at dimension {} (other than dim {})", index1.sizes()[k],
                  self1.sizes()[k], k, d);
  check_index_dtype(c, index1);
  return d;
}

// scatter, scatter_, scatter_add, scatter_add_: in0 self, in1 index, in2 src (or a value attribute).
struct ScatterCall {
  int dim;
  bool has_src;
  Scalar value;      // when there is no src
  Tensor index, src;  // at least 1-D
};
inline ScatterCall check_scatter(const OpCall& c, bool add) {
  ScatterCall s;
  s.has_src = c.n_in > 2 && c.in[2].defined();
  // scatter_add's attributes are just the dim; scatter's add the value written without a src.
  const int64_t dim = add ? c.attrs.get<attrs::Dim>().dim : c.attrs.get<attrs::Scatter>().dim;
  s.value = add ? Scalar() : c.attrs.get<attrs::Scatter>().value;
  MIXT_CHECK_OP(s.has_src || s.value.has_value(), c, "expects a src tensor or a value");
  const Tensor& self_in = c.in[0];
  s.index = at_least_1d(c.in[1]);
  const int nd = static_cast<int>(std::max<int64_t>(self_in.dim(), 1));
  s.dim = static_cast<int>(wrap_dim(dim, nd, op_name(c.op).data()));
  MIXT_CHECK_OP(s.index.dim() == nd, c, "the index must have as many dimensions as self ({} vs {})", s.index.dim(),
                nd);
  if (s.has_src) {
    s.src = at_least_1d(c.in[2]);
    MIXT_CHECK_OP(s.src.dim() == nd, c, "src must have as many dimensions as self ({} vs {})", s.src.dim(), nd);
    MIXT_CHECK_OP(s.src.dtype() == self_in.dtype(), c, "self ({}) and src ({}) must have one dtype", self_in.dtype(),
                  s.src.dtype());
  }
  const Tensor self1 = at_least_1d(self_in);
  for (int k = 0; k < nd; ++k) {
    MIXT_CHECK_OP(k == s.dim || s.index.sizes()[k] <= self1.sizes()[k], c,
                  "index size {} exceeds self's size {} at dimension {} (other than dim {})", s.index.sizes()[k],
                  self1.sizes()[k], k, s.dim);
    MIXT_CHECK_OP(!s.has_src || s.index.sizes()[k] <= s.src.sizes()[k], c,
                  "index size {} exceeds src's size {} at dimension {}", s.index.sizes()[k], s.src.sizes()[k], k);
  }
  check_index_dtype(c, s.index);
  return s;
}

// The result of a scatter: self itself (in place), the caller's out[0], or a new tensor
// from make_new(); checked to be self's shape and dtype and writable.
template <class MakeNew>
Tensor scatter_output(const OpCall& c, MakeNew&& make_new) {
  const Tensor& self_in = c.in[0];
  const bool inplace = c.op == OpId::scatter_ || c.op == OpId::scatter_add_;
  Tensor out = c.out[0].defined() ? c.out[0] : inplace ? self_in : make_new();
  MIXT_CHECK_OP(out.sizes() == self_in.sizes() && out.dtype() == self_in.dtype(), c,
                "the output is {} but self is {}", out.describe(), self_in.describe());
  check_writable(c, out);
  return out;
}

// masked_fill(_): the bool mask broadcasts to self (in place: to self's shape); returns the result's shape.
inline Shape check_masked_fill(const OpCall& c) {
  const Tensor& self = c.in[0];
  const Tensor& mask = c.in[1];
  MIXT_CHECK_OP(mask.dtype() == kBool, c, "expects a bool mask, got {}", mask.dtype());
  MIXT_CHECK_OP(c.attrs.get<attrs::Value>().value.has_value(), c, "no fill value given");
  const Shape shape = broadcast_shapes(self.sizes(), mask.sizes(), op_name(c.op).data());
  MIXT_CHECK_OP(c.op != OpId::masked_fill_ || shape == self.sizes(), c,
                "the mask of shape {} does not broadcast to self's shape {}", mask.sizes(), self.sizes());
  return shape;
}

// masked_select: the bool mask and the input broadcast together; returns their shape.
inline Shape check_masked_select(const OpCall& c) {
  const Tensor &t = c.in[0], &mask = c.in[1];
  MIXT_CHECK_OP(mask.dtype() == kBool, c, "expects a bool mask, got {}", mask.dtype());
  try {
    return broadcast_shapes(t.sizes(), mask.sizes(), op_name(c.op).data());
  } catch (const Error&) {
    MIXT_FAIL_OP(c, "the mask of shape {} and the input of shape {} do not broadcast together", mask.sizes(),
                 t.sizes());
  }
}

// The result of masked_fill(_): self (in place), the caller's out[0], or make_new(shape); checked.
template <class MakeNew>
Tensor masked_fill_output(const OpCall& c, const Shape& shape, MakeNew&& make_new) {
  const Tensor& self = c.in[0];
  Tensor out = c.out[0].defined() ? c.out[0] : c.op == OpId::masked_fill_ ? self : make_new();
  MIXT_CHECK_OP(out.sizes() == shape && out.dtype() == self.dtype(), c, "the output is {} but the result is {}{}",
                out.describe(), self.dtype(), shape);
  check_writable(c, out);
  return out;
}

}  // namespace mixt::index_checks
