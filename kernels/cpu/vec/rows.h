// Vectorised row kernels of softmax, log_softmax, layer_norm and rms_norm (forward and
// backward) and of the floating sums, compiled once per instruction set (rows.cpp,
// dispatch.h). Rows are contiguous float or double work rows: the callers widen
// bfloat16, float16 and float8 rows into float rows first (row_buffers.h).
//
// Accumulation: every sum here is taken in double in 32 fixed slots (element i of a row
// goes to slot i % 32), which are then added in a fixed pairwise tree. The order does not
// depend on the instruction set, so sums of the same terms give the same bits on every
// one (Note [Row kernels and reductions] in docs/notes/cpu-vectorisation.md).
#pragma once

#include <cstdint>

#include <mixt/kernels/common/cross_entropy_math.h>

namespace mixt::cpu::vec {

// softmax (log_softmax when `log`) of the n values x[0..n) into y (which must not alias
// x). The maximum is subtracted first; exp runs on float (double) vectors and the
// denominator is summed in double. A row holding NaN, +Inf, or only -Inf gives NaN.
void softmax_row(const float* x, float* y, int64_t n, bool log);
void softmax_row(const double* x, double* y, int64_t n, bool log);

// The gradient of softmax (log_softmax) along one row from the output gradient g and the
// forward's output y: k = sum(g * y) (sum(g)) in double, rounded to the compute type, then
// y * (g - k) (g - exp(y) * k) in it.
void softmax_backward_row(const float* g, const float* y, float* gx, int64_t n, bool log);
void softmax_backward_row(const double* g, const double* y, double* gx, int64_t n, bool log);

// The sums of one row x of n >= 1 logits for cross_entropy_rows (Note [Fused
// cross-entropy]): m, the row's maximum (NaN when the row holds a NaN); s = sum of
// exp(x_c - m), exp in the work type as softmax_row, summed in double; and, with `gaps`,
// gap_sum = sum of w_c (m - x_c) in double (every w_c = 1 when w is null), terms that are
// never negative. Two passes over x: the maximum, then both sums.
struct CrossEntropySums {
  double m = 0, s = 0, gap_sum = 0;
};
CrossEntropySums cross_entropy_sums(const float* x, const float* w, int64_t n, bool gaps);
CrossEntropySums cross_entropy_sums(const double* x, const double* w, int64_t n, bool gaps);

// One row of cross_entropy_rows_backward: gx_c = logit_grad(r, exp(x_c - lse), w_c,
// c == target) in the work type (cross_entropy_math.h; w_c = 1 when w is null).
void cross_entropy_grad_row(const float* x, const float* w, float* gx, int64_t n, float lse,
                            const cross_entropy_math::RowGrad<float>& r, int64_t target);
void cross_entropy_grad_row(const double* x, const double* w, double* gx, int64_t n, double lse,
                            const cross_entropy_math::RowGrad<double>& r, int64_t target);

// Column kernels of softmax along an outer dim: the lines are the w columns of a block
// whose rows (one per position along the dim) are streamed in order, each as a work row.
// The maxima: extremum_row_into(x, m, w, true) below.
// s[c] += exp(x[c] - m[c]) in double (exp in the work type, as softmax_row).
void col_sum_exp(const float* x, const float* m, double* s, int64_t w);
void col_sum_exp(const double* x, const double* m, double* s, int64_t w);
// y[c] = exp(x[c] - m[c]) * k[c] (softmax: k = 1 / sum) or x[c] - m[c] - k[c] (log: k = log(sum)).
void col_softmax_out(const float* x, const float* m, const float* k, float* y, int64_t w, bool log);
void col_softmax_out(const double* x, const double* m, const double* k, double* y, int64_t w, bool log);
// The backward's sums s[c] += g[c] * y[c] (log: += g[c]) in double, and its output
// gx[c] = y[c] * (g[c] - k[c]) (log: g[c] - exp(y[c]) * k[c]).
void col_backward_sum(const float* g, const float* y, double* s, int64_t w, bool log);
void col_backward_sum(const double* g, const double* y, double* s, int64_t w, bool log);
void col_backward_out(const float* g, const float* y, const float* k, float* gx, int64_t w, bool log);
void col_backward_out(const double* g, const double* y, const double* k, double* gx, int64_t w, bool log);

// A row's mean and (biased) variance in double, two passes; with centred = false, the
// mean is 0 and var is the mean square (rms_norm). Empty rows give {0, 0}.
struct RowMoments {
  double mean = 0, var = 0;
};
RowMoments row_moments(const float* x, int64_t n, bool centred);
RowMoments row_moments(const double* x, int64_t n, bool centred);

// y_j = (x_j - mean) * rstd [* w_j] [+ b_j] in double, rounded once to y's type (w, b
// may be null).
void norm_affine_row(const float* x, float* y, int64_t n, double mean, double rstd, const double* w,
                     const double* b);
void norm_affine_row(const double* x, double* y, int64_t n, double mean, double rstd, const double* w,
                     const double* b);

// For the backward of a normalisation: gw_j = g_j [* w_j], xhat_j = (x_j - mean) * rstd;
// dot = sum(gw * xhat) and sum = sum(gw), in double.
struct NormGradSums {
  double dot = 0, sum = 0;
};
NormGradSums norm_grad_sums(const float* g, const float* x, const double* w, int64_t n, double mean, double rstd);
NormGradSums norm_grad_sums(const double* g, const double* x, const double* w, int64_t n, double mean,
                            double rstd);

// gx_j = rstd * (gw_j - xhat_j * dot_mean - g_mean) in double, rounded once.
void norm_input_grad_row(const float* g, const float* x, const double* w, float* gx, int64_t n, double mean,
                         double rstd, double dot_mean, double g_mean);
void norm_input_grad_row(const double* g, const double* x, const double* w, double* gx, int64_t n, double mean,
                         double rstd, double dot_mean, double g_mean);

// Column sums of a normalisation's backward over one row, in double: gw_sum[j] +=
// g_j * xhat_j and gb_sum[j] += g_j (either may be null).
void norm_column_sums(const float* g, const float* x, int64_t n, double mean, double rstd, double* gw_sum,
                      double* gb_sum);
void norm_column_sums(const double* g, const double* x, int64_t n, double mean, double rstd, double* gw_sum,
                      double* gb_sum);

// The sum of the n values at x in double (the slot order above).
double sum_row(const float* x, int64_t n);
double sum_row(const double* x, int64_t n);

// sum(exp(x_j - m)) in double (exp evaluated in double): logsumexp's run of values.
double sum_exp_row(const float* x, int64_t n, double m);
double sum_exp_row(const double* x, int64_t n, double m);

// sum(x_j * x_j) (squares) or sum(|x_j|) in double: the 2- and 1-norms.
double abs_sum_row(const float* x, int64_t n, bool squares);
double abs_sum_row(const double* x, int64_t n, bool squares);

// The largest (max) or smallest value of the n >= 1 values at x; a row holding NaN gives
// its last NaN (as reducers::Extremum folding the row in order).
float extremum_row(const float* x, int64_t n, bool max);
double extremum_row(const double* x, int64_t n, bool max);

// One row of a reduction over an outer dim, folded into per-column accumulators:
// acc[j] += x[j] in double (sums);
void add_row_into(const float* x, double* acc, int64_t n);
void add_row_into(const double* x, double* acc, int64_t n);
// acc[j] += x[j] * x[j] (squares) or |x[j]| in double (2- and 1-norms);
void add_abs_row_into(const float* x, double* acc, int64_t n, bool squares);
void add_abs_row_into(const double* x, double* acc, int64_t n, bool squares);
// acc[j] = x[j] when x[j] is NaN or beyond acc[j] (max, else min), as reducers::Extremum;
void extremum_row_into(const float* x, float* acc, int64_t n, bool max);
void extremum_row_into(const double* x, double* acc, int64_t n, bool max);
// Welford's step for the count-th row (count >= 1): d = x - mean, mean += d / count,
// m2 += d * (x - mean), in double, as reducers::Welford.
void welford_row_into(const float* x, double* mean, double* m2, int64_t count, int64_t n);
void welford_row_into(const double* x, double* mean, double* m2, int64_t count, int64_t n);

}  // namespace mixt::cpu::vec
