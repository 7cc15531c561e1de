// Device kernels of the reductions (sum, prod, mean, amax, amin, max/min with indices,
// argmax/argmin, var, std, norm, logsumexp, all, any): the reducers of
// kernels/common/reducers.h with the CPU's accumulators, run by reduce_kernel
// (reduce.cuh; Note [Deterministic reductions]). One instantiation per input dtype,
// except where the arithmetic does not depend on it: integer and bool sums and products
// (int64 arithmetic) and all/any (a non-zero test) read their dtype at run time, which
// keeps this file's compile time down.
#include <mixt/kernels/cuda/reduce.cuh>
#include <mixt/kernels/cuda/reduce_launch.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

// ---- loads: an element of storage T as the reducer's input ----

// The compute type (float for the narrow floats, T otherwise).
template <class T>
struct LoadOpmath {
  __device__ __forceinline__ opmath_t<T> operator()(const char* p) const { return load_opmath<T>(p); }
};

// double, through float for integer and bool inputs (logsumexp reads them as float32).
template <class T>
struct LoadAsFloatingDouble {
  __device__ __forceinline__ double operator()(const char* p) const {
    const opmath_t<T> v = load_opmath<T>(p);
    if constexpr (std::is_floating_point_v<opmath_t<T>>) return static_cast<double>(v);
    else return static_cast<double>(static_cast<float>(v));
  }
};

// An integer or bool element as int64 (the dtype is read at run time).
struct LoadInteger {
  ScalarType dtype;
  __device__ __forceinline__ int64_t operator()(const char* p) const {
    switch (dtype) {
      case ScalarType::Bool: return *reinterpret_cast<const bool*>(p);
      case ScalarType::UInt8: return *reinterpret_cast<const uint8_t*>(p);
      case ScalarType::Int8: return *reinterpret_cast<const int8_t*>(p);
      case ScalarType::Int32: return *reinterpret_cast<const int32_t*>(p);
      default: return *reinterpret_cast<const int64_t*>(p);
    }
  }
};

// Whether an element of any dtype is non-zero (NaN is), the dtype read at run time.
struct LoadNonzero {
  ScalarType dtype;
  template <class T>
  __device__ __forceinline__ static bool nonzero(const char* p) {
    return load_opmath<T>(p) != opmath_t<T>(0);
  }
  __device__ __forceinline__ bool operator()(const char* p) const {
    switch (dtype) {
      case ScalarType::Float16: return nonzero<Half>(p);
      case ScalarType::BFloat16: return nonzero<BFloat16>(p);
      case ScalarType::Float32: return nonzero<float>(p);
      case ScalarType::Float64: return nonzero<double>(p);
      case ScalarType::Float8_e4m3fn: return nonzero<Float8_e4m3fn>(p);
      case ScalarType::Float8_e5m2: return nonzero<Float8_e5m2>(p);
      default: return LoadInteger{dtype}(p) != 0;
    }
  }
};

// ---- stores: project, then round into the output ----

// out[o] = project(acc) as storage type Out.
template <class Out, class R>
struct StoreProjected {
  Out* out;
  R r;
  __device__ __forceinline__ void operator()(int64_t o, const typename R::acc_t& a) const {
    out[o] = store_as<Out>(r.project(a));
  }
};

// values[o] (when wanted) and indices[o] of an Arg reducer.
template <class T, class R>
struct StoreValueIndex {
  T* values;
  int64_t* indices;
  __device__ __forceinline__ void operator()(int64_t o, const typename R::acc_t& a) const {
    if (values) values[o] = store_as<T>(a.v);
    indices[o] = a.i;
  }
};

// out[o] = project(acc) wrapped into the integer or bool dtype `dtype` (read at run time).
template <class R>
struct StoreInteger {
  void* out;
  ScalarType dtype;
  R r;
  __device__ __forceinline__ void operator()(int64_t o, const typename R::acc_t& a) const {
    const int64_t v = r.project(a);
    switch (dtype) {
      case ScalarType::Bool: static_cast<bool*>(out)[o] = convert<bool>(v); break;
      case ScalarType::UInt8: static_cast<uint8_t*>(out)[o] = convert<uint8_t>(v); break;
      case ScalarType::Int8: static_cast<int8_t*>(out)[o] = convert<int8_t>(v); break;
      case ScalarType::Int32: static_cast<int32_t*>(out)[o] = convert<int32_t>(v); break;
      default: static_cast<int64_t*>(out)[o] = v; break;
    }
  }
};

