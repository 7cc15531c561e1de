// The output size of a sliding window (convolution, im2col, col2im) along one
// spatial dim, shared by the composite convolutions and the im2col kernels.
// Host code (raises mixt::Error).
#pragma once

#include <mixt/dispatcher/op_check.h>
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

}  // namespace mixt
