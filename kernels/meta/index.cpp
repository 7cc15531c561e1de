// Meta rules of the indexing ops. Index values are data, so their bounds are checked
// only by the kernels; the meta rules check what the shapes and dtypes decide.
#include <algorithm>

#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/sort_checks.h>
#include <mixt/kernels/meta/rules.h>

namespace mixt::meta {
namespace {

void check_index_dtype(const OpCall& c, const Tensor& index) {
  MIXT_CHECK_OP(index.dtype() == kInt64 || index.dtype() == kInt32, c,
                "expects an int64 or int32 index tensor, got {}", index.dtype());
}

// The sizes of `t` as a 1-D tensor when it is 0-dim (indexing ops treat 0-dim operands so).
Shape at_least_1d(const Tensor& t) { return t.dim() == 0 ? Shape{1} : t.sizes(); }

}  // namespace

void index_select(const OpCall& c, OutputMeta* out) {
  const Tensor &self = c.in[0], &index = c.in[1];
  check_index_dtype(c, index);
  MIXT_CHECK_OP(index.dim() <= 1, c, "the index must be a vector (got {} dimensions)", index.dim());
  const int d =
      static_cast<int>(wrap_dim(c.attrs.get<attrs::Dim>().dim, std::max<int64_t>(self.dim(), 1), "index_select"));
  MIXT_CHECK_OP(self.dim() > 0 || index.numel() == 1, c, "an index into a 0-dim tensor has one value, got {}",
                index.numel());
  Shape sizes = self.sizes();
  if (self.dim() > 0) sizes[d] = index.numel();
  out[0] = {sizes, self.dtype()};
}

void gather(const OpCall& c, OutputMeta* out) {
  const Tensor &self = c.in[0], &index = c.in[1];
  check_index_dtype(c, index);
  const Shape s = at_least_1d(self), i = at_least_1d(index);
  const int d = static_cast<int>(wrap_dim(c.attrs.get<attrs::Dim>().dim, s.size(), "gather"));
  MIXT_CHECK_OP(i.size() == s.size(), c, "the index must have as many dimensions as the input ({} vs {})", i.size(),
                s.size());
  for (int k = 0; k < s.size(); ++k)
    MIXT_CHECK_OP(k == d || i[k] <= s[k], c,
                  "index size {} exceeds the input's size {} at dimension {} (other than dim {})", i[k], s[k], k, d);
  out[0] = {index.sizes(), self.dtype()};
}

// scatter, scatter_, scatter_add, scatter_add_: self's shape and dtype.
void scatter(const OpCall& c, OutputMeta* out) {
  const bool add = c.op == OpId::scatter_add || c.op == OpId::scatter_add_;
  const bool has_src = c.n_in > 2 && c.in[2].defined();
  const int64_t dim = add ? c.attrs.get<attrs::Dim>().dim : c.attrs.get<attrs::Scatter>().dim;
  MIXT_CHECK_OP(has_src || (!add && c.attrs.get<attrs::Scatter>().value.has_value()), c,
                "expects a src tensor or a value");
  const Tensor &self = c.in[0], &index = c.in[1];
  check_index_dtype(c, index);
  const Shape s = at_least_1d(self), i = at_least_1d(index);
  const int nd = s.size();
  const int d = static_cast<int>(wrap_dim(dim, nd, op_name(c.op).data()));
  MIXT_CHECK_OP(i.size() == nd, c, "the index must have as many dimensions as self ({} vs {})", i.size(), nd);
  const Shape src = has_src ? at_least_1d(c.in[2]) : Shape{};
  if (has_src) {
    MIXT_CHECK_OP(src.size() == nd, c, "src must have as many dimensions as self ({} vs {})", src.size(), nd);
    MIXT_CHECK_OP(c.in[2].dtype() == self.dtype(), c, "self ({}) and src ({}) must have one dtype", self.dtype(),
                  c.in[2].dtype());
  }
  for (int k = 0; k < nd; ++k) {
    MIXT_CHECK_OP(k == d || i[k] <= s[k], c, "index size {} exceeds self's size {} at dimension {} (other than dim {})",
                  i[k], s[k], k, d);
    MIXT_CHECK_OP(!has_src || i[k] <= src[k], c, "index size {} exceeds src's size {} at dimension {}", i[k], src[k],
                  k);
  }
  out[0] = {self.sizes(), self.dtype()};
}

void masked_fill(const OpCall& c, OutputMeta* out) {
  const Tensor &self = c.in[0], &mask = c.in[1];
  MIXT_CHECK_OP(mask.dtype() == kBool, c, "expects a bool mask, got {}", mask.dtype());
  MIXT_CHECK_OP(c.attrs.get<attrs::Value>().value.has_value(), c, "no fill value given");
  const Shape shape = broadcast_shapes(self.sizes(), mask.sizes(), op_name(c.op).data());
  MIXT_CHECK_OP(c.op != OpId::masked_fill_ || shape == self.sizes(), c,
                "the mask of shape {} does not broadcast to self's shape {}", mask.sizes(), self.sizes());
  out[0] = {shape, self.dtype()};
}

void embedding(const OpCall& c, OutputMeta* out) {
  const Tensor &weight = c.in[0], &indices = c.in[1];
  MIXT_CHECK_OP(weight.dim() == 2, c, "the weight must be 2-D [num_embeddings, dim], got {} dimensions", weight.dim());
  const std::optional<int64_t> pad = c.attrs.get<attrs::Embedding>().padding_idx;
  MIXT_CHECK_OP(!pad || (*pad >= 0 && *pad < weight.size(0)), c, "padding_idx {} is out of range for {} embeddings",
                *pad, weight.size(0));
  MIXT_CHECK_OP(indices.dim() < kMaxDims, c, "indices of {} dimensions give a result beyond {} dimensions",
                indices.dim(), kMaxDims);
  check_index_dtype(c, indices);
  Shape sizes = indices.sizes();
  sizes.push_back(weight.size(1));
  out[0] = {sizes, weight.dtype()};
}

// nonzero, masked_select, unique: how many elements the result has is in the values, which
// meta tensors do not have (PyTorch's meta kernels refuse them too).
void data_dependent(const OpCall& c, OutputMeta*) {
  MIXT_FAIL_OP(c, "the size of its result depends on the input's values, which meta tensors do not have "
                  "(inputs {})", c.in[0].sizes());
}

// sort: values (the input's shape and dtype) and int64 indices; argsort: the indices.
void sort(const OpCall& c, OutputMeta* out) {
  const Tensor& t = c.in[0];
  sort_checks::sort_dim(c, t, c.attrs.get<attrs::Sort>().dim);
  if (c.op == OpId::argsort) {
    out[0] = {t.sizes(), kInt64};
    return;
  }
  out[0] = {t.sizes(), t.dtype()};
  out[1] = {t.sizes(), kInt64};
}

void topk(const OpCall& c, OutputMeta* out) {
  const Shape sizes = sort_checks::topk_sizes(c, c.in[0]);
  out[0] = {sizes, c.in[0].dtype()};
  out[1] = {sizes, kInt64};
}

}  // namespace mixt::meta
