// The arithmetic of the fused backward kernels of softmax, log_softmax, layer_norm and
// rms_norm (Note [Fused backward ops]), shared by kernels/cpu and kernels/cuda: the
// per-element formulas and the plan of the column sums (grad_weight, grad_bias). Plain
// C++ with MIXT_HD, so tests/cpu/test_backward_math.cpp runs it on the host.
#pragma once

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

}  // namespace mixt::backward_math
