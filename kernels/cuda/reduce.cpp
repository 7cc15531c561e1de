// Reductions on CUDA: sum, mean, prod, amax, amin, max/min with indices, argmax,
// argmin, var, std, norm, logsumexp, all, any. The checks, result dtypes and
// geometry are the CPU's (kernels/common/reduce_meta.h, reduce_geometry.h); the
// device kernels (reduce.cu) run the CPU's reducers with the CPU's accumulators in a
// fixed order (Note [Deterministic reductions] in reduce.cuh).
#include <cmath>
#include <limits>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/reduce_launch.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {
namespace {

// The input of `c` on CUDA, converted to `dtype` first when one is requested.
Tensor input_as(const OpCall& c, ScalarType dtype) {
  const Tensor& x = c.in[0];
  MIXT_CHECK_OP(x.is_cuda(), c, "the CUDA kernel got a tensor on {}", x.device());
  return dtype == ScalarType::Undefined || dtype == x.dtype() ? x : x.to(dtype);
}

// Fresh result for `c`'s output k, or the caller's (out=) once the result is copied in.
void set_output(OpCall& c, int k, const Tensor& result) {
  Tensor& given = c.out[k];
  if (!given.defined()) {
    given = result;
    return;
  }
  MIXT_CHECK_OP(given.device() == result.device(), c, "the output is on {} but the input is on {}", given.device(),
                result.device());
  MIXT_CHECK_OP(given.sizes() == result.sizes(), c, "the output has shape {} but the result has shape {}",
                given.sizes(), result.sizes());
  MIXT_CHECK_OP(can_cast(result.dtype(), given.dtype()), c, "result type {} can't be cast to the output's dtype {}",
                result.dtype(), given.dtype());
  given.copy_(result);
}

// A reduction of `x` over `dims`: its spec and the kernel arguments (geometry, plan, input).
struct Planned {
  Tensor x;
  ReduceSpec spec;
  ReduceArgs args;
};

Planned plan(const OpCall& c, const Tensor& x, const Shape& dims, bool keepdim, ReduceOp op) {
  Planned p{x, make_reduce_spec(c, x.sizes(), dims, keepdim), {}};
  p.args.geom = make_reduce_geometry(x, p.spec.mask);
  p.args.launch = make_reduce_launch(p.args.geom);
  p.args.in = x.numel() > 0 ? x.data_ptr() : nullptr;
  p.args.in_dtype = x.dtype();
  p.args.op = op;
  return p;
}

// Queues the kernel of `p` on the current stream of x's device.
void launch(const OpCall& c, const Planned& p) {
  if (p.args.geom.out_numel == 0) return;
  const int index = p.x.device().index();
  DeviceGuard guard(index, op_name(c.op).data());
  // The chunks' partials (few, long reductions): freed after queuing, which the
  // stream-ordered allocator makes safe (reused only by later work on this stream).
  Tensor workspace;
  ReduceArgs args = p.args;
  if (args.launch.splits > 1) {
    workspace = make_empty({args.geom.out_numel * args.launch.splits * kReduceMaxAccBytes}, kUInt8, p.x.device());
    args.workspace = workspace.data_ptr();
  }
  check(launch_reduce(args, current_native_stream(index)), op_name(c.op).data());
}

// Runs `p` into a new result of `dtype` (the spec's shape) and makes it output 0 of `c`.
void run_into_output(OpCall& c, Planned& p, ScalarType dtype) {
  Tensor out = make_empty(p.spec.out_sizes, dtype, p.x.device());
  p.args.out = out.data_ptr();
  p.args.out_dtype = dtype;
  launch(c, p);
  set_output(c, 0, out);
}

// The kernels' ops, by OpId.
template <ReduceOp op>
void sum_like_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType out_dtype = sum_result_dtype(c.in[0].dtype(), c.attrs.dtype);
  const auto& a = c.attrs.get<attrs::Reduce>();
  Planned p = plan(c, input_as(c, c.attrs.dtype), a.dims, a.keepdim, op);
  run_into_output(c, p, out_dtype);
}

void mean_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType out_dtype = floating_result_dtype(c, c.in[0].dtype(), c.attrs.dtype);
  const auto& a = c.attrs.get<attrs::Reduce>();
  Planned p = plan(c, input_as(c, out_dtype), a.dims, a.keepdim, ReduceOp::Mean);
  p.args.n = static_cast<double>(p.spec.reduced_numel);
  run_into_output(c, p, out_dtype);
}

template <ReduceOp op>
void extremum_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::Reduce>();
  Planned p = plan(c, input_as(c, ScalarType::Undefined), a.dims, a.keepdim, op);
  check_reduce_nonempty(c, p.spec);
  run_into_output(c, p, p.x.dtype());
}

template <ReduceOp op>
void max_dim_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::ReduceDim>();
  Planned p = plan(c, input_as(c, ScalarType::Undefined), Shape{a.dim}, a.keepdim, op);
  check_reduce_nonempty(c, p.spec);
  Tensor values = make_empty(p.spec.out_sizes, p.x.dtype(), p.x.device());
  Tensor indices = make_empty(p.spec.out_sizes, kInt64, p.x.device());
  p.args.out = values.data_ptr();
  p.args.out_dtype = p.x.dtype();
  p.args.indices = indices.data_ptr<int64_t>();
  launch(c, p);
  set_output(c, 0, values);
  set_output(c, 1, indices);
}

