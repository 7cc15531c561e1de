// cross_entropy_rows and cross_entropy_rows_backward on the CPU (Note [Fused
// cross-entropy]). Each row of logits goes through the vectorised row kernels
// (kernels/cpu/vec/rows.h) as a work row: float32 and float64 in place, the narrow floats
// widened to float32 (row_buffers.h). The forward reads a row twice (its maximum, then
// the sum of exp and, with label smoothing, the weighted gaps) and keeps no [N, C]
// intermediate; the row's loss comes from cross_entropy_math.h in double, rounded once to
// the accumulate type. The backward reads a row once and writes its gradient once.
#include <algorithm>
#include <cmath>
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/cross_entropy_math.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/kernels/cpu/row_buffers.h>
#include <mixt/kernels/cpu/vec/rows.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cpu {
namespace {

namespace cem = cross_entropy_math;

// The rows' targets as int64, each checked to be a class in [0, C) or ignore_index.
std::vector<int64_t> checked_targets(const OpCall& c, const CrossEntropyRowsPlan& p, int64_t ignore_index) {
  const Tensor t = host::contiguous(c.in[p.target], c);
  std::vector<int64_t> v(static_cast<size_t>(p.rows));
  if (t.dtype() == kInt32)
    std::copy_n(t.data_ptr<int32_t>(), p.rows, v.begin());
  else
    std::copy_n(t.data_ptr<int64_t>(), p.rows, v.begin());
  for (const int64_t k : v)
    MIXT_CHECK_OP(cem::target_kind(k, p.classes, ignore_index) != cem::TargetKind::OutOfBounds, c,
                  "target {} is out of bounds: classes are [0, {}) (ignore_index {})", k, p.classes, ignore_index);
  return v;
}

// What both kernels read: the checked targets, contiguous logits, the weight (or undefined)
// and the row constants of the smoothing term.
struct RowsInputs {
  std::vector<int64_t> target;
  Tensor x, weight;
  int64_t ignore_index = -100;
  double eps = 0, sum_w = 0;  // label_smoothing and W, the sum of the class weights (read only when eps > 0)
};

RowsInputs gather_inputs(const OpCall& c, const CrossEntropyRowsPlan& p) {
  MIXT_CHECK_OP(c.in[p.logits].is_cpu(), c, "the CPU kernel got a tensor on {}", c.in[p.logits].device());
  const auto& a = c.attrs.get<attrs::CrossEntropy>();
  RowsInputs in;
  in.ignore_index = a.ignore_index;
  in.eps = a.label_smoothing;
  in.target = checked_targets(c, p, a.ignore_index);
  in.x = host::contiguous(c.in[p.logits], c);
  if (p.weight >= 0) in.weight = host::contiguous(c.in[p.weight], c);
  in.sum_w = static_cast<double>(p.classes);
  if (in.eps > 0 && in.weight.defined()) {
    if (p.acc_dtype == kFloat64)
      in.sum_w = vec::sum_row(in.weight.data_ptr<double>(), p.classes);
    else
      in.sum_w = vec::sum_row(in.weight.data_ptr<float>(), p.classes);
  }
  return in;
}

// Rows handed to one task: about kParallelGrain logits.
int64_t row_grain(const CrossEntropyRowsPlan& p) { return std::max<int64_t>(1, kParallelGrain / p.classes); }

template <class T>
void forward_rows(const CrossEntropyRowsPlan& p, const RowsInputs& in, const Tensor& loss, const Tensor& lse) {
  using W = work_t<T>;
  const int64_t n = p.classes;
  const T* x = in.x.data_ptr<T>();
  const W* w = in.weight.defined() ? in.weight.data_ptr<W>() : nullptr;
  W *pl = loss.data_ptr<W>(), *ps = lse.data_ptr<W>();
  const double classes = static_cast<double>(n);
  parallel_for(p.rows, row_grain(p), [&](int64_t b, int64_t e) {
    std::vector<W> buf;
    for (int64_t r = b; r < e; ++r) {
      const W* row = work_row(x + r * n, n, buf);
      const int64_t t = in.target[static_cast<size_t>(r)];
      const bool ignored = t == in.ignore_index;
      const vec::CrossEntropySums s = vec::cross_entropy_sums(row, w, n, in.eps > 0 && !ignored);
      const double log_s = std::log(s.s);
      ps[r] = static_cast<W>(s.m + log_s);
      if (ignored) {
        pl[r] = W(0);
        continue;
      }
      const double w_t = w ? static_cast<double>(w[t]) : 1.0;
      const double gap_t = s.m - static_cast<double>(row[t]);
      pl[r] = static_cast<W>(cem::row_loss(log_s, gap_t, w_t, s.gap_sum, in.sum_w, in.eps, classes));
    }
  });
}

template <class T>
void backward_rows(const CrossEntropyRowsPlan& p, const RowsInputs& in, const Tensor& grad_loss, const Tensor& lse,
                   const Tensor& gx) {
  using W = work_t<T>;
  const int64_t n = p.classes;
  const T* x = in.x.data_ptr<T>();
  const W* w = in.weight.defined() ? in.weight.data_ptr<W>() : nullptr;
  const W *g = grad_loss.data_ptr<W>(), *ls = lse.data_ptr<W>();
  T* out = gx.data_ptr<T>();
  const double classes = static_cast<double>(n);
  parallel_for(p.rows, row_grain(p), [&](int64_t b, int64_t e) {
    std::vector<W> buf, obuf(is_work_type_v<T> ? 0 : static_cast<size_t>(n));
    for (int64_t r = b; r < e; ++r) {
      const int64_t t = in.target[static_cast<size_t>(r)];
      T* o = out + r * n;
      if (t == in.ignore_index) {
        std::fill(o, o + n, convert<T>(W(0)));
        continue;
      }
      const double w_t = w ? static_cast<double>(w[t]) : 1.0;
      const cem::RowGrad<W> rg = cem::row_grad<W>(static_cast<double>(g[r]), w_t, in.sum_w, in.eps, classes);
      const W* row = work_row(x + r * n, n, buf);
      if constexpr (is_work_type_v<T>) {
        vec::cross_entropy_grad_row(row, w, o, n, ls[r], rg, t);
      } else {
        vec::cross_entropy_grad_row(row, w, obuf.data(), n, ls[r], rg, t);
        store_line(obuf.data(), o, 1, n);
      }
    }
  });
}

void set_output(OpCall& c, size_t i, const Tensor& t) {
  if (c.out[i].defined())
    host::copy_into(c.out[i], t, c);
  else
    c.out[i] = t;
}

void cross_entropy_rows_kernel(OpCall& c, DispatchKeySet) {
  const CrossEntropyRowsPlan p = plan_cross_entropy_rows(c);
  const RowsInputs in = gather_inputs(c, p);
  const Tensor loss = make_empty({p.rows}, p.acc_dtype, in.x.device());
  const Tensor lse = make_empty({p.rows}, p.acc_dtype, in.x.device());
  visit_dtype<dtypes::kFloating>(p.logits_dtype, op_name(c.op).data(), [&](auto tag) {
    forward_rows<typename decltype(tag)::type>(p, in, loss, lse);
  });
  set_output(c, 0, loss);
  set_output(c, 1, lse);
}

void cross_entropy_rows_backward_kernel(OpCall& c, DispatchKeySet) {
  const CrossEntropyRowsPlan p = plan_cross_entropy_rows(c);
  const RowsInputs in = gather_inputs(c, p);
  const Tensor g = host::contiguous(c.in[p.grad], c), lse = host::contiguous(c.in[p.lse], c);
  const Tensor gx = make_empty({p.rows, p.classes}, p.logits_dtype, in.x.device());
  visit_dtype<dtypes::kFloating>(p.logits_dtype, op_name(c.op).data(), [&](auto tag) {
    backward_rows<typename decltype(tag)::type>(p, in, g, lse, gx);
  });
  set_output(c, 0, gx);
}

}  // namespace

void register_cross_entropy_kernels() {
  register_kernel(OpId::cross_entropy_rows, DispatchKey::CPU, cross_entropy_rows_kernel);
  register_kernel(OpId::cross_entropy_rows_backward, DispatchKey::CPU, cross_entropy_rows_backward_kernel);
}

}  // namespace mixt::cpu
