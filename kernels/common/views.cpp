// View kernels: they compute new geometry over the same storage, so one kernel
// serves every backend.
#include <algorithm>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/register.h>
#include <mixt/runtime/checked.h>

namespace mixt {
namespace {

void set_view(OpCall& c, const Shape& sizes, const Shape& strides, int64_t offset,
              ScalarType dtype = ScalarType::Undefined) {
  c.out[0] = make_view(c.in[0], sizes, strides, offset, dtype);
  c.out[0].impl()->is_view = true;
}

void view_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  const Shape shape = infer_size(c.attrs.get<attrs::Sizes>().sizes, t.numel(), "view");
  auto st = view_strides(t.sizes(), t.strides(), shape);
  MIXT_CHECK_OP(st.has_value(), c,
                "shape {} cannot view this tensor's memory (strides {}): use reshape(), which copies", shape,
                t.strides());
  set_view(c, shape, *st, t.storage_offset());
}

void permute_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  const Shape& dims = c.attrs.get<attrs::Dims>().dims;
  MIXT_CHECK_OP(dims.size() == t.dim(), c, "{} given for a tensor of {}", detail::counted(dims.size(), "dim"),
                detail::counted(t.dim(), "dimension"));
  Shape sizes, strides;
  bool seen[kMaxDims] = {};
  for (int i = 0; i < dims.size(); ++i) {
    const int d = static_cast<int>(wrap_dim(dims[i], t.dim(), "permute"));
    MIXT_CHECK_OP(!seen[d], c, "dims {} repeat dimension {}", dims, d);
    seen[d] = true;
    sizes.push_back(t.sizes()[d]);
    strides.push_back(t.strides()[d]);
  }
  set_view(c, sizes, strides, t.storage_offset());
}

void slice_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  MIXT_CHECK_OP(t.dim() > 0, c, "cannot slice a 0-dim tensor");
  const auto& a = c.attrs.get<attrs::Slice>();
  const int d = static_cast<int>(wrap_dim(a.dim, t.dim(), "slice"));
  const int64_t n = t.sizes()[d], step = a.step;
  MIXT_CHECK_OP(step > 0, c, "slice step must be positive (got {})", step);
  int64_t start = a.start, end = a.end;
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape sizes = t.sizes(), strides = t.strides();
  sizes[d] = end == start ? 0 : (end - start - 1) / step + 1;  // no `+ step`: step may be INT64_MAX
  // A dim of one element keeps its stride: step * stride may not fit, and is never used.
  if (sizes[d] > 1) strides[d] = checked_mul(strides[d], step, "slice");
  set_view(c, sizes, strides, t.storage_offset() + start * t.strides()[d]);
}

void select_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  MIXT_CHECK_OP(t.dim() > 0, c, "cannot select from a 0-dim tensor");
  const auto& a = c.attrs.get<attrs::Select>();
  const int d = static_cast<int>(wrap_dim(a.dim, t.dim(), "select"));
  const int64_t n = t.sizes()[d];
  int64_t i = a.index;
  MIXT_CHECK_OP(i >= -n && i < n, c, "index {} is out of range for dimension {} of size {}", i, d, n);
  if (i < 0) i += n;
  Shape sizes = t.sizes(), strides = t.strides();
  sizes.erase(d);
  strides.erase(d);
  set_view(c, sizes, strides, t.storage_offset() + i * t.strides()[d]);
}

void expand_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  const Shape& target = c.attrs.get<attrs::Sizes>().sizes;
  MIXT_CHECK_OP(target.size() >= t.dim(), c, "cannot expand {} dimensions to the {} of {}", t.dim(),
                target.size(), target);
  Shape sizes, strides;
  sizes.resize(target.size());
  strides.resize(target.size());
  const int lead = target.size() - static_cast<int>(t.dim());
  for (int i = 0; i < target.size(); ++i) {
    if (i < lead) {
      MIXT_CHECK_OP(target[i] >= 0, c, "new leading dimension {} of {} must be non-negative", i, target);
      sizes[i] = target[i];
      strides[i] = 0;
      continue;
    }
    const int64_t have = t.sizes()[i - lead];
    const int64_t want = target[i] == -1 ? have : target[i];
    MIXT_CHECK_OP(want == have || have == 1, c, "cannot expand size {} to {} at dimension {} (target {})", have,
                  want, i, target);
    sizes[i] = want;
    strides[i] = want == have ? t.strides()[i - lead] : 0;
  }
  set_view(c, sizes, strides, t.storage_offset());
}

void squeeze_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  bool drop[kMaxDims] = {};
  const Shape& dims = c.attrs.get<attrs::Dims>().dims;
  if (dims.empty()) {
    for (int d = 0; d < t.dim(); ++d) drop[d] = t.sizes()[d] == 1;
  } else {
    for (int64_t dim : dims) {
      if (t.dim() == 0) {
        wrap_dim(dim, 0, "squeeze");
        continue;
      }
      const int d = static_cast<int>(wrap_dim(dim, t.dim(), "squeeze"));
      drop[d] = t.sizes()[d] == 1;
    }
  }
  Shape sizes, strides;
  for (int d = 0; d < t.dim(); ++d) {
    if (drop[d]) continue;
    sizes.push_back(t.sizes()[d]);
    strides.push_back(t.strides()[d]);
  }
  set_view(c, sizes, strides, t.storage_offset());
}

