// Reductions on the CPU: sum, mean, prod, amax, amin, max/min with indices,
// argmax, argmin, var, std, norm, logsumexp, all, any. Each op is a Reducer run by
// the strided engine of reduce_loops.h.
//
// Accumulation: floating sums (sum, mean, var, std, norm, logsumexp, prod) run in
// double on the CPU, more precise than the dtype table's accumulate_type (float32
// for the narrow floats): the CPU kernels are the reference the other backends are
// checked against. Contiguous runs of the common reducers take vector paths that keep
// the double accumulation (reduce_loops.h). Narrow floats are read as float and rounded once on store.
// Integer and bool sums and products accumulate in int64 and wrap on overflow.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/common/reducers.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/cpu/reduce_loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cpu {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

template <class T>
constexpr bool is_float_storage = std::is_floating_point_v<opmath_t<T>>;

// ---- reducers (kernels/common/reducers.h) with the CPU's accumulators ----

// Floating sums and products in double, integer and bool ones in wrapping int64.
template <class T>
using wide_acc_t = std::conditional_t<is_float_storage<T>, double, int64_t>;
template <class T>
using SumReducer = reducers::Sum<wide_acc_t<T>>;
template <class T>
using ProdReducer = reducers::Prod<wide_acc_t<T>>;
template <class T, bool Max>
using ExtremumReducer = reducers::Extremum<opmath_t<T>, Max>;
template <class T, bool Max>
using ArgReducer = reducers::Arg<opmath_t<T>, Max>;

// ---- shared plumbing ----

// Note [Widened reductions]: float8 inputs reduce as float32, and uint8 and int8 ones as
// int64 (an exact widening copy first), into a result of the widened dtype that is then
// converted to the result dtype. The reduction engine is instantiated for seven storage
// types (bool, int32, int64, float16, bfloat16, float32, float64) instead of eleven: this
// was the slowest file of the build. The values are the same, bit for bit: float sums
// accumulate in double either way and double narrows to a float8 through float32; integer
// sums and products accumulate in wrapping int64 either way; extrema, arg-extrema, all and
// any are exact. What it costs is the copy: a [2048, 4096] int8 sum or amax takes 2-3x as
// long as before (sum 1.0-2.4 ms before, 3.4-4.8 after); float8 ones about the same, as
// they now take the float32 vector paths. int32 is not widened: an int64 copy made its
// sums 6x slower.
ScalarType reduction_storage(ScalarType t) {
  switch (t) {
    case kFloat8_e4m3fn:
    case kFloat8_e5m2: return kFloat32;
    case kUInt8:
    case kInt8: return kInt64;
    default: return t;
  }
}
constexpr uint32_t kReducedStorage = dtypes::kAll & ~dtypes::kFloat8 & ~(dtypes::bit(kUInt8) | dtypes::bit(kInt8));

// `x` in its reduction storage dtype (itself when that is its dtype).
Tensor widened(const OpCall& c, const Tensor& x) {
  return host::converted(x, reduction_storage(x.dtype()), c);
}

// Fresh result for `c`'s output k, or the caller's (out=) once the result is copied in.
// `dtype`: the result's dtype when `work` holds it widened (Note [Widened reductions]).
void set_output(OpCall& c, int k, const Tensor& work, ScalarType dtype = ScalarType::Undefined) {
  const Tensor result = dtype == ScalarType::Undefined ? work : host::converted(work, dtype, c);
  Tensor& given = c.out[k];
  if (!given.defined()) {
    given = result;
    return;
  }
  MIXT_CHECK_OP(given.is_cpu(), c, "the output is on {} but the input is on the cpu", given.device());
  MIXT_CHECK_OP(given.sizes() == result.sizes(), c, "the output has shape {} but the result has shape {}",
                given.sizes(), result.sizes());
  MIXT_CHECK_OP(can_cast(result.dtype(), given.dtype()), c, "result type {} can't be cast to the output's dtype {}",
                result.dtype(), given.dtype());
  host::copy_into(given, result, c);
}

