// The arithmetic of the fused backward kernels of softmax, log_softmax, layer_norm,
// rms_norm, gelu and silu (Note [Fused backward ops]), shared by kernels/cpu and
// kernels/cuda: the per-element formulas and the plan of the column sums (grad_weight,
// grad_bias). Plain C++ with MIXT_HD, so tests/cpu/test_backward_math.cpp runs it on the host.
#pragma once

#include <math.h>

#include <cstdint>

#include <mixt/runtime/macros.h>

namespace mixt::backward_math {

// softmax: grad_input = y * (g - dot) with dot = sum of g * y over the line.
template <class M>
MIXT_HD inline M softmax_grad(M y, M g, M dot) {
  return y * (g - dot);
}

// log_softmax: grad_input = g - exp(y) * sum with sum = sum of g over the line.
template <class M>
MIXT_HD inline M log_softmax_grad(M g, M exp_y, M sum) {
  return g - exp_y * sum;
}

// layer_norm / rms_norm, in double, for one element of a row of n, with
// xhat = (x - mean) * rstd (mean = 0 for rms_norm) and gw = g * weight (g without one):
//   grad_x = rstd * (gw - xhat * mean(gw * xhat) - mean(gw))
// where rms_norm drops the last term (`centered` false). `dot_mean` and `g_mean` are
// the row's mean(gw * xhat) and mean(gw).
MIXT_HD inline double norm_input_grad(double gw, double xhat, double rstd, double dot_mean, double g_mean) {
  return rstd * (gw - xhat * dot_mean - g_mean);
}

// The column sums grad_weight[j] = sum over rows of g * xhat and grad_bias[j] = sum of g
// are folded in a fixed order that does not depend on the device: the rows are cut into
// `chunks` chunks of `rows_per_chunk` (the last may be shorter); each chunk's sum over
// its rows is folded in row order, then the chunks' sums in chunk order. The CPU and the
// CUDA kernel follow the same plan, so their double sums (and the rounded results) agree
// bit for bit.
struct ColumnChunks {
  int64_t rows_per_chunk = 1, chunks = 0;
};
inline constexpr int64_t kColumnChunkMinRows = 32;  // shorter chunks are not worth a pass
inline constexpr int64_t kColumnMaxChunks = 256;    // bounds the partials (chunks x cols doubles)

MIXT_HD inline ColumnChunks column_chunks(int64_t rows) {
  ColumnChunks p;
  if (rows <= 0) return p;
  const int64_t spread = (rows + kColumnMaxChunks - 1) / kColumnMaxChunks;
  p.rows_per_chunk = spread > kColumnChunkMinRows ? spread : kColumnChunkMinRows;
  p.chunks = (rows + p.rows_per_chunk - 1) / p.rows_per_chunk;
  return p;
}

// The rows [first, end) of chunk `c`.
MIXT_HD inline int64_t chunk_first_row(const ColumnChunks& p, int64_t c) { return c * p.rows_per_chunk; }
MIXT_HD inline int64_t chunk_end_row(const ColumnChunks& p, int64_t c, int64_t rows) {
  const int64_t e = (c + 1) * p.rows_per_chunk;
  return e < rows ? e : rows;
}

// ---- gelu_backward, silu_backward: grad_input = g * f'(x) ----
// The derivative a kernel computes (gelu's `approximate` picks GeluErf or GeluTanh).
enum class ActivationGrad : uint8_t { GeluErf, GeluTanh, Silu };

namespace detail {
MIXT_HD inline float exp_of(float x) { return ::expf(x); }
MIXT_HD inline double exp_of(double x) { return ::exp(x); }
MIXT_HD inline float erfc_of(float x) { return ::erfcf(x); }
MIXT_HD inline double erfc_of(double x) { return ::erfc(x); }
MIXT_HD inline float fma_of(float a, float b, float c) { return ::fmaf(a, b, c); }
MIXT_HD inline double fma_of(double a, double b, double c) { return ::fma(a, b, c); }
// Beyond +-limit each derivative is its limit (1 or 0) to the last bit of M, so the
// formulas below run on x clamped there: no Inf * 0 at x = +-Inf. NaN stays NaN.
template <class M>
MIXT_HD inline M clamp_abs(M x, M limit) {
  return x < -limit ? -limit : (x > limit ? limit : x);
}
template <class M>
MIXT_HD inline M exp_minus_40() {  // normal in float
  return M(4.2483542552915889e-18);
}
// The constant of float (M = float) or double.
template <class M>
MIXT_HD inline M pick(M for_float, M for_double) {
  return sizeof(M) == 4 ? for_float : for_double;
}
// sigmoid(w) and sigmoid(-w) = 1 - sigmoid(w) from one exp, neither by a subtraction.
template <class M>
MIXT_HD inline void sigmoid_pair(M w, M& s, M& s_neg) {
  const M e = exp_of(-(w < 0 ? -w : w));
  const M r = M(1) / (M(1) + e);
  s = w >= 0 ? r : e * r;
  s_neg = w >= 0 ? e * r : r;
}
}  // namespace detail

// gelu (erf): g (Phi(x) + x phi(x)), Phi(x) = erfc(-x / sqrt 2) / 2 (no cancellation for
// x << 0), phi(x) = exp(-x^2 / 2) / sqrt(2 pi) with x^2 split exactly into sq + sq_err
// (exp magnifies an error in its argument by the argument). Where exp(-x^2 / 2) would
// be subnormal, it is taken as exp(-x^2 / 2 + K) e^-K with the product rounded last.
template <class M>
MIXT_HD inline M gelu_grad(M g, M x) {
  x = detail::clamp_abs(x, detail::pick<M>(15, 40));
  const M a = x < 0 ? -x : x;
  const M sq = x * x, sq_err = detail::fma_of(x, x, -sq);
  const bool far = a > detail::pick<M>(12, 32);
  const M shift = far ? detail::pick<M>(16, 64) : M(0);
  const M cdf = M(0.5) * detail::erfc_of(x * M(-0.70710678118654752440));
  M x_pdf = x * M(0.39894228040143267794) * (M(1) - M(0.5) * sq_err) * detail::exp_of(shift - M(0.5) * sq);
  if (far) x_pdf *= detail::pick<M>(M(1.1253517471925911451e-07), M(1.6038108905486378e-28));  // e^-16, e^-64
  return g * (cdf + x_pdf);
}

// gelu (tanh): PyTorch's formula 0.5 (1 + tanh z) + 0.5 x (1 - tanh^2 z) z', z = k (x + c x^3),
// k = sqrt(2 / pi), c = 0.044715, written with s = sigmoid(2 z) (1 + tanh z = 2 s,
// 1 - tanh^2 z = 4 s (1 - s)) so that nothing cancels: s (1 + (1 - s) 2 x z'), and 2 x z' =
// 2 k x (1 + 3 c x^2). Where s would be subnormal, s = e^2z and 1 - s = 1 to M's precision:
// exp(2 z + 40) (1 + 2 x z') e^-40, the product rounded last.
template <class M>
MIXT_HD inline M gelu_tanh_grad(M g, M x) {
  x = detail::clamp_abs(x, detail::pick<M>(20, 30));
  const M k2 = M(2 * 0.79788456080286535588), c = M(0.044715), sq = x * x;
  const M w = k2 * (x + c * sq * x), xw = k2 * x * (M(1) + M(3) * c * sq);  // 2 z, 2 x z'
  if (w < detail::pick<M>(-64, -600))
    return g * ((detail::exp_of(w + M(40)) * (M(1) + xw)) * detail::exp_minus_40<M>());
  M s, s_neg;
  detail::sigmoid_pair(w, s, s_neg);
  return g * (s * (M(1) + s_neg * xw));
}

// silu: g s (1 + x (1 - s)), s = sigmoid(x); where s would be subnormal, as gelu (tanh):
// (1 + x) exp(x + 40) e^-40.
template <class M>
MIXT_HD inline M silu_grad(M g, M x) {
  x = detail::clamp_abs(x, detail::pick<M>(150, 800));
  if (x < detail::pick<M>(-64, -600))
    return g * (((M(1) + x) * detail::exp_of(x + M(40))) * detail::exp_minus_40<M>());
  M s, s_neg;
  detail::sigmoid_pair(x, s, s_neg);
  return g * (s * (M(1) + x * s_neg));
}

// The derivative `op` of one element.
template <class M>
MIXT_HD inline M activation_grad(ActivationGrad op, M g, M x) {
  switch (op) {
    case ActivationGrad::GeluErf: return gelu_grad(g, x);
    case ActivationGrad::GeluTanh: return gelu_tanh_grad(g, x);
    default: return silu_grad(g, x);
  }
}

}  // namespace mixt::backward_math
