// Reductions on the CPU: sum, mean, prod, amax, amin, max/min with indices,
// argmax, argmin, var, std, norm, logsumexp, all, any. Each op is a Reducer run by
// the strided engine of reduce_loops.h.
//
// Accumulation: floating sums (sum, mean, var, std, norm, logsumexp, prod) run in
// double on the CPU, more precise than the dtype table's accumulate_type (float32
// for the narrow floats): the CPU kernels are the reference the other backends are
// checked against. Narrow floats are read as float and rounded once on store.
// Integer and bool sums and products accumulate in int64 and wrap on overflow.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/cpu/reduce_loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cpu {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// NaN test that is false for integer and bool values.
template <class V>
bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) return std::isnan(v);
  else return false;
}

template <class T>
constexpr bool is_float_storage = std::is_floating_point_v<opmath_t<T>>;

// ---- reducers ----

// Sum: double for floating inputs, wrapping int64 for integers and bool.
template <class T>
struct SumReducer {
  using acc_t = std::conditional_t<is_float_storage<T>, double, int64_t>;
  acc_t init() const { return 0; }
  void step(acc_t& a, opmath_t<T> v, int64_t) const {
    if constexpr (is_float_storage<T>) a += static_cast<double>(v);
    else a = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(static_cast<int64_t>(v)));
  }
  void merge(acc_t& a, const acc_t& b) const { add(a, b); }
  static void add(acc_t& a, acc_t b) {
    if constexpr (is_float_storage<T>) a += b;
    else a = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
};

// Product: as SumReducer, multiplying.
template <class T>
struct ProdReducer {
  using acc_t = std::conditional_t<is_float_storage<T>, double, int64_t>;
  acc_t init() const { return 1; }
  static void mul(acc_t& a, acc_t b) {
    if constexpr (is_float_storage<T>) a *= b;
    else a = static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  }
  void step(acc_t& a, opmath_t<T> v, int64_t) const { mul(a, static_cast<acc_t>(v)); }
  void merge(acc_t& a, const acc_t& b) const { mul(a, b); }
};

// amax (Max) / amin: NaN wins.
template <class T, bool Max>
struct ExtremumReducer {
  using acc_t = opmath_t<T>;
  acc_t init() const {
    if constexpr (std::is_floating_point_v<acc_t>)
      return Max ? -std::numeric_limits<acc_t>::infinity() : std::numeric_limits<acc_t>::infinity();
    else return Max ? std::numeric_limits<acc_t>::lowest() : std::numeric_limits<acc_t>::max();
  }
  void step(acc_t& a, acc_t v, int64_t) const {
    if ((Max ? v > a : v < a) || is_nan(v)) a = v;
  }
  void merge(acc_t& a, const acc_t& b) const { step(a, b, 0); }
};

// max/min with indices, argmax/argmin: the first NaN, else the first extremum.
template <class T, bool Max>
struct ArgReducer {
  struct acc_t {
    opmath_t<T> v{};
    int64_t i = -1;  // -1: nothing seen yet
  };
  acc_t init() const { return {}; }
  static bool beats(opmath_t<T> v, opmath_t<T> cur) {
    return !is_nan(cur) && (is_nan(v) || (Max ? v > cur : v < cur));
  }
  void step(acc_t& a, opmath_t<T> v, int64_t i) const {
    if (a.i < 0 || beats(v, a.v)) a = {v, i};
  }
  void merge(acc_t& a, const acc_t& b) const {
    if (b.i >= 0 && (a.i < 0 || beats(b.v, a.v))) a = b;
  }
};

// Welford's running mean and sum of squared deviations, in double.
template <class T>
struct WelfordReducer {
  struct acc_t {
    double mean = 0, m2 = 0;
    int64_t n = 0;
  };
  acc_t init() const { return {}; }
  void step(acc_t& a, opmath_t<T> v, int64_t) const {
    const double x = static_cast<double>(v);
    ++a.n;
    const double d = x - a.mean;
    a.mean += d / static_cast<double>(a.n);
    a.m2 += d * (x - a.mean);
  }
  // Chan et al.'s combination of two partial results.
  void merge(acc_t& a, const acc_t& b) const {
    if (b.n == 0) return;
    if (a.n == 0) {
      a = b;
      return;
    }
    const double na = static_cast<double>(a.n), nb = static_cast<double>(b.n), n = na + nb;
    const double d = b.mean - a.mean;
    a.mean += d * nb / n;
    a.m2 += b.m2 + d * d * na * nb / n;
    a.n += b.n;
  }
};