// The input, converted to `dtype` first when one is requested (PyTorch's dtype= rule).
Tensor input_as(const OpCall& c, ScalarType dtype) {
  const Tensor& x = c.in[0];
  MIXT_CHECK_OP(x.is_cpu(), c, "the CPU kernel got a tensor on {}", x.device());
  return dtype == ScalarType::Undefined ? x : host::converted(x, dtype, c);
}

// A planned reduction of `x` over the dims of `spec`.
struct ReducePlan {
  Tensor x;
  ReduceSpec spec;
  ReduceGeometry geom;
};

// Validates `dims` for `x` and splits x's geometry into kept and reduced dims.
// The input is widened to its reduction storage (Note [Widened reductions]).
ReducePlan plan(const OpCall& c, const Tensor& x, const Shape& dims, bool keepdim) {
  ReducePlan r{widened(c, x), make_reduce_spec(c, x.sizes(), dims, keepdim), {}};
  r.geom = make_reduce_geometry(r.x, r.spec.mask);
  return r;
}

// ---- kernels ----

// sum and prod: floating inputs keep their dtype, integers and bool give int64.
template <template <class> class R>
void sum_like_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType out_dtype = sum_result_dtype(c.in[0].dtype(), c.attrs.dtype);
  const auto& a = c.attrs.get<attrs::Reduce>();
  const ReducePlan red = plan(c, input_as(c, c.attrs.dtype), a.dims, a.keepdim);
  Tensor out = make_empty(red.spec.out_sizes, reduction_storage(out_dtype), red.x.device());
  const char* name = op_name(c.op).data();
  visit_dtype<kReducedStorage>(red.x.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using acc_t = typename R<T>::acc_t;
    if constexpr (is_float_storage<T>) {
      T* o = out.data_ptr<T>();
      run_reduction<T>(red.geom, R<T>{}, red.x, [o](int64_t i, acc_t a) { o[i] = convert<T>(a); });
    } else {
      // Out is int64, or the input's own (widened) type when that was requested.
      const bool wide = out.dtype() != red.x.dtype();
      void* o = out.data_ptr();
      run_reduction<T>(red.geom, R<T>{}, red.x, [o, wide](int64_t i, acc_t a) {
        if (wide) static_cast<int64_t*>(o)[i] = a;
        else static_cast<T*>(o)[i] = convert<T>(a);
      });
    }
  });
  set_output(c, 0, out, out_dtype);
}

// mean of floating inputs (or integers with a floating dtype=); empty gives NaN.
void mean_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType out_dtype = floating_result_dtype(c, c.in[0].dtype(), c.attrs.dtype);
  const auto& a = c.attrs.get<attrs::Reduce>();
  const ReducePlan red = plan(c, input_as(c, out_dtype), a.dims, a.keepdim);
  Tensor out = make_empty(red.spec.out_sizes, red.x.dtype(), red.x.device());
  const double n = static_cast<double>(red.spec.reduced_numel);
  visit_dtype<dtypes::kFloating & kReducedStorage>(out.dtype(), "mean", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data_ptr<T>();
    reducers::Mean r;
    r.n = n;
    run_reduction<T>(red.geom, r, red.x, [o, &r](int64_t i, double a) { o[i] = convert<T>(r.project(a)); });
  });
  set_output(c, 0, out, out_dtype);
}

// amax / amin: the input's dtype, NaN propagates; an empty extent is an error.
template <bool Max>
void extremum_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::Reduce>();
  const ReducePlan red = plan(c, input_as(c, ScalarType::Undefined), a.dims, a.keepdim);
  check_reduce_nonempty(c, red.spec);
  Tensor out = make_empty(red.spec.out_sizes, red.x.dtype(), red.x.device());
  visit_dtype<kReducedStorage>(red.x.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data_ptr<T>();
    run_reduction<T>(red.geom, ExtremumReducer<T, Max>{}, red.x,
                     [o](int64_t i, opmath_t<T> a) { o[i] = convert<T>(a); });
  });
  set_output(c, 0, out, c.in[0].dtype());
}

