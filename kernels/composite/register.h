// Registration functions of the composite implementations: ops written in other ops'
// front ends, run by every backend without a kernel of its own (Note [Composite and
// backend kernels]). Apart from kernels/common, which holds the host/device logic
// the backends share (functors, conversions, plans, checks).
#pragma once

namespace mixt {
void register_composite_kernels();     // kernels/composite/math.cpp: matmul, linear, dot, mv, outer
void register_nn_composite_kernels();  // kernels/composite/nn.cpp: losses, norms, attention, convolutions
void register_spatial_composite_kernels();  // kernels/composite/spatial.cpp: conv3d, transposed convs, pooling, padding, resampling
void register_loss_composite_kernels();      // kernels/composite/losses.cpp: the margin and embedding losses
void register_distance_composite_kernels();  // kernels/composite/distance.cpp: dist, cdist, pdist, renorm, cross
void register_linalg_composite_kernels();    // kernels/composite/linalg.cpp: addmv, addr, einsum, tensordot, ...
void register_rnn_composite_kernels();    // kernels/composite/rnn.cpp: lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell
void register_index_composite_kernels();  // kernels/composite/index.cpp: index_add, index_put
}  // namespace mixt
