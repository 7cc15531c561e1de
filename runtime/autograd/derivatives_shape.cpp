// Backward formulas of views, copies, movement and indexing.
#include <mixt/runtime/autograd/derivatives.h>
#include <mixt/runtime/check.h>

namespace mixt::autograd {
namespace {

TensorOptions like(const TensorMeta& m) { return {.dtype = m.dtype, .device = m.device}; }

Grads view_bw(const BackwardContext& c, const Grads& g) { return {reshape(g[0], c.input_meta(0).sizes)}; }

Grads permute_bw(const BackwardContext& c, const Grads& g) {
  const Shape& dims = c.attrs().get<attrs::Dims>().dims;
  Shape inverse = Shape::filled(dims.size(), 0);
  for (int i = 0; i < dims.size(); ++i) inverse[static_cast<int>(wrap_dim(dims[i], dims.size(), "permute"))] = i;
  return {permute(g[0], inverse)};
}

Grads slice_bw(const BackwardContext& c, const Grads& g) {
  Tensor out = zeros(c.input_meta(0).sizes, like(c.input_meta(0)));
  const auto& a = c.attrs().get<attrs::Slice>();
  Tensor part = slice(out, a.dim, a.start, a.end, a.step);
  copy_(part, g[0]);
  return {out};
}

Grads select_bw(const BackwardContext& c, const Grads& g) {
  Tensor out = zeros(c.input_meta(0).sizes, like(c.input_meta(0)));
  Tensor part = select(out, c.attrs().get<attrs::Select>().dim, c.attrs().get<attrs::Select>().index);
  copy_(part, g[0]);
  return {out};
}

Grads expand_bw(const BackwardContext& c, const Grads& g) { return {sum_to(g[0], c.input_meta(0).sizes)}; }

Grads as_strided_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  MIXT_CHECK(x.is_contiguous(), "as_strided",
             "backward needs a contiguous input (call contiguous() before as_strided)");
  // Flat index of each output element in the input, then scatter-add into it.
  const auto& a = c.attrs().get<attrs::AsStrided>();
  const int64_t offset = a.storage_offset.value_or(x.storage_offset());
  const int64_t extent = static_cast<int64_t>(x.impl()->storage->nbytes) / x.element_size();
  Tensor positions = arange(extent);
  Tensor idx = as_strided(positions, a.sizes, a.strides, offset).reshape({-1});
  idx = sub(idx, x.storage_offset());
  Tensor flat = zeros({x.numel()}, like(c.input_meta(0)));
  flat = scatter_add(flat, 0, idx, reshape(g[0].to(x.dtype()), {-1}));
  return {reshape(flat, x.sizes())};
}

Grads clone_bw(const BackwardContext&, const Grads& g) { return {g[0]}; }

Grads copy_bw(const BackwardContext& c, const Grads& g) {
  // The destination's old values are overwritten: no gradient flows to them.
  return {Tensor(), sum_to(g[0], c.input_meta(1).sizes)};
}

Grads cat_bw(const BackwardContext& c, const Grads& g) {
  Grads out;
  int64_t dim = 0;
  for (size_t i = 0; i < c.list_size(); ++i) {
    const Shape& s = c.list_meta(static_cast<int>(i)).sizes;
    if (!(s.size() == 1 && s[0] == 0)) {
      dim = wrap_dim(c.attrs().get<attrs::Dim>().dim, s.size(), "cat");
      break;
    }
  }
  int64_t at = 0;
  for (size_t i = 0; i < c.list_size(); ++i) {
    const TensorMeta& m = c.list_meta(static_cast<int>(i));
    if (m.sizes.size() == 1 && m.sizes[0] == 0) {
      out.push_back(zeros(m.sizes, like(m)));
      continue;
    }
    out.push_back(narrow(g[0], dim, at, m.sizes[static_cast<int>(dim)]));
    at += m.sizes[static_cast<int>(dim)];
  }
  return out;
}

Grads stack_bw(const BackwardContext& c, const Grads& g) {
  Grads out;
  const int64_t dim = c.attrs().get<attrs::Dim>().dim;
  for (size_t i = 0; i < c.list_size(); ++i) out.push_back(select(g[0], dim, static_cast<int64_t>(i)));
  return out;
}

// Index tensor `index` (1-D, along `dim`) broadcast to `sizes` for scatter_add.
Tensor spread_index(const Tensor& index, int64_t dim, const Shape& sizes) {
  Shape view_shape = Shape::filled(sizes.size(), 1);
  view_shape[static_cast<int>(dim)] = index.numel();
  Tensor idx = index.to(kInt64);
  const int64_t n = sizes[static_cast<int>(dim)];
  idx = where(lt(idx, 0), add(idx, n), idx);
  return expand(reshape(idx, view_shape), sizes);
}

Grads index_select_bw(const BackwardContext& c, const Grads& g) {
  const TensorMeta& m = c.input_meta(0);
  const int64_t dim = wrap_dim(c.attrs().get<attrs::Dim>().dim, m.sizes.size(), "index_select");
  Tensor out = zeros(m.sizes, like(m));
  if (m.sizes.size() == 0) return {add(out, reshape(g[0], {}))};
  return {scatter_add(out, dim, spread_index(c.input(1), dim, g[0].sizes()), g[0]), Tensor()};
}

Grads gather_bw(const BackwardContext& c, const Grads& g) {
  const TensorMeta& m = c.input_meta(0);
  return {scatter_add(zeros(m.sizes, like(m)), c.attrs().get<attrs::Dim>().dim, c.input(1), g[0]), Tensor()};
}

// The gradient of a scatter's src from the values its index picked: a src larger
// than the index gets zeros past the index's extent.
Tensor src_grad(const Tensor& picked, const TensorMeta& m) {
  if (picked.sizes() == m.sizes) return picked;
  Tensor full_grad = zeros(m.sizes, like(m));
  Tensor region = full_grad;
  for (int d = 0; d < picked.dim(); ++d) region = narrow(region, d, 0, picked.sizes()[d]);
  copy_(region, picked);
  return full_grad;
}

Grads scatter_bw(const BackwardContext& c, const Grads& g) {
  const Tensor index = c.input(1);
  const int64_t dim = c.attrs().get<attrs::Scatter>().dim;
  Grads out{scatter(g[0], dim, index, Scalar(0)), Tensor()};
  if (c.num_inputs() > 2 && c.input_meta(2).dtype != ScalarType::Undefined && c.needs_grad(2)) {
    const TensorMeta& m = c.input_meta(2);
    out.push_back(src_grad(gather(g[0], dim, index), m));
  }
  return out;
}

Grads scatter_add_bw(const BackwardContext& c, const Grads& g) {
  const Tensor index = c.input(1);
  const TensorMeta& m = c.input_meta(2);
  return {g[0], Tensor(), src_grad(gather(g[0], c.attrs().get<attrs::Dim>().dim, index), m)};
}

Grads masked_fill_bw(const BackwardContext& c, const Grads& g) {
  return {masked_fill(g[0], c.input(1), Scalar(0)), Tensor()};
}

Grads where_bw(const BackwardContext& c, const Grads& g) {
  const Tensor cond = c.input(0);
  return {Tensor(), sum_to(where(cond, g[0], Scalar(0)), c.input_meta(1).sizes),
          sum_to(where(cond, Scalar(0), g[0]), c.input_meta(2).sizes)};
}

Grads embedding_bw(const BackwardContext& c, const Grads& g) {
  const TensorMeta& m = c.input_meta(0);
  const int64_t rows = m.sizes[0], width = m.sizes[1];
  Tensor idx = reshape(c.input(1).to(kInt64), {-1, 1});
  idx = where(lt(idx, 0), add(idx, rows), idx);
  Tensor out = zeros(m.sizes, like(m));
  out = scatter_add(out, 0, expand(idx, {idx.size(0), width}), reshape(g[0], {-1, width}));
  if (const auto pad_idx = c.attrs().get<attrs::Embedding>().padding_idx) {
    Tensor pad = select(out, 0, *pad_idx);
    zero_(pad);
  }
  return {out, Tensor()};
}

Grads to_bw(const BackwardContext&, const Grads& g) { return {g[0]}; }

// masked_select: the gradient goes back to the selected positions of the broadcast input,
// then sums over the broadcast dims.
Grads masked_select_bw(const BackwardContext& c, const Grads& g) {
  const TensorMeta& m = c.input_meta(0);
  const Tensor mask = c.input(1);
  const Shape shape = broadcast_shapes(m.sizes, mask.sizes(), "masked_select");
  const Tensor positions = reshape(nonzero(reshape(expand(mask, shape), {-1})), {-1});
  const Tensor flat = scatter(zeros({shape.numel()}, like(m)), 0, positions, g[0].to(m.dtype));
  return {sum_to(reshape(flat, shape), m.sizes), Tensor()};
}

// sort and topk: each value's gradient goes back to where it came from (out1, the indices).
Grads sorted_values_bw(const BackwardContext& c, const Grads& g) {
  const TensorMeta& m = c.input_meta(0);
  if (!g[0].defined()) return {Tensor()};
  if (m.sizes.size() == 0) return {reshape(g[0], {})};
  const int64_t dim = c.op() == OpId::topk ? c.attrs().get<attrs::Topk>().dim : c.attrs().get<attrs::Sort>().dim;
  return {scatter(zeros(m.sizes, like(m)), wrap_dim(dim, m.sizes.size(), "sort"), c.output(1), g[0].to(m.dtype))};
}

}  // namespace