// Runs an ArgReducer over the single dim of `red`; fills values (when defined) and indices.
template <bool Max, uint32_t Set>
void run_arg_reduction(const OpCall& c, const ReducePlan& red, Tensor* values, Tensor& indices) {
  int64_t* idx = indices.data_ptr<int64_t>();
  visit_dtype<Set & kReducedStorage>(red.x.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using acc_t = typename ArgReducer<T, Max>::acc_t;
    T* v = values ? values->data_ptr<T>() : nullptr;
    run_reduction<T>(red.geom, ArgReducer<T, Max>{}, red.x, [v, idx](int64_t i, const acc_t& a) {
      if (v) v[i] = convert<T>(a.v);
      idx[i] = a.i;
    });
  });
}

// max / min along a dim: values in the input's dtype and int64 indices.
template <bool Max>
void max_dim_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::ReduceDim>();
  const ReducePlan red = plan(c, input_as(c, ScalarType::Undefined), Shape{a.dim}, a.keepdim);
  check_reduce_nonempty(c, red.spec);
  Tensor values = make_empty(red.spec.out_sizes, red.x.dtype(), red.x.device());
  Tensor indices = make_empty(red.spec.out_sizes, kInt64, red.x.device());
  run_arg_reduction<Max, dtypes::kAll>(c, red, &values, indices);
  set_output(c, 0, values, c.in[0].dtype());
  set_output(c, 1, indices);
}

// argmax / argmin along a dim, or of the flattened tensor when none is given.
template <bool Max>
void arg_kernel(OpCall& c, DispatchKeySet) {
  const Tensor x = input_as(c, ScalarType::Undefined);
  const auto& a = c.attrs.get<attrs::ArgReduce>();
  ReducePlan red;
  Shape out_sizes;
  if (!a.dim) {
    const Tensor flat = host::contiguous(x, c);  // read in row-major order, as a reshape would
    red = plan(c, make_view(flat, {x.numel()}, {1}, flat.storage_offset()), Shape{0}, false);
    if (a.keepdim) out_sizes = Shape::filled(static_cast<int>(x.dim()), 1);
  } else {
    red = plan(c, x, Shape{*a.dim}, a.keepdim);
    out_sizes = red.spec.out_sizes;
  }
  check_reduce_nonempty(c, red.spec);
  Tensor indices = make_empty(out_sizes, kInt64, x.device());
  run_arg_reduction<Max, dtypes::kNumeric>(c, red, nullptr, indices);  // PyTorch has no bool argmax
  set_output(c, 0, indices);
}

// var (Std = false) / std in double, divided by max(0, n - correction): contiguous runs
// in two passes (mean, then centred squares), merged with the rest by Welford/Chan.
template <bool Std>
void var_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dtype = floating_result_dtype(c, c.in[0].dtype(), ScalarType::Undefined);
  const auto& a = c.attrs.get<attrs::Variance>();
  const double correction = a.correction;
  const ReducePlan red = plan(c, input_as(c, ScalarType::Undefined), a.dims, a.keepdim);
  Tensor out = make_empty(red.spec.out_sizes, reduction_storage(dtype), red.x.device());
  visit_dtype<dtypes::kFloating & kReducedStorage>(out.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const reducers::Welford<double> r{correction, Std};
    T* o = out.data_ptr<T>();
    run_reduction<T>(red.geom, r, red.x,
                     [o, &r](int64_t i, const reducers::WelfordAcc<double>& a) { o[i] = convert<T>(r.project(a)); });
  });
  set_output(c, 0, out, dtype);
}

