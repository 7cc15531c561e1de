// Registration functions of the backend-independent kernels (views, composites).
#pragma once

namespace mixt {
void register_view_kernels();
void register_movement_kernels();
void register_composite_kernels();
void register_nn_composite_kernels();
}  // namespace mixt
