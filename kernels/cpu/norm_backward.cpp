// The fused backward kernels of layer_norm and rms_norm on the CPU (Note [Fused backward
// ops]), on the vectorised row kernels (kernels/cpu/vec/rows.h). Per row, in double:
// xhat = (x - mean) * rstd (mean = 0 for rms_norm), gw = g * weight, the row means of
// gw * xhat and of gw, then backward_math::norm_input_grad's formula rounded once to x's
// dtype. grad_weight (column sums of g * xhat) and grad_bias (column sums of g) fold in
// backward_math's chunk plan, the CUDA kernel's order.
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/backward_math.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/kernels/cpu/row_buffers.h>
#include <mixt/kernels/cpu/vec/rows.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cpu {
namespace {

namespace bm = backward_math;

// Row r's statistic (float32 or float64 storage) as a double.
struct Stats {
  const void* data = nullptr;
  bool wide = false;
  double operator[](int64_t r) const {
    return wide ? static_cast<const double*>(data)[r] : static_cast<double>(static_cast<const float*>(data)[r]);
  }
};

Stats stats_of(const Tensor& s) { return {s.data_ptr(), s.dtype() == kFloat64}; }

// The inputs, contiguous (the statistics read through `mean` and `rstd`); the weight in
// float64 (or undefined).
struct NormInputs {
  Tensor g, x, weight, mean_t, rstd_t;
  Stats mean, rstd;  // mean.data is null for rms_norm
};

NormInputs gather_inputs(const OpCall& c, const NormBackwardPlan& p) {
  NormInputs in;
  in.g = host::contiguous(c.in[0], c);
  in.x = host::contiguous(c.in[1], c);
  if (p.layer) {
    in.mean_t = host::contiguous(c.in[2], c);
    in.mean = stats_of(in.mean_t);
  }
  in.rstd_t = host::contiguous(c.in[p.layer ? 3 : 2], c);
  in.rstd = stats_of(in.rstd_t);
  if (p.weight >= 0) in.weight = host::contiguous(host::converted(c.in[p.weight], kFloat64, c), c);
  return in;
}

// Stores the column sums `sums` [cols] into `t` (float32 or float64).
void store_sums(const Tensor& t, const std::vector<double>& sums) {
  if (t.dtype() == kFloat64)
    std::copy(sums.begin(), sums.end(), t.data_ptr<double>());
  else
    for (size_t j = 0; j < sums.size(); ++j) t.data_ptr<float>()[j] = static_cast<float>(sums[j]);
}

// The input gradient (into gx, when defined), grad_weight (gw) and grad_bias (gb), in
// one pass over g and x: the rows are walked in backward_math's chunks (in parallel),
// each row read (and widened) once for both the row's gradient and the column sums.
template <class T>
void backward_rows(const NormBackwardPlan& p, const NormInputs& in, const Tensor& gx, const Tensor& gw,
                   const Tensor& gb) {
  using W = work_t<T>;
  const bm::ColumnChunks plan = bm::column_chunks(p.rows);
  const int64_t cols = p.cols;
  const bool want_x = gx.defined() && cols > 0, want_w = gw.defined(), want_b = gb.defined();
  const double* w = in.weight.defined() ? in.weight.data_ptr<double>() : nullptr;
  const double n = static_cast<double>(cols);
  // Per chunk: cols sums of g * xhat, then cols sums of g.
  std::vector<double> partial(want_w || want_b ? static_cast<size_t>(plan.chunks * cols * 2) : 0, 0.0);
  const T *g = in.g.data_ptr<T>(), *x = in.x.data_ptr<T>();
  T* out = want_x ? gx.data_ptr<T>() : nullptr;
  parallel_for(plan.chunks, 1, [&](int64_t b, int64_t e) {
    std::vector<W> gbuf, xbuf, obuf(is_work_type_v<T> ? 0 : static_cast<size_t>(cols));
    for (int64_t ch = b; ch < e; ++ch) {
      double* pw = partial.empty() ? nullptr : partial.data() + ch * cols * 2;
      for (int64_t r = bm::chunk_first_row(plan, ch); r < bm::chunk_end_row(plan, ch, p.rows); ++r) {
        const W* gr = work_row(g + r * cols, cols, gbuf);
        const W* xr = work_row(x + r * cols, cols, xbuf);
        const double m = p.layer ? in.mean[r] : 0.0, rs = in.rstd[r];
        if (want_x) {
          const vec::NormGradSums s = vec::norm_grad_sums(gr, xr, w, cols, m, rs);
          const double dot_mean = s.dot / n, g_mean = p.layer ? s.sum / n : 0.0;
          if constexpr (is_work_type_v<T>) {
            vec::norm_input_grad_row(gr, xr, w, out + r * cols, cols, m, rs, dot_mean, g_mean);
          } else {
            vec::norm_input_grad_row(gr, xr, w, obuf.data(), cols, m, rs, dot_mean, g_mean);
            store_line(obuf.data(), out + r * cols, 1, cols);
          }
        }
        if (pw) vec::norm_column_sums(gr, xr, cols, m, rs, want_w ? pw : nullptr, want_b ? pw + cols : nullptr);
      }
    }
  });
  if (partial.empty()) return;
  std::vector<double> sw(static_cast<size_t>(cols), 0.0), sb(static_cast<size_t>(cols), 0.0);
  for (int64_t ch = 0; ch < plan.chunks; ++ch)
    for (int64_t j = 0; j < cols; ++j) {
      sw[j] += partial[ch * cols * 2 + j];
      sb[j] += partial[ch * cols * 2 + cols + j];
    }
  if (want_w) store_sums(gw, sw);
  if (want_b) store_sums(gb, sb);
}

void set_output(OpCall& c, size_t i, const Tensor& t) {
  if (!t.defined()) return;
  if (c.out[i].defined())
    host::copy_into(c.out[i], t, c);
  else
    c.out[i] = t;
}

void norm_backward_kernel(OpCall& c, DispatchKeySet) {
  const NormBackwardPlan p = plan_norm_backward(c);
  MIXT_CHECK_OP(c.in[1].is_cpu(), c, "the CPU kernel got a tensor on {}", c.in[1].device());
  const NormInputs in = gather_inputs(c, p);
  const Shape& normalized = c.attrs.get<attrs::NormBackward>().normalized_shape;
  const Device dev = in.x.device();
  const Tensor gx = p.input_grad ? make_empty(in.x.sizes(), in.x.dtype(), dev) : Tensor();
  const Tensor gw = p.weight_grad ? make_empty(normalized, p.stat_dtype, dev) : Tensor();
  const Tensor gb = p.bias_grad ? make_empty(normalized, p.stat_dtype, dev) : Tensor();
  visit_dtype<dtypes::kFloating>(in.x.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    backward_rows<T>(p, in, gx, gw, gb);
  });
  set_output(c, 0, gx);
  set_output(c, 1, gw);
  if (p.layer) set_output(c, 2, gb);
}

}  // namespace

void register_norm_backward_kernels() {
  register_kernel(OpId::layer_norm_backward, DispatchKey::CPU, norm_backward_kernel);
  register_kernel(OpId::rms_norm_backward, DispatchKey::CPU, norm_backward_kernel);
}

}  // namespace mixt::cpu