// Vector p-norm of floating inputs (dtype= converts the input first, as PyTorch does).
void norm_kernel(OpCall& c, DispatchKeySet) {
  MIXT_CHECK_OP(c.in[0].is_floating_point(), c, "expected a floating input, got {}", c.in[0].dtype());
  const ScalarType dtype = floating_result_dtype(c, c.in[0].dtype(), c.attrs.dtype);
  const double p = c.attrs.get<attrs::Norm>().p;
  MIXT_CHECK_OP(!std::isnan(p), c, "the order p must not be NaN");
  const auto& a = c.attrs.get<attrs::Norm>();
  const ReducePlan red = plan(c, input_as(c, dtype), a.dims, a.keepdim);
  MIXT_CHECK_OP(red.spec.reduced_numel > 0 || (p >= 0.0 && p != kInf), c,
                "cannot compute the {} norm over a zero-size dimension (the operation has no identity)", p);
  Tensor out = make_empty(red.spec.out_sizes, red.x.dtype(), red.x.device());
  visit_dtype<dtypes::kFloating & kReducedStorage>(out.dtype(), "norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const reducers::Norm r{reducers::norm_kind(p), p};
    T* o = out.data_ptr<T>();
    run_reduction<T>(red.geom, r, red.x, [o, &r](int64_t i, double a) { o[i] = convert<T>(r.project(a)); });
  });
  set_output(c, 0, out, dtype);
}

// logsumexp, stable (running maximum); integer and bool inputs compute in float32.
void logsumexp_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dtype = logsumexp_result_dtype(c.in[0].dtype());
  const auto& a = c.attrs.get<attrs::Reduce>();
  const ReducePlan red = plan(c, input_as(c, dtype), a.dims, a.keepdim);
  Tensor out = make_empty(red.spec.out_sizes, red.x.dtype(), red.x.device());
  visit_dtype<dtypes::kFloating & kReducedStorage>(out.dtype(), "logsumexp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const reducers::LogSumExp r;
    T* o = out.data_ptr<T>();
    run_reduction<T>(red.geom, r, red.x,
                     [o, &r](int64_t i, const reducers::LogSumExpAcc& a) { o[i] = convert<T>(r.project(a)); });
  });
  set_output(c, 0, out, dtype);
}

// all (All = true) / any over every dtype; bool result.
template <bool All>
void logical_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::Reduce>();
  const ReducePlan red = plan(c, input_as(c, ScalarType::Undefined), a.dims, a.keepdim);
  Tensor out = make_empty(red.spec.out_sizes, kBool, red.x.device());
  bool* o = out.data_ptr<bool>();
  visit_dtype<kReducedStorage>(red.x.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_reduction<T>(red.geom, reducers::Logical<All>{}, red.x, [o](int64_t i, bool a) { o[i] = a; });
  });
  set_output(c, 0, out);
}

}  // namespace

void register_reduce_kernels() {
  register_kernel(OpId::sum, DispatchKey::CPU, sum_like_kernel<SumReducer>);
  register_kernel(OpId::prod, DispatchKey::CPU, sum_like_kernel<ProdReducer>);
  register_kernel(OpId::mean, DispatchKey::CPU, mean_kernel);
  register_kernel(OpId::amax, DispatchKey::CPU, extremum_kernel<true>);
  register_kernel(OpId::amin, DispatchKey::CPU, extremum_kernel<false>);
  register_kernel(OpId::max, DispatchKey::CPU, max_dim_kernel<true>);
  register_kernel(OpId::min, DispatchKey::CPU, max_dim_kernel<false>);
  register_kernel(OpId::argmax, DispatchKey::CPU, arg_kernel<true>);
  register_kernel(OpId::argmin, DispatchKey::CPU, arg_kernel<false>);
  register_kernel(OpId::var, DispatchKey::CPU, var_kernel<false>);
  register_kernel(OpId::std, DispatchKey::CPU, var_kernel<true>);
  register_kernel(OpId::norm, DispatchKey::CPU, norm_kernel);
  register_kernel(OpId::logsumexp, DispatchKey::CPU, logsumexp_kernel);
  register_kernel(OpId::all, DispatchKey::CPU, logical_kernel<true>);
  register_kernel(OpId::any, DispatchKey::CPU, logical_kernel<false>);
}

}  // namespace mixt::cpu