enum class NormKind { Two, One, Inf, NegInf, Zero, General };

// Vector p-norm of |x| in double; the kind is chosen at run time.
template <class T>
struct NormReducer {
  using acc_t = double;
  NormKind kind;
  double p;
  acc_t init() const { return kind == NormKind::NegInf ? kInf : 0.0; }
  void step(acc_t& a, opmath_t<T> v, int64_t) const { fold(a, std::abs(static_cast<double>(v))); }
  // Folds one magnitude (or, for the max/min kinds, a partial result).
  void fold(acc_t& a, double x) const {
    switch (kind) {
      case NormKind::Two: a += x * x; break;
      case NormKind::One: a += x; break;
      case NormKind::Inf: if (x > a || std::isnan(x)) a = x; break;
      case NormKind::NegInf: if (x < a || std::isnan(x)) a = x; break;
      case NormKind::Zero: a += x != 0.0 ? 1.0 : 0.0; break;
      case NormKind::General: a += std::pow(x, p); break;
    }
  }
  void merge(acc_t& a, const acc_t& b) const {
    if (kind == NormKind::Inf || kind == NormKind::NegInf) fold(a, b);
    else a += b;
  }
  double finish(acc_t a) const {
    if (kind == NormKind::Two) return std::sqrt(a);
    if (kind == NormKind::General) return std::pow(a, 1.0 / p);
    return a;
  }
};

// log(sum(exp(x))) with a running maximum m: s = sum(exp(x - m)).
template <class T>
struct LogSumExpReducer {
  struct acc_t {
    double m = -kInf, s = 0;
    bool nan = false;
  };
  acc_t init() const { return {}; }
  // Adds `s` terms already scaled by exp(-m) to the accumulator.
  static void fold(acc_t& a, double m, double s) {
    if (m == -kInf) return;  // exp(-inf) contributes nothing
    if (m > a.m) {
      a.s = (a.m == -kInf ? 0.0 : a.s * std::exp(a.m - m)) + s;
      a.m = m;
    } else if (m == a.m) {
      a.s += s;
    } else {
      a.s += s * std::exp(m - a.m);
    }
  }
  void step(acc_t& a, opmath_t<T> v, int64_t) const {
    const double x = static_cast<double>(v);
    if (std::isnan(x)) a.nan = true;
    else fold(a, x, 1.0);
  }
  void merge(acc_t& a, const acc_t& b) const {
    a.nan = a.nan || b.nan;
    fold(a, b.m, b.s);
  }
  static double finish(const acc_t& a) {
    if (a.nan) return std::numeric_limits<double>::quiet_NaN();
    if (a.m == -kInf || a.m == kInf) return a.m;
    return a.m + std::log(a.s);
  }
};

// all (All) / any: non-zero values (NaN included) are true.
template <class T, bool All>
struct LogicalReducer {
  using acc_t = bool;
  acc_t init() const { return All; }
  void step(acc_t& a, opmath_t<T> v, int64_t) const {
    const bool x = v != opmath_t<T>(0);
    a = All ? (a && x) : (a || x);
  }
  void merge(acc_t& a, const acc_t& b) const { a = All ? (a && b) : (a || b); }
};

// ---- shared plumbing ----

