// The output size of a sliding window (convolution, im2col, col2im) along one
// spatial dim, shared by the composite convolutions and the im2col kernels, and the
// checked window of an im2col / col2im call (kernels/common/conv_window.h holds the
// per-element math that device code shares). Host code (raises mixt::Error).
#pragma once

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/conv_window.h>
#include <mixt/runtime/checked.h>

namespace mixt {

// (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1, with every
// operand checked (they are the caller's attributes) and the products computed
// without overflow; raises, naming the op, when the window does not fit.
inline int64_t window_output_size(const OpCall& c, int64_t in, int64_t kernel, int64_t stride, int64_t padding,
                                  int64_t dilation) {
  MIXT_CHECK_OP(kernel > 0 && stride > 0 && dilation > 0 && padding >= 0, c,
                "kernel {}, stride {} and dilation {} must be positive and padding {} non-negative", kernel, stride,
                dilation, padding);
  MIXT_CHECK_OP(in > 0, c, "the spatial size {} must be positive", in);
  const char* op = op_name(c.op).data();
  const int64_t reach = checked_add(checked_mul(dilation, kernel - 1, op), int64_t{1}, op);
  const int64_t padded = checked_add(in, checked_mul(int64_t{2}, padding, op), op);
  MIXT_CHECK_OP(padded >= reach, c,
                "the window (kernel {}, dilation {}) does not fit the padded input of size {} (padding {}): "
                "no output positions",
                kernel, dilation, in, padding);
  return (padded - reach) / stride + 1;
}

// A transposed convolution's output size along one dim: (in - 1) * stride - 2 * padding +
// dilation * (kernel - 1) + output_padding + 1, checked as window_output_size is; raises,
// naming the op, when it is not positive or output_padding is not below the stride or the dilation.
inline int64_t transposed_output_size(const OpCall& c, int64_t in, int64_t kernel, int64_t stride, int64_t padding,
                                      int64_t dilation, int64_t output_padding) {
  MIXT_CHECK_OP(kernel > 0 && stride > 0 && dilation > 0 && padding >= 0 && output_padding >= 0, c,
                "kernel {}, stride {} and dilation {} must be positive, padding {} and output_padding {} non-negative",
                kernel, stride, dilation, padding, output_padding);
  MIXT_CHECK_OP(output_padding < stride || output_padding < dilation, c,
                "output_padding {} must be smaller than the stride {} or the dilation {}", output_padding, stride,
                dilation);
  MIXT_CHECK_OP(in > 0, c, "the spatial size {} must be positive", in);
  const char* op = op_name(c.op).data();
  const int64_t full = checked_add(checked_mul(in - 1, stride, op),
                                   checked_add(checked_mul(dilation, kernel - 1, op), int64_t{1}, op), op);
  const int64_t out = checked_add(full - checked_mul(int64_t{2}, padding, op), output_padding, op);
  MIXT_CHECK_OP(out > 0, c, "the output size {} is not positive (input size {}, kernel {}, padding {})", out, in,
                kernel, padding);
  return out;
}

// A pooling window's output size along one dim, as PyTorch's: window_output_size, or with
// ceil_mode rounded up, less a last window that would start past the input and its left
// padding. The padding is at most half the kernel.
inline int64_t pool_output_size(const OpCall& c, int64_t in, int64_t kernel, int64_t stride, int64_t padding,
                                int64_t dilation, bool ceil_mode) {
  const int64_t floor_out = window_output_size(c, in, kernel, stride, padding, dilation);
  MIXT_CHECK_OP(padding <= kernel / 2, c, "padding {} must be at most half the kernel size {}", padding, kernel);
  if (!ceil_mode) return floor_out;
  const int64_t span = in + 2 * padding - dilation * (kernel - 1) - 1;  // fits: window_output_size checked it
  int64_t out = span / stride + (span % stride != 0) + 1;
  if ((out - 1) * stride >= in + padding) --out;
  return out;
}

namespace conv {

// The window attributes of im2col / col2im: one value per spatial dim each.
struct WindowAttrs {
  const Shape &kernel, &stride, &padding, &dilation;
};
inline WindowAttrs window_attrs(const OpCall& c) {
  if (c.op == OpId::col2im) {
    const auto& a = c.attrs.get<attrs::Col2im>();
    return {a.kernel, a.stride, a.padding, a.dilation};
  }
  const auto& a = c.attrs.get<attrs::Im2col>();
  return {a.kernel, a.stride, a.padding, a.dilation};
}

// The number of spatial dims of the window: 1 or 2, the same for every attribute.
inline int window_rank(const OpCall& c) {
  const WindowAttrs a = window_attrs(c);
  const int r = a.kernel.size();
  MIXT_CHECK_OP((r == 1 || r == 2) && a.stride.size() == r && a.padding.size() == r && a.dilation.size() == r, c,
                "expected kernel, stride, padding and dilation for 1 or 2 spatial dims, got {}, {}, {}, {}", a.kernel,
                a.stride, a.padding, a.dilation);
  return r;
}

// The window of the attributes over an image of `spatial` size.
inline Window make_window(const OpCall& c, const Shape& spatial) {
  const WindowAttrs a = window_attrs(c);
  const int r = window_rank(c);
  MIXT_CHECK_OP(spatial.size() == r, c, "expected {} spatial sizes for a {}-D window, got {}", r, r, spatial);
  Window w;
  w.rank = r;
  for (int i = 0; i < r; ++i) {
    const int j = i + 2 - r;  // 1-D windows fill the second slot
    w.k[j] = a.kernel[i], w.s[j] = a.stride[i], w.p[j] = a.padding[i], w.d[j] = a.dilation[i], w.in[j] = spatial[i];
    w.out[j] = window_output_size(c, w.in[j], w.k[j], w.s[j], w.p[j], w.d[j]);
  }
  // Every later product of these sizes is bounded by the two checked here.
  const char* op = op_name(c.op).data();
  checked_mul(checked_mul(w.k[0], w.k[1], op), checked_mul(w.out[0], w.out[1], op), op);
  checked_mul(w.in[0], w.in[1], op);
  return w;
}

// The window of a call and the shape of its result.
struct WindowCall {
  Window w;
  Shape out_sizes;
};

// im2col: x [N, C, *spatial] -> [N, C * prod(kernel), L].
inline WindowCall im2col_call(const OpCall& c, const Tensor& x) {
  const int r = window_rank(c);
  MIXT_CHECK_OP(x.dim() == r + 2, c, "expected an input [N, C, *spatial] with {} spatial dims, got shape {}", r,
                x.sizes());
  Shape spatial;
  for (int i = 2; i < x.dim(); ++i) spatial.push_back(x.size(i));
  const Window w = make_window(c, spatial);
  return {w, Shape{x.size(0), checked_mul(x.size(1), w.kernel_numel(), "im2col"), w.blocks()}};
}

// col2im: cols [N, C * prod(kernel), L] -> [N, C, *output_size].
inline WindowCall col2im_call(const OpCall& c, const Tensor& cols) {
  const Shape& output_size = c.attrs.get<attrs::Col2im>().output_size;
  const Window w = make_window(c, output_size);
  MIXT_CHECK_OP(cols.dim() == 3, c, "expected columns [N, C * prod(kernel), L], got shape {}", cols.sizes());
  const int64_t kn = w.kernel_numel();
  MIXT_CHECK_OP(cols.size(1) % kn == 0, c, "dim 1 of the columns ({}) is not a multiple of the kernel size {}",
                cols.size(1), kn);
  MIXT_CHECK_OP(cols.size(2) == w.blocks(), c,
                "the columns hold {} blocks but the output size {} with this window gives {}", cols.size(2),
                output_size, w.blocks());
  Shape out_sizes{cols.size(0), cols.size(1) / kn};
  for (int64_t s : output_size) out_sizes.push_back(s);
  return {w, out_sizes};
}

}  // namespace conv
}  // namespace mixt