void unsqueeze_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  const int d = static_cast<int>(wrap_dim(c.attrs.get<attrs::Dim>().dim, t.dim() + 1, "unsqueeze"));
  MIXT_CHECK_OP(t.dim() < kMaxDims, c, "a tensor of {} dimensions cannot gain another (at most {})", t.dim(),
                kMaxDims);
  Shape sizes = t.sizes(), strides = t.strides();
  // The new dim has one element, so its stride is free: the usual size * stride, or 1 when that overflows.
  int64_t stride = 1;
  if (d < t.dim() && __builtin_mul_overflow(t.strides()[d], t.sizes()[d], &stride)) stride = 1;
  sizes.insert(d, 1);
  strides.insert(d, stride);
  set_view(c, sizes, strides, t.storage_offset());
}

void as_strided_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  const auto& a = c.attrs.get<attrs::AsStrided>();
  const Shape& sizes = a.sizes;
  const Shape& strides = a.strides;
  MIXT_CHECK_OP(sizes.size() == strides.size(), c, "sizes {} and strides {} differ in length", sizes, strides);
  const int64_t offset = a.storage_offset.value_or(t.storage_offset());
  checked_numel(sizes, "as_strided");
  const int64_t end = checked_extent(sizes, strides, offset, "as_strided");
  const int64_t capacity = static_cast<int64_t>(t.impl()->storage->nbytes) / t.element_size();
  MIXT_CHECK_OP(end == offset || end <= capacity, c,
                "sizes {} strides {} at offset {} reach element {}, beyond the storage's {} elements", sizes,
                strides, offset, end - 1, capacity);
  set_view(c, sizes, strides, offset);
}

// Note [Bit-cast views]: view(dtype) reads the same bytes as another dtype. With
// equal element sizes only the dtype changes. Otherwise the last dimension (stride
// 1) is regrouped: its size, the offset and the other strides scale by the ratio of
// the element sizes, and each must be divisible by it when elements grow. A stride
// no element uses (of a size-1 dim, or of an empty tensor) is rescaled without a
// check, as is an empty tensor's offset. The first element must be aligned for the
// new dtype (memory from from_blob may not be). bool is only viewed from bool:
// other bytes may hold values other than 0 and 1. Not differentiable, as in
// PyTorch: the result never requires grad.
void view_dtype_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  const ScalarType to = c.attrs.dtype;
  MIXT_CHECK_OP(to != ScalarType::Undefined, c, "no dtype given");
  MIXT_CHECK_OP(to != kBool || t.dtype() == kBool, c,
                "cannot view {} as bool: its bytes may hold values other than 0 and 1 (compare with ne(t, 0))",
                t.dtype());
  const int64_t from_size = t.element_size(), to_size = element_size(to);
  Shape sizes = t.sizes(), strides = t.strides();
  int64_t offset = t.storage_offset();
  if (from_size != to_size) {
    MIXT_CHECK_OP(t.dim() > 0, c, "cannot view a 0-dim {} tensor as {}: the element sizes differ ({} and {} bytes)",
                  t.dtype(), to, from_size, to_size);
    const int last = static_cast<int>(t.dim()) - 1;
    MIXT_CHECK_OP(strides[last] == 1, c,
                  "cannot view {}{} with strides {} as {}: the element sizes differ ({} and {} bytes), so the last "
                  "dimension must have stride 1", t.dtype(), sizes, strides, to, from_size, to_size);
    const bool empty = t.numel() == 0;
    auto unused = [&](int d) { return empty || sizes[d] == 1; };  // a stride no element uses
    if (from_size > to_size) {  // each element splits into `ratio` elements
      const int64_t ratio = from_size / to_size;
      sizes[last] = checked_mul(sizes[last], ratio, "view_dtype");
      offset = checked_mul(offset, ratio, "view_dtype");
      for (int d = 0; d < last; ++d) {
        if (!unused(d)) strides[d] = checked_mul(strides[d], ratio, "view_dtype");
        else if (__builtin_mul_overflow(strides[d], ratio, &strides[d])) strides[d] = 1;
      }
    } else {  // every `ratio` elements merge into one
      const int64_t ratio = to_size / from_size;
      auto scaled = [&](int64_t v, const char* what) {
        MIXT_CHECK_OP(v % ratio == 0, c,
                      "cannot view {}{} (strides {}, offset {}) as {} ({} bytes per element, {} per {}): {} {} is "
                      "not divisible by {}", t.dtype(), t.sizes(), t.strides(), t.storage_offset(), to, to_size,
                      from_size, t.dtype(), what, v, ratio);
        return v / ratio;
      };
      sizes[last] = scaled(sizes[last], "the last dimension's size");
      offset = empty ? offset / ratio : scaled(offset, "the storage offset");
      for (int d = 0; d < last; ++d) strides[d] = unused(d) ? strides[d] / ratio : scaled(strides[d], "a stride");
    }
  }
  const auto address = reinterpret_cast<uintptr_t>(t.data_ptr());
  MIXT_CHECK_OP(address % static_cast<uintptr_t>(to_size) == 0, c,
                "cannot view {} as {}: the data address {} is not aligned to {} bytes", t.dtype(), to,
                t.data_ptr(), to_size);
  set_view(c, sizes, strides, offset, to);
}

}  // namespace

void register_view_kernels() {
  register_backend_kernel(OpId::view, view_kernel);
  register_backend_kernel(OpId::permute, permute_kernel);
  register_backend_kernel(OpId::slice, slice_kernel);
  register_backend_kernel(OpId::select, select_kernel);
  register_backend_kernel(OpId::expand, expand_kernel);
  register_backend_kernel(OpId::squeeze, squeeze_kernel);
  register_backend_kernel(OpId::unsqueeze, unsqueeze_kernel);
  register_backend_kernel(OpId::as_strided, as_strided_kernel);
  register_backend_kernel(OpId::view_dtype, view_dtype_kernel);
}

}  // namespace mixt