// Fresh result for `c`'s output k, or the caller's (out=) once the result is copied in.
void set_output(OpCall& c, int k, const Tensor& result) {
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

// Raises the error of max-like ops over an empty reduced extent.
void check_nonempty(const OpCall& c, const ReduceSpec& spec) {
  MIXT_CHECK_OP(spec.reduced_numel > 0, c,
                "cannot reduce over a zero-size dimension (the operation has no identity); specify a dim that is "
                "not empty");
}

// A planned reduction of `x` over the dims of `spec`.
struct ReducePlan {
  Tensor x;
  ReduceSpec spec;
  ReduceGeometry geom;
};

// Validates `dims` for `x` and splits x's geometry into kept and reduced dims.
ReducePlan plan(const OpCall& c, const Tensor& x, const Shape& dims, bool keepdim) {
  ReducePlan r{x, make_reduce_spec(c, x.sizes(), dims, keepdim), {}};
  r.geom = make_reduce_geometry(x, r.spec.mask);
  return r;
}

// ---- kernels ----

// sum and prod: floating inputs keep their dtype, integers and bool give int64.
template <template <class> class R>
void sum_like_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType out_dtype = sum_result_dtype(c.in[0].dtype(), c.attrs.dtype);
  const auto& a = c.attrs.get<attrs::Reduce>();
  const ReducePlan red = plan(c, input_as(c, c.attrs.dtype), a.dims, a.keepdim);
  Tensor out = make_empty(red.spec.out_sizes, out_dtype, red.x.device());
  const char* name = op_name(c.op).data();
  visit_dtype(red.x.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using acc_t = typename R<T>::acc_t;
    if constexpr (is_float_storage<T>) {
      T* o = out.data_ptr<T>();
      run_reduction<T>(red.geom, R<T>{}, red.x, [o](int64_t i, acc_t a) { o[i] = convert<T>(a); });
    } else {
      // Out is int64, or the input's own type when that was requested.
      const bool wide = out_dtype != red.x.dtype();
      void* o = out.data_ptr();
      run_reduction<T>(red.geom, R<T>{}, red.x, [o, wide](int64_t i, acc_t a) {
        if (wide) static_cast<int64_t*>(o)[i] = a;
        else static_cast<T*>(o)[i] = convert<T>(a);
      });
    }
  });
  set_output(c, 0, out);
}

// mean of floating inputs (or integers with a floating dtype=); empty gives NaN.
void mean_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType out_dtype = floating_result_dtype(c, c.in[0].dtype(), c.attrs.dtype);
  const auto& a = c.attrs.get<attrs::Reduce>();
  const ReducePlan red = plan(c, input_as(c, out_dtype), a.dims, a.keepdim);
  Tensor out = make_empty(red.spec.out_sizes, out_dtype, red.x.device());
  const double n = static_cast<double>(red.spec.reduced_numel);
  visit_dtype<dtypes::kFloating>(out_dtype, "mean", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data_ptr<T>();
    run_reduction<T>(red.geom, SumReducer<T>{}, red.x, [o, n](int64_t i, double a) { o[i] = convert<T>(a / n); });
  });
  set_output(c, 0, out);
}

// amax / amin: the input's dtype, NaN propagates; an empty extent is an error.
template <bool Max>
void extremum_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::Reduce>();
  const ReducePlan red = plan(c, input_as(c, ScalarType::Undefined), a.dims, a.keepdim);
  check_nonempty(c, red.spec);
  Tensor out = make_empty(red.spec.out_sizes, red.x.dtype(), red.x.device());
  visit_dtype(red.x.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data_ptr<T>();
    run_reduction<T>(red.geom, ExtremumReducer<T, Max>{}, red.x,
                     [o](int64_t i, opmath_t<T> a) { o[i] = convert<T>(a); });
  });
  set_output(c, 0, out);
}

