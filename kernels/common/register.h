// Registration functions of the device-independent kernels (views, movement), bound
// for every backend.
#pragma once

namespace mixt {
void register_view_kernels();
void register_movement_kernels();
}  // namespace mixt
