// cumsum and cumprod on CUDA: the CPU's checks and result dtypes (reduce_meta.h); the
// device kernels (scan.cu) scan each line under a ScanPlan (Note [Chunked scans]): in
// order on one thread, or a few long lines in chunks over many threads.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/common/scan_plan.h>
#include <mixt/kernels/common/strided_layout.h>
#include <mixt/kernels/cuda/factory.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/reduce_launch.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {
namespace {

// `s` without entry `dim`.
Shape without(const Shape& s, int dim) {
  Shape r;
  for (int d = 0; d < s.size(); ++d)
    if (d != dim) r.push_back(s[d]);
  return r;
}

// Queues the scan of `x` along `dim` into `out` (same sizes; out_dtype sum_result_dtype's).
void run_scan(const Tensor& x, int dim, const Tensor& out, bool prod, const char* op) {
  if (x.numel() == 0) return;
  ScanArgs a;
  if (x.dim() > 0) {
    const Shape sizes = without(x.sizes(), dim), out_strides = without(out.strides(), dim),
                in_strides = without(x.strides(), dim);
    const OperandGeometry geom[2] = {{&sizes, &out_strides, out.element_size()},
                                     {&sizes, &in_strides, x.element_size()}};
    a.lines = make_strided_layout(sizes, geom);
    a.plan = make_scan_plan(a.lines.numel, x.sizes()[dim]);
    a.in_stride = x.strides()[dim] * x.element_size();
    a.out_stride = out.strides()[dim] * out.element_size();
  } else {
    const Shape none;
    const OperandGeometry geom[2] = {{&none, &none, out.element_size()}, {&none, &none, x.element_size()}};
    a.lines = make_strided_layout(none, geom);
    a.plan = make_scan_plan(1, 1);
  }
  a.in = x.data_ptr();
  a.out = out.data_ptr();
  a.in_dtype = x.dtype();
  a.out_dtype = out.dtype();
  a.prod = prod;
  const int index = x.device().index();
  DeviceGuard guard(index, op);
  // A chunked plan keeps one accumulator per chunk between its passes: freed after
  // queuing, which the stream-ordered allocator makes safe (reused only by later work).
  Tensor workspace;
  if (const int64_t slots = scan_workspace_slots(a.plan); slots > 0) {
    workspace = make_empty({slots * kScanAccBytes}, kUInt8, x.device());
    a.workspace = workspace.data_ptr();
  }
  check(launch_scan(a, current_native_stream(index)), op);
}

template <bool Prod>
void scan_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& in = c.in[0];
  MIXT_CHECK_OP(in.is_cuda(), c, "the CUDA kernel got a tensor on {}", in.device());
  const int dim = scan_dim(c, c.attrs.get<attrs::Dim>().dim, in.dim());
  const ScalarType out_dtype = sum_result_dtype(in.dtype(), c.attrs.dtype);
  const Tensor x = c.attrs.dtype == ScalarType::Undefined || c.attrs.dtype == in.dtype() ? in : in.to(c.attrs.dtype);
  Tensor out = make_empty(x.sizes(), out_dtype, x.device());
  run_scan(x, dim, out, Prod, op_name(c.op).data());
  if (!c.out[0].defined()) {
    c.out[0] = out;
    return;
  }
  Tensor& given = c.out[0];
  MIXT_CHECK_OP(given.device() == out.device() && given.sizes() == out.sizes() && can_cast(out.dtype(), given.dtype()),
                c, "the output ({}) cannot hold a result of {}", given.describe(), out.describe());
  given.copy_(out);
}

}  // namespace

Tensor inclusive_sum(const Tensor& t, const char* op) {
  MIXT_CHECK(t.dim() == 1 && t.is_contiguous() && (t.dtype() == kBool || t.dtype() == kInt64), op,
             "inclusive_sum takes a dense 1-D bool or int64 tensor, got {}", t.describe());
  const Tensor out = make_empty(t.sizes(), kInt64, t.device());
  run_scan(t, 0, out, false, op);
  return out;
}

void register_scan_kernels() {
  register_kernel(OpId::cumsum, DispatchKey::CUDA, scan_kernel<false>);
  register_kernel(OpId::cumprod, DispatchKey::CUDA, scan_kernel<true>);
}

}  // namespace mixt::cuda