// Runs an ArgReducer over the single dim of `red`; fills values (when defined) and indices.
template <bool Max, uint32_t Set>
void run_arg_reduction(const OpCall& c, const ReducePlan& red, Tensor* values, Tensor& indices) {
  int64_t* idx = indices.data_ptr<int64_t>();
  visit_dtype<Set>(red.x.dtype(), op_name(c.op).data(), [&](auto tag) {
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
  check_nonempty(c, red.spec);
  Tensor values = make_empty(red.spec.out_sizes, red.x.dtype(), red.x.device());
  Tensor indices = make_empty(red.spec.out_sizes, kInt64, red.x.device());
  run_arg_reduction<Max, dtypes::kAll>(c, red, &values, indices);
  set_output(c, 0, values);
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
  check_nonempty(c, red.spec);
  Tensor indices = make_empty(out_sizes, kInt64, x.device());
  run_arg_reduction<Max, dtypes::kNumeric>(c, red, nullptr, indices);  // PyTorch has no bool argmax
  set_output(c, 0, indices);
}

// var (Std = false) / std: Welford in double, divided by max(0, n - correction).
template <bool Std>
void var_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dtype = floating_result_dtype(c, c.in[0].dtype(), ScalarType::Undefined);
  const auto& a = c.attrs.get<attrs::Variance>();
  const double correction = a.correction;
  const ReducePlan red = plan(c, input_as(c, ScalarType::Undefined), a.dims, a.keepdim);
  Tensor out = make_empty(red.spec.out_sizes, dtype, red.x.device());
  visit_dtype<dtypes::kFloating>(dtype, op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using acc_t = typename WelfordReducer<T>::acc_t;
    T* o = out.data_ptr<T>();
    run_reduction<T>(red.geom, WelfordReducer<T>{}, red.x, [o, correction](int64_t i, const acc_t& a) {
      const double var = a.m2 / std::max(0.0, static_cast<double>(a.n) - correction);
      o[i] = convert<T>(Std ? std::sqrt(var) : var);
    });
  });
  set_output(c, 0, out);
}

// Vector p-norm of floating inputs (dtype= converts the input first, as PyTorch does).
void norm_kernel(OpCall& c, DispatchKeySet) {
  MIXT_CHECK_OP(c.in[0].is_floating_point(), c, "expected a floating input, got {}", c.in[0].dtype());
  const ScalarType dtype = floating_result_dtype(c, c.in[0].dtype(), c.attrs.dtype);
  const double p = c.attrs.get<attrs::Norm>().p;
  MIXT_CHECK_OP(!std::isnan(p), c, "the order p must not be NaN");
  const NormKind kind = p == 2.0 ? NormKind::Two
                        : p == 1.0 ? NormKind::One
                        : p == kInf ? NormKind::Inf
                        : p == -kInf ? NormKind::NegInf
                        : p == 0.0 ? NormKind::Zero
                                   : NormKind::General;
  const auto& a = c.attrs.get<attrs::Norm>();
  const ReducePlan red = plan(c, input_as(c, dtype), a.dims, a.keepdim);
  MIXT_CHECK_OP(red.spec.reduced_numel > 0 || (p >= 0.0 && p != kInf), c,
                "cannot compute the {} norm over a zero-size dimension (the operation has no identity)", p);
  Tensor out = make_empty(red.spec.out_sizes, dtype, red.x.device());
  visit_dtype<dtypes::kFloating>(dtype, "norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const NormReducer<T> r{kind, p};
    T* o = out.data_ptr<T>();
    run_reduction<T>(red.geom, r, red.x, [o, &r](int64_t i, double a) { o[i] = convert<T>(r.finish(a)); });
  });
  set_output(c, 0, out);
}

// logsumexp, stable (running maximum); integer and bool inputs compute in float32.
void logsumexp_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dtype = logsumexp_result_dtype(c.in[0].dtype());
  const auto& a = c.attrs.get<attrs::Reduce>();
  const ReducePlan red = plan(c, input_as(c, dtype), a.dims, a.keepdim);
  Tensor out = make_empty(red.spec.out_sizes, dtype, red.x.device());
  visit_dtype<dtypes::kFloating>(dtype, "logsumexp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = LogSumExpReducer<T>;
    T* o = out.data_ptr<T>();
    run_reduction<T>(red.geom, R{}, red.x,
                     [o](int64_t i, const typename R::acc_t& a) { o[i] = convert<T>(R::finish(a)); });
  });
  set_output(c, 0, out);
}

// all (All = true) / any over every dtype; bool result.
template <bool All>
void logical_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::Reduce>();
  const ReducePlan red = plan(c, input_as(c, ScalarType::Undefined), a.dims, a.keepdim);
  Tensor out = make_empty(red.spec.out_sizes, kBool, red.x.device());
  bool* o = out.data_ptr<bool>();
  visit_dtype(red.x.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_reduction<T>(red.geom, LogicalReducer<T, All>{}, red.x, [o](int64_t i, bool a) { o[i] = a; });
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
