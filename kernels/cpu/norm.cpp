// layer_norm and rms_norm on the CPU. Each row (the trailing normalized_shape
// dims) is reduced in double with two passes (mean, then centred squares) and mapped
// in double by the vectorised row kernels (kernels/cpu/vec/rows.h), so narrow floats
// lose nothing before the single rounding of y. The statistics
// (mean and rstd, shape x.shape[:-k]) are returned in x's accumulate type
// (float32, float64 for float64 inputs) for the backward formulas.
#include <cmath>
#include <limits>
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/kernels/cpu/row_buffers.h>
#include <mixt/kernels/cpu/vec/rows.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cpu {
namespace {

// A normalization call, validated: x as [rows, cols] plus affine parameters in float64.
struct NormPlan {
  Tensor x;             // contiguous
  Tensor weight, bias;  // contiguous float64 [cols], or undefined
  Shape stat_sizes;     // x.shape[:-k]
  int64_t rows = 1, cols = 1;
};

// An affine parameter as float64 [cols] after checking its shape and dtype.
Tensor affine_param(const OpCall& c, int i, const Shape& normalized, const char* what) {
  if (c.n_in <= i || !c.in[i].defined()) return Tensor();
  const Tensor& p = c.in[i];
  MIXT_CHECK_OP(p.is_cpu(), c, "the {} is on {}, expected the cpu", what, p.device());
  return host::contiguous(host::converted(p, kFloat64, c), c);
}

NormPlan plan_norm(const OpCall& c, bool has_bias) {
  const Tensor& x = c.in[0];
  const Shape& normalized = c.op == OpId::rms_norm ? c.attrs.get<attrs::RmsNorm>().normalized_shape
                                                   : c.attrs.get<attrs::LayerNorm>().normalized_shape;
  MIXT_CHECK_OP(x.is_cpu(), c, "the CPU kernel got a tensor on {}", x.device());
  NormPlan p;
  p.stat_sizes = normalization_stats_shape(c, normalized, has_bias ? 2 : 1);
  p.x = host::contiguous(x, c);
  p.weight = affine_param(c, 1, normalized, "weight");
  if (has_bias) p.bias = affine_param(c, 2, normalized, "bias");
  p.cols = normalized.numel();
  p.rows = p.stat_sizes.numel();
  return p;
}

// Runs row(x, y, r) over every row r of x with x and y work rows (row_buffers.h): the
// rows themselves for float and double, converted copies for the narrow floats.
template <class Row>
Tensor for_each_row(const OpCall& c, const NormPlan& p, Row&& row) {
  Tensor y = make_empty(p.x.sizes(), p.x.dtype(), p.x.device());
  visit_dtype<dtypes::kFloating>(p.x.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using W = work_t<T>;
    const T* px = p.x.data_ptr<T>();
    T* py = y.data_ptr<T>();
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, p.cols));
    parallel_for(p.rows, grain, [&](int64_t b, int64_t e) {
      std::vector<W> xbuf, ybuf(is_work_type_v<T> ? 0 : static_cast<size_t>(p.cols));
      for (int64_t r = b; r < e; ++r) {
        const W* x = work_row(px + r * p.cols, p.cols, xbuf);
        if constexpr (is_work_type_v<T>) {
          row(x, py + r * p.cols, r);
        } else {
          row(x, ybuf.data(), r);
          store_line(ybuf.data(), py + r * p.cols, 1, p.cols);
        }
      }
    });
  });
  return y;
}

// Stores a statistic of row r into the accumulate-type tensor `stat`.
void put_stat(const Tensor& stat, int64_t r, double v) {
  if (stat.dtype() == kFloat64)
    stat.data_ptr<double>()[r] = v;
  else
    stat.data_ptr<float>()[r] = static_cast<float>(v);
}

void set_outputs(OpCall& c, std::initializer_list<Tensor> results) {
  int k = 0;
  for (const Tensor& t : results) {
    Tensor& given = c.out[static_cast<size_t>(k++)];
    if (given.defined())
      host::copy_into(given, t, c);
    else
      given = t;
  }
}

const double* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr<double>() : nullptr; }

void layer_norm_kernel(OpCall& c, DispatchKeySet) {
  const NormPlan p = plan_norm(c, true);
  const double eps = c.attrs.get<attrs::LayerNorm>().eps;
  const ScalarType st = accumulate_type(p.x.dtype());
  const Tensor mean = make_empty(p.stat_sizes, st, p.x.device()), rstd = make_empty(p.stat_sizes, st, p.x.device());
  const double *w = data_or_null(p.weight), *b = data_or_null(p.bias);
  const Tensor y = for_each_row(c, p, [&](const auto* x, auto* y, int64_t r) {
    const vec::RowMoments mv = vec::row_moments(x, p.cols, true);
    const double rs = 1.0 / std::sqrt(mv.var + eps);
    vec::norm_affine_row(x, y, p.cols, mv.mean, rs, w, b);
    put_stat(mean, r, mv.mean);
    put_stat(rstd, r, rs);
  });
  set_outputs(c, {y, mean, rstd});
}

void rms_norm_kernel(OpCall& c, DispatchKeySet) {
  const NormPlan p = plan_norm(c, false);
  const double eps = c.attrs.get<attrs::RmsNorm>().eps.value_or(rms_norm_default_eps(p.x.dtype()));
  const Tensor rstd = make_empty(p.stat_sizes, accumulate_type(p.x.dtype()), p.x.device());
  const double* w = data_or_null(p.weight);
  const Tensor y = for_each_row(c, p, [&](const auto* x, auto* y, int64_t r) {
    const double rs = 1.0 / std::sqrt(vec::row_moments(x, p.cols, false).var + eps);
    vec::norm_affine_row(x, y, p.cols, 0.0, rs, w, nullptr);
    put_stat(rstd, r, rs);
  });
  set_outputs(c, {y, rstd});
}

}  // namespace

void register_norm_kernels() {
  register_kernel(OpId::layer_norm, DispatchKey::CPU, layer_norm_kernel);
  register_kernel(OpId::rms_norm, DispatchKey::CPU, rms_norm_kernel);
}

}  // namespace mixt::cpu