// argmax (op Max) / argmin along a dim, or of the flattened tensor when none is given.
template <ReduceOp op>
void arg_kernel(OpCall& c, DispatchKeySet) {
  const Tensor x = input_as(c, ScalarType::Undefined);
  MIXT_CHECK_OP(x.dtype() != kBool, c, "argmax and argmin are not defined for bool tensors");
  const auto& a = c.attrs.get<attrs::ArgReduce>();
  Planned p;
  Shape out_sizes;
  if (!a.dim) {
    const Tensor flat = contiguous(x);  // row-major order, as a reshape would give
    p = plan(c, make_view(flat, {x.numel()}, {1}, flat.storage_offset()), Shape{0}, false, op);
    if (a.keepdim) out_sizes = Shape::filled(static_cast<int>(x.dim()), 1);
  } else {
    p = plan(c, x, Shape{*a.dim}, a.keepdim, op);
    out_sizes = p.spec.out_sizes;
  }
  check_reduce_nonempty(c, p.spec);
  Tensor indices = make_empty(out_sizes, kInt64, x.device());
  p.args.indices = indices.data_ptr<int64_t>();
  launch(c, p);
  set_output(c, 0, indices);
}

template <ReduceOp op>
void var_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dtype = floating_result_dtype(c, c.in[0].dtype(), ScalarType::Undefined);
  const auto& a = c.attrs.get<attrs::Variance>();
  Planned p = plan(c, input_as(c, ScalarType::Undefined), a.dims, a.keepdim, op);
  p.args.correction = a.correction;
  run_into_output(c, p, dtype);
}

void norm_kernel(OpCall& c, DispatchKeySet) {
  MIXT_CHECK_OP(c.in[0].is_floating_point(), c, "expected a floating input, got {}", c.in[0].dtype());
  const ScalarType dtype = floating_result_dtype(c, c.in[0].dtype(), c.attrs.dtype);
  const auto& a = c.attrs.get<attrs::Norm>();
  const double inf = std::numeric_limits<double>::infinity();
  MIXT_CHECK_OP(!std::isnan(a.p), c, "the order p must not be NaN");
  Planned p = plan(c, input_as(c, dtype), a.dims, a.keepdim, ReduceOp::Norm);
  MIXT_CHECK_OP(p.spec.reduced_numel > 0 || (a.p >= 0.0 && a.p != inf), c,
                "cannot compute the {} norm over a zero-size dimension (the operation has no identity)", a.p);
  p.args.p = a.p;
  run_into_output(c, p, dtype);
}

// logsumexp: integer and bool inputs are read as float32 by the kernel (no conversion pass).
void logsumexp_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dtype = logsumexp_result_dtype(c.in[0].dtype());
  const auto& a = c.attrs.get<attrs::Reduce>();
  Planned p = plan(c, input_as(c, ScalarType::Undefined), a.dims, a.keepdim, ReduceOp::LogSumExp);
  run_into_output(c, p, dtype);
}

template <ReduceOp op>
void logical_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::Reduce>();
  Planned p = plan(c, input_as(c, ScalarType::Undefined), a.dims, a.keepdim, op);
  run_into_output(c, p, kBool);
}

}  // namespace

void register_reduce_kernels() {
  register_kernel(OpId::sum, DispatchKey::CUDA, sum_like_kernel<ReduceOp::Sum>);
  register_kernel(OpId::prod, DispatchKey::CUDA, sum_like_kernel<ReduceOp::Prod>);
  register_kernel(OpId::mean, DispatchKey::CUDA, mean_kernel);
  register_kernel(OpId::amax, DispatchKey::CUDA, extremum_kernel<ReduceOp::Amax>);
  register_kernel(OpId::amin, DispatchKey::CUDA, extremum_kernel<ReduceOp::Amin>);
  register_kernel(OpId::max, DispatchKey::CUDA, max_dim_kernel<ReduceOp::Max>);
  register_kernel(OpId::min, DispatchKey::CUDA, max_dim_kernel<ReduceOp::Min>);
  register_kernel(OpId::argmax, DispatchKey::CUDA, arg_kernel<ReduceOp::Max>);
  register_kernel(OpId::argmin, DispatchKey::CUDA, arg_kernel<ReduceOp::Min>);
  register_kernel(OpId::var, DispatchKey::CUDA, var_kernel<ReduceOp::Var>);
  register_kernel(OpId::std, DispatchKey::CUDA, var_kernel<ReduceOp::Std>);
  register_kernel(OpId::norm, DispatchKey::CUDA, norm_kernel);
  register_kernel(OpId::logsumexp, DispatchKey::CUDA, logsumexp_kernel);
  register_kernel(OpId::all, DispatchKey::CUDA, logical_kernel<ReduceOp::All>);
  register_kernel(OpId::any, DispatchKey::CUDA, logical_kernel<ReduceOp::Any>);
}

}  // namespace mixt::cuda