template <class Out, class R, class Load>
cudaError_t run(const ReduceArgs& a, const R& r, Load load, cudaStream_t s) {
  return launch_reduce_kernel(a.geom, a.launch, a.in, r, load, StoreProjected<Out, R>{static_cast<Out*>(a.out), r},
                              a.workspace, s);
}

// sum and prod of integer and bool inputs: wrapping int64, stored as out_dtype (int64,
// or the input's own type when that was requested).
template <template <class> class R>
cudaError_t integer_sum_like(const ReduceArgs& a, cudaStream_t s) {
  const R<int64_t> r;
  return launch_reduce_kernel(a.geom, a.launch, a.in, r, LoadInteger{a.in_dtype},
                              StoreInteger<R<int64_t>>{a.out, a.out_dtype, r}, a.workspace, s);
}

// all / any of any dtype.
template <bool All>
cudaError_t logical(const ReduceArgs& a, cudaStream_t s) {
  return run<bool>(a, reducers::Logical<All>{}, LoadNonzero{a.in_dtype}, s);
}

template <class T>
cudaError_t floating_op(const ReduceArgs& a, cudaStream_t s) {
  switch (a.op) {
    case ReduceOp::Mean: {
      reducers::Mean r;
      r.n = a.n;
      return run<T>(a, r, LoadOpmath<T>{}, s);
    }
    case ReduceOp::Var:
    case ReduceOp::Std:
      return run<T>(a, reducers::Welford<double>{a.correction, a.op == ReduceOp::Std}, LoadOpmath<T>{}, s);
    default:
      return run<T>(a, reducers::Norm{reducers::norm_kind(a.p), a.p}, LoadOpmath<T>{}, s);
  }
}

template <class T, bool Max>
cudaError_t arg_op(const ReduceArgs& a, cudaStream_t s) {
  using R = reducers::Arg<opmath_t<T>, Max>;
  return launch_reduce_kernel(a.geom, a.launch, a.in, R{}, LoadOpmath<T>{},
                              StoreValueIndex<T, R>{static_cast<T*>(a.out), a.indices}, a.workspace, s);
}

template <class T>
cudaError_t any_dtype_op(const ReduceArgs& a, cudaStream_t s) {
  using M = opmath_t<T>;
  switch (a.op) {
    case ReduceOp::Sum:
      if constexpr (std::is_floating_point_v<M>) return run<T>(a, reducers::Sum<double>{}, LoadOpmath<T>{}, s);
      else return cudaErrorInvalidValue;  // (launch_reduce sends integers to integer_sum_like)
    case ReduceOp::Prod:
      if constexpr (std::is_floating_point_v<M>) return run<T>(a, reducers::Prod<double>{}, LoadOpmath<T>{}, s);
      else return cudaErrorInvalidValue;
    case ReduceOp::Amax: return run<T>(a, reducers::Extremum<M, true>{}, LoadOpmath<T>{}, s);
    case ReduceOp::Amin: return run<T>(a, reducers::Extremum<M, false>{}, LoadOpmath<T>{}, s);
    case ReduceOp::Max: return arg_op<T, true>(a, s);
    case ReduceOp::Min: return arg_op<T, false>(a, s);
    case ReduceOp::LogSumExp: {
      using Out = std::conditional_t<std::is_floating_point_v<M>, T, float>;
      return run<Out>(a, reducers::LogSumExp{}, LoadAsFloatingDouble<T>{}, s);
    }
    default: break;
  }
  if constexpr (std::is_floating_point_v<M>) return floating_op<T>(a, s);
  else return cudaErrorInvalidValue;  // the host side admits floating inputs only
}

}  // namespace

cudaError_t launch_reduce(const ReduceArgs& args, cudaStream_t stream) {
  if (args.op == ReduceOp::All) return logical<true>(args, stream);
  if (args.op == ReduceOp::Any) return logical<false>(args, stream);
  if (!is_floating(args.in_dtype) && args.op == ReduceOp::Sum) return integer_sum_like<reducers::Sum>(args, stream);
  if (!is_floating(args.in_dtype) && args.op == ReduceOp::Prod) return integer_sum_like<reducers::Prod>(args, stream);
  return visit_dtype(args.in_dtype, "reduce",
                     [&](auto tag) { return any_dtype_op<typename decltype(tag)::type>(args, stream); });
}

}  // namespace mixt::cuda
