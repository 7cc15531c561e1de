// softmax and log_softmax on the CPU, along one dim, and their fused backward kernels
// (Note [Fused backward ops]). Each line is max-subtracted (stable for large inputs);
// narrow floats compute in float32, line sums accumulate in double, and every output
// is rounded once. A row holding NaN gives NaN, a row of -inf gives NaN (as PyTorch).
#include <cmath>
#include <limits>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/backward_math.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/common/reducers.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cpu {
namespace {

// A tensor viewed as [outer, n, inner] around the softmax dim.
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};

Lines lines_of(const Tensor& x, int64_t dim) {
  Lines l;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t s = x.size(d);
    if (d < dim)
      l.outer *= s;
    else if (d == dim)
      l.n = s;
    else
      l.inner *= s;
  }
  return l;
}

// Writes softmax (or log_softmax when Log) of the `n` values at x[0], x[stride], ... to y.
template <bool Log, class T>
void softmax_line(const T* x, T* y, int64_t n, int64_t stride) {
  using M = opmath_t<T>;
  const reducers::Extremum<M, true> max_r;  // NaN wins (kernels/common/reducers.h, shared with CUDA)
  M m = max_r.init();
  for (int64_t j = 0; j < n; ++j) max_r.accumulate(m, static_cast<M>(x[j * stride]), j);
  double s = 0;
  for (int64_t j = 0; j < n; ++j) s += static_cast<double>(std::exp(static_cast<M>(x[j * stride]) - m));
  if constexpr (Log) {
    const M log_s = static_cast<M>(std::log(s));
    for (int64_t j = 0; j < n; ++j) y[j * stride] = convert<T>(static_cast<M>(x[j * stride]) - m - log_s);
  } else {
    const M inv = static_cast<M>(1.0 / s);
    for (int64_t j = 0; j < n; ++j) y[j * stride] = convert<T>(std::exp(static_cast<M>(x[j * stride]) - m) * inv);
  }
}

// Runs line(offset) for the first element of every line of `l` (lines are n values at stride inner).
template <class Line>
void for_each_line(const Lines& l, Line&& line) {
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, l.n));
  parallel_for(l.outer * l.inner, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) line((r / l.inner) * l.n * l.inner + r % l.inner);
  });
}

void set_output(OpCall& c, const Tensor& out) {
  if (c.out[0].defined())
    host::copy_into(c.out[0], out, c);
  else
    c.out[0] = out;
}

template <bool Log>
void softmax_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& in = c.in[0];
  const ScalarType dt = c.attrs.dtype;
  MIXT_CHECK_OP(in.is_cpu(), c, "the CPU kernel got a tensor on {}", in.device());
  check_softmax_dtypes(c, in.dtype(), dt);
  const Tensor x = host::contiguous(dt == ScalarType::Undefined ? in : host::converted(in, dt, c), c);
  const int64_t dim = wrap_dim(c.attrs.get<attrs::Dim>().dim, x.dim(), op_name(c.op).data());
  const Lines l = lines_of(x, dim);
  Tensor out = make_empty(x.sizes(), x.dtype(), x.device());
  visit_dtype<dtypes::kFloating>(x.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data_ptr<T>();
    T* py = out.data_ptr<T>();
    for_each_line(l, [&](int64_t off) { softmax_line<Log>(px + off, py + off, l.n, l.inner); });
  });
  set_output(c, out);
}

// Writes the gradient of softmax (log_softmax when Log) along one line from the output
// gradient g and the forward's output y: the line's sum (of g * y, or of g) in double,
// then backward_math's formula in the compute type, rounded once.
template <bool Log, class T>
void softmax_backward_line(const T* g, const T* y, T* gx, int64_t n, int64_t stride) {
  using M = opmath_t<T>;
  double s = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double gj = static_cast<double>(static_cast<M>(g[j * stride]));
    s += Log ? gj : gj * static_cast<double>(static_cast<M>(y[j * stride]));
  }
  const M k = static_cast<M>(s);
  for (int64_t j = 0; j < n; ++j) {
    const M gj = static_cast<M>(g[j * stride]), yj = static_cast<M>(y[j * stride]);
    gx[j * stride] = convert<T>(Log ? backward_math::log_softmax_grad<M>(gj, std::exp(yj), k)
                                    : backward_math::softmax_grad<M>(yj, gj, k));
  }
}

template <bool Log>
void softmax_backward_kernel(OpCall& c, DispatchKeySet) {
  const int64_t dim = check_softmax_backward(c);
  MIXT_CHECK_OP(c.in[1].is_cpu(), c, "the CPU kernel got a tensor on {}", c.in[1].device());
  const Tensor g = host::contiguous(c.in[0], c), y = host::contiguous(c.in[1], c);
  const Lines l = lines_of(y, dim);
  Tensor out = make_empty(y.sizes(), y.dtype(), y.device());
  visit_dtype<dtypes::kFloating>(y.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *pg = g.data_ptr<T>(), *py = y.data_ptr<T>();
    T* px = out.data_ptr<T>();
    for_each_line(l, [&](int64_t off) { softmax_backward_line<Log>(pg + off, py + off, px + off, l.n, l.inner); });
  });
  set_output(c, out);
}

}  // namespace

void register_softmax_kernels() {
  register_kernel(OpId::softmax, DispatchKey::CPU, softmax_kernel<false>);
  register_kernel(OpId::log_softmax, DispatchKey::CPU, softmax_kernel<true>);
  register_kernel(OpId::softmax_backward, DispatchKey::CPU, softmax_backward_kernel<false>);
  register_kernel(OpId::log_softmax_backward, DispatchKey::CPU, softmax_backward_kernel<true>);
}

}  // namespace mixt::cpu
