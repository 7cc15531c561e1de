// index_add and index_put as composites of the scatters (one kernel for every backend;
// autograd differentiates through the scatters). Repeated indices add up in index order,
// as scatter_add orders them (Note [Ordered scatter]). Index values are checked here,
// naming the op, before anything is computed (tensors with values only: meta has none).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/composite/register.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

void check_index_dtype(const OpCall& c, const Tensor& index) {
  MIXT_CHECK_OP(index.dtype() == kInt64 || index.dtype() == kInt32, c, "expects int64 or int32 indices, got {}",
                index.dtype());
}

// `index` as int64 with negative values counted from the end of a dim of `size`; raises
// when a value lies outside [-size, size).
Tensor wrapped_index(const OpCall& c, const Tensor& index, int64_t size, int64_t dim) {
  const Tensor idx = index.to(kInt64);
  if (!idx.is_meta() && idx.numel() > 0) {
    const int64_t lo = amin(idx).item<int64_t>(), hi = amax(idx).item<int64_t>();
    MIXT_CHECK_OP(lo >= -size && hi < size, c, "index {} is out of bounds for dimension {} with size {}",
                  lo < -size ? lo : hi, dim, size);
  }
  return where(lt(idx, 0), add(idx, size), idx);
}

// self + alpha * source at the slices `index` along dim: one scatter_add with the index
// spread over source's shape.
void index_add_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &self = c.in[0], &index = c.in[1], &source = c.in[2];
  const auto& a = c.attrs.get<attrs::IndexAdd>();
  MIXT_CHECK_OP(index.dim() <= 1, c, "the index must be a vector, got shape {}", index.sizes());
  check_index_dtype(c, index);
  MIXT_CHECK_OP(self.dtype() == source.dtype(), c, "self ({}) and source ({}) must have one dtype", self.dtype(),
                source.dtype());
  const Tensor self1 = self.dim() == 0 ? self.reshape({1}) : self;
  const Tensor source1 = source.dim() == 0 ? source.reshape({1}) : source;
  const int d = static_cast<int>(wrap_dim(a.dim, self1.dim(), "index_add"));
  Shape want = self1.sizes();
  want[d] = index.numel();
  MIXT_CHECK_OP(source1.sizes() == want, c,
                "source of shape {} does not match self of shape {} with {} indices along dim {} (expected {})",
                source.sizes(), self.sizes(), index.numel(), d, want);
  const Tensor idx = wrapped_index(c, index, self1.size(d), d);
  Shape spread = Shape::filled(self1.dim(), 1);
  spread[d] = index.numel();
  const bool scaled = !(a.alpha.has_value() && a.alpha.to<double>() == 1.0);
  const Tensor src = scaled ? mul(source1, a.alpha) : source1;
  c.out[0] = scatter_add(self1, d, expand(reshape(idx, spread), want), src).reshape(self.sizes());
}

// self with values written (or added) at the positions the index list addresses in self's
// leading dims: self viewed as [M, R] (M the indexed positions, R the rest), one scatter
// of the rows values [N, R] to the flat positions of the N broadcast indices.
void index_put_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &self = c.in[0], &values = c.in[1];
  const std::span<const Tensor> indices = c.list;
  const int k = static_cast<int>(indices.size());
  MIXT_CHECK_OP(k > 0, c, "expected at least one index tensor");
  MIXT_CHECK_OP(k <= self.dim(), c, "too many indices ({}) for self of shape {}", k, self.sizes());
  MIXT_CHECK_OP(values.dtype() == self.dtype(), c, "values ({}) and self ({}) must have one dtype", values.dtype(),
                self.dtype());
  Shape batch = indices[0].sizes();
  for (const Tensor& i : indices) {
    check_index_dtype(c, i);
    try {
      batch = broadcast_shapes(batch, i.sizes(), "index_put");
    } catch (const Error&) {
      MIXT_FAIL_OP(c, "the index shapes {} and {} do not broadcast together", batch, i.sizes());
    }
  }
  Shape rest;
  for (int d = k; d < self.dim(); ++d) rest.push_back(self.sizes()[d]);
  int64_t positions = 1;
  for (int d = 0; d < k; ++d) positions = checked_mul(positions, self.sizes()[d], "index_put");
  // The flat position of each index tuple among the M = positions leading entries.
  Tensor flat = zeros(batch, {.dtype = kInt64, .device = self.device()});
  for (int d = 0; d < k; ++d) flat = add(mul(flat, self.sizes()[d]), wrapped_index(c, indices[d], self.sizes()[d], d));
  Shape target = batch;
  for (int64_t s : rest) target.push_back(s);
  bool fits = values.dim() <= target.size();
  for (int i = 1; fits && i <= values.dim(); ++i) {
    const int64_t v = values.sizes()[values.dim() - i], t = target[target.size() - i];
    fits = v == t || v == 1;
  }
  MIXT_CHECK_OP(fits, c, "values of shape {} do not broadcast to the indexed shape {}", values.sizes(), target);
  const int64_t n = batch.numel(), r = rest.numel();
  const Tensor rows = expand(values, target).reshape({n, r});
  const Tensor where_to = expand(flat.reshape({n, 1}), {n, r});
  const Tensor self2 = self.reshape({positions, r});
  const Tensor out = c.attrs.get<attrs::IndexPut>().accumulate ? scatter_add(self2, 0, where_to, rows)
                                                               : scatter(self2, 0, where_to, rows);
  c.out[0] = out.reshape(self.sizes());
}

}  // namespace

void register_index_composite_kernels() {
  register_composite(OpId::index_add, index_add_kernel);
  register_composite(OpId::index_put, index_put_kernel);
}

}  // namespace mixt