void register_shape_derivatives() {
  define_derivative(OpId::view, {view_bw});
  define_derivative(OpId::permute, {permute_bw});
  define_derivative(OpId::slice, {slice_bw});
  define_derivative(OpId::select, {select_bw});
  define_derivative(OpId::expand, {expand_bw});
  define_derivative(OpId::squeeze, {view_bw});
  define_derivative(OpId::unsqueeze, {view_bw});
  define_derivative(OpId::as_strided, {as_strided_bw, in0});
  define_derivative(OpId::clone, {clone_bw});
  define_derivative(OpId::copy_, {copy_bw});
  define_derivative(OpId::to, {to_bw});
  define_derivative(OpId::cat, {cat_bw});
  define_derivative(OpId::stack, {stack_bw});
  define_derivative(OpId::index_select, {index_select_bw, in1});
  define_derivative(OpId::gather, {gather_bw, in1});
  define_derivative(OpId::scatter, {scatter_bw, in1});
  define_derivative(OpId::scatter_, {scatter_bw, in1});
  define_derivative(OpId::scatter_add, {scatter_add_bw, in1});
  define_derivative(OpId::scatter_add_, {scatter_add_bw, in1});
  define_derivative(OpId::masked_fill, {masked_fill_bw, in1});
  define_derivative(OpId::masked_fill_, {masked_fill_bw, in1});
  define_derivative(OpId::where, {where_bw, in0});
  define_derivative(OpId::embedding, {embedding_bw, in1});
  define_derivative(OpId::masked_select, {masked_select_bw, in1});
  define_derivative(OpId::sort, {sorted_values_bw, 0, out1});
  define_derivative(OpId::topk, {sorted_values_bw, 0, out1});
}

}  // namespace mixt::autograd
