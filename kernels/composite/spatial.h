// What the spatial composites share (kernels/composite/spatial.cpp, pooling.cpp,
// padding.cpp, resample.cpp, and conv3d in nn.cpp): windows taken by strided slices,
// constant padding per dim, and the batch dim of an unbatched input.
#pragma once

#include <mixt/dispatcher/dispatch.h>

namespace mixt::composite {

// im2col for any number of spatial dims: x [N, C, *spatial] -> [N, C * prod(kernel), L],
// the window taps in row-major kernel order, from strided slices of the zero-padded input.
// The geometry is checked (window_output_size), naming c's op.
Tensor unfold_windows(const OpCall& c, const Tensor& x, const Shape& kernel, const Shape& stride, const Shape& padding,
                      const Shape& dilation);

// PyTorch's pad list for the trailing spatial dims of x: (before[i], after[i]) pairs from the
// last dim on; `before` and `after` hold one value per spatial dim, first dim first.
Shape pad_pairs(const Shape& before, const Shape& after);

// x with a batch dim of 1 in front when it has `rank` + 1 dims (unbatched), else x as it is;
// raises, naming c's op, unless x has rank + 1 or rank + 2 dims.
Tensor batched(const OpCall& c, const Tensor& x, int rank);

// The registrations of pooling.cpp, padding.cpp and resample.cpp (spatial.cpp calls them).
void register_pooling_kernels();
void register_padding_kernels();
void register_resample_kernels();

}  // namespace mixt::composite
