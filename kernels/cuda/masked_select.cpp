// masked_select and nonzero on CUDA: the selected elements are marked, ranked by an
// inclusive prefix sum (cumsum's kernel), counted on the host (a wait for the device: the
// result's size depends on the data, as on the CPU) and written in row-major order, the
// CPU kernels' results (kernels/cpu/masked_select.cpp). NaN is nonzero, -0.0 is zero.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/index_checks.h>
#include <mixt/kernels/cuda/factory.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/sort_launch.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {
namespace {

// The selected rows of `a` over the dense 1-D bool `selected`: a 1-D tensor of the
// selected values of a.src in `dtype` (masked_select), or [rows, a.ndim] int64
// coordinates when a.src is null (nonzero).
Tensor compact(const OpCall& c, CompactArgs a, const Tensor& selected, ScalarType dtype, const Device& device,
               cudaStream_t stream) {
  const char* op = op_name(c.op).data();
  int64_t rows = 0;
  Tensor rank;
  if (a.n > 0) {
    rank = inclusive_sum(selected, op);
    rows = read_int64(static_cast<const int64_t*>(rank.data_ptr()) + (a.n - 1), stream, op);
  }
  const Tensor out = a.src ? make_empty({rows}, dtype, device) : make_empty({rows, int64_t{a.ndim}}, kInt64, device);
  if (rows > 0) {
    a.selected = static_cast<const uint8_t*>(selected.data_ptr());
    a.rank = static_cast<const int64_t*>(rank.data_ptr());
    a.out = out.data_ptr();
    check(launch_compact(a, stream), op);
  }
  return out;
}

void nonzero_kernel(OpCall& c, DispatchKeySet) {
  const InputDevice on(c);
  const Tensor& t = c.in[0];
  MIXT_CHECK_OP(t.dim() <= kMaxDims, c, "takes at most {} dimensions, got {}", kMaxDims, t.sizes());
  // t != 0 as bool (the cast rule: NaN is true, -0.0 false), dense in row-major order.
  const Tensor selected = make_empty(t.sizes(), kBool, t.device());
  move_elements(selected, t, on.stream(), op_name(c.op).data());
  CompactArgs a;
  a.n = t.numel();
  a.ndim = t.dim();
  for (int d = 0; d < t.dim(); ++d) a.sizes[d] = t.sizes()[d];
  write_output(c, 0, compact(c, a, selected.reshape({a.n}), kInt64, t.device(), on.stream()), on.stream());
}

void masked_select_kernel(OpCall& c, DispatchKeySet) {
  const InputDevice on(c);
  const Tensor &t = c.in[0], &mask = c.in[1];
  MIXT_CHECK_OP(mask.device() == t.device(), c, "the mask is on {}, the input on {}", mask.device(), t.device());
  const Shape shape = index_checks::check_masked_select(c);
  const char* op = op_name(c.op).data();
  const Tensor selected = make_empty(shape, kBool, t.device()), src = make_empty(shape, t.dtype(), t.device());
  move_elements(selected, mask, on.stream(), op);
  move_elements(src, t, on.stream(), op);
  CompactArgs a;
  a.n = src.numel();
  a.src = src.data_ptr();
  a.element_size = static_cast<int>(src.element_size());
  write_output(c, 0, compact(c, a, selected.reshape({a.n}), t.dtype(), t.device(), on.stream()), on.stream());
}

}  // namespace

void register_masked_select_kernels() {
  register_kernel(OpId::nonzero, DispatchKey::CUDA, nonzero_kernel);
  register_kernel(OpId::masked_select, DispatchKey::CUDA, masked_select_kernel);
}

}  // namespace mixt::cuda
