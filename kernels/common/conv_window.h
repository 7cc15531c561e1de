// The sliding-window math of im2col / col2im, shared by the CPU kernels
// (kernels/cpu/conv.cpp), the CUDA kernels (kernels/cuda/conv.cu) and host tests.
// A window is 2-D (a 1-D window has kernel 1, stride 1, padding 0 and input 1 along h).
// Columns of one channel plane are ordered (kernel position, output position), both
// row-major: col = ((ki * k[1] + kj) * out[0] + oi) * out[1] + oj. Plain code (MIXT_HD).
#pragma once

#include <cstdint>

#include <mixt/runtime/macros.h>

namespace mixt::conv {

struct Window {
  int rank = 2;
  int64_t k[2] = {1, 1}, s[2] = {1, 1}, p[2] = {0, 0}, d[2] = {1, 1};
  int64_t in[2] = {1, 1}, out[2] = {1, 1};
  MIXT_HD int64_t kernel_numel() const { return k[0] * k[1]; }
  MIXT_HD int64_t blocks() const { return out[0] * out[1]; }
  MIXT_HD int64_t plane() const { return in[0] * in[1]; }
  MIXT_HD int64_t taps() const { return kernel_numel() * blocks(); }  // columns per channel plane
};

// The input position (ii * in[1] + ij) that column `col` of a plane reads, or -1 when it
// falls into the padding (what one im2col thread computes).
MIXT_HD inline int64_t im2col_source(const Window& w, int64_t col) {
  const int64_t oj = col % w.out[1];
  int64_t r = col / w.out[1];
  const int64_t oi = r % w.out[0];
  r /= w.out[0];
  const int64_t kj = r % w.k[1], ki = r / w.k[1];
  const int64_t ii = oi * w.s[0] - w.p[0] + ki * w.d[0];
  const int64_t ij = oj * w.s[1] - w.p[1] + kj * w.d[1];
  return ii >= 0 && ii < w.in[0] && ij >= 0 && ij < w.in[1] ? ii * w.in[1] + ij : -1;
}

// Visits every column of a plane in order with its input position or -1: f(col, input).
// The CPU's walk (im2col writes, col2im accumulates in this order).
template <class F>
MIXT_HD void for_each_tap(const Window& w, F&& f) {
  int64_t col = 0;
  for (int64_t ki = 0; ki < w.k[0]; ++ki)
    for (int64_t kj = 0; kj < w.k[1]; ++kj)
      for (int64_t oi = 0; oi < w.out[0]; ++oi) {
        const int64_t ii = oi * w.s[0] - w.p[0] + ki * w.d[0];
        const bool row_in = ii >= 0 && ii < w.in[0];
        for (int64_t oj = 0; oj < w.out[1]; ++oj, ++col) {
          const int64_t ij = oj * w.s[1] - w.p[1] + kj * w.d[1];
          f(col, row_in && ij >= 0 && ij < w.in[1] ? ii * w.in[1] + ij : -1);
        }
      }
}

// The output position along one dim whose window tap `kpos` lands on input `i`, or -1.
MIXT_HD inline int64_t window_origin(int64_t i, int64_t kpos, int64_t stride, int64_t pad, int64_t dil, int64_t n_out) {
  const int64_t t = i + pad - kpos * dil;
  if (t < 0 || t % stride != 0) return -1;
  const int64_t o = t / stride;
  return o < n_out ? o : -1;
}

// Visits the columns that read input position (ii, ij), in increasing column order (the
// order for_each_tap meets them, so a sum over f's calls rounds as the CPU's): f(col).
// What one col2im thread gathers; no two threads write one output.
template <class F>
MIXT_HD void for_each_contribution(const Window& w, int64_t ii, int64_t ij, F&& f) {
  for (int64_t ki = 0; ki < w.k[0]; ++ki) {
    const int64_t oi = window_origin(ii, ki, w.s[0], w.p[0], w.d[0], w.out[0]);
    if (oi < 0) continue;
    for (int64_t kj = 0; kj < w.k[1]; ++kj) {
      const int64_t oj = window_origin(ij, kj, w.s[1], w.p[1], w.d[1], w.out[1]);
      if (oj >= 0) f(((ki * w.k[1] + kj) * w.out[0] + oi) * w.out[1] + oj);
    }
  }
}

}  // namespace mixt::conv
