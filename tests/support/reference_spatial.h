// Independent references of the spatial nn ops (convolutions of any rank, transposed
// convolutions, pooling, padding, interpolation, grid sampling): double loops over
// every output position, written from PyTorch's definitions (reference.h's
// conventions). They never call mixt.
#pragma once

#include <optional>

#include "reference.h"

namespace mixt::testing::ref {

// The window geometry of a convolution or pooling: one value per spatial dim each.
struct Window {
  Sizes kernel, stride, padding, dilation;
};

// Convolution of x [N, C, *spatial] with w [O, C / groups, *kernel] (+ bias [O] when not empty).
Ref conv_nd(const Ref& x, const Ref& w, const Vec& bias, const Sizes& stride, const Sizes& padding,
            const Sizes& dilation, int64_t groups);
// Transposed convolution of x [N, C, *spatial] with w [C, O / groups, *kernel]: every input element
// adds x * w at output position i * stride - padding + k * dilation.
Ref conv_transpose_nd(const Ref& x, const Ref& w, const Vec& bias, const Sizes& stride, const Sizes& padding,
                      const Sizes& output_padding, const Sizes& dilation, int64_t groups);
// avg_pool of x [N, C, *spatial] (window.dilation unused).
Ref avg_pool_nd(const Ref& x, const Window& window, bool ceil_mode, bool count_include_pad);
// max_pool of x [N, C, *spatial]: the maxima, and with `indices` their flat positions in the input plane.
Ref max_pool_nd(const Ref& x, const Window& window, bool ceil_mode, bool indices);
// adaptive_avg_pool of x [N, C, *spatial] to `out`.
Ref adaptive_avg_pool_nd(const Ref& x, const Sizes& out);
// Pads the trailing dims of x ((before, after) pairs from the last dim on): mode 'c'onstant
// (with value; negative pads crop), 'r'eflect or 'e'dge (replicate).
Ref pad_nd(const Ref& x, const Sizes& pads, char mode, double value);
// upsample_nearest2d / upsample_bilinear2d of x [N, C, H, W] to [N, C, oh, ow]; scales: the
// factors asked for (none: the size ratio).
Ref upsample_nearest2d(const Ref& x, int64_t oh, int64_t ow, std::optional<double> scale_h,
                       std::optional<double> scale_w);
Ref upsample_bilinear2d(const Ref& x, int64_t oh, int64_t ow, bool align_corners, std::optional<double> scale_h,
                        std::optional<double> scale_w);
// grid_sample of x [N, C, H, W] at grid [N, OH, OW, 2].
Ref grid_sample2d(const Ref& x, const Ref& grid, bool nearest, bool border, bool align_corners);

}  // namespace mixt::testing::ref
