// What the parts of the emulated CUDA runtime (runtime_*.cpp) share beyond
// emulator.h. Emulated builds only; not for the stand-ins or applications.
#pragma once

#include <cuda_runtime_api.h>

namespace mixt::cuda::emulated {

// The sticky error of the context (cudaSuccess until a fault).
cudaError_t sticky_error();
// Marks device `device`'s primary context as created (any call that needs one).
void touch_context(int device);
// Runs every piece of queued work of every device (cudaFreeHost).
cudaError_t synchronize_all();
// Runs the queued work of device `device` (and what it depends on): cudaDeviceSynchronize, cudaFree.
cudaError_t synchronize_device(int device);

}  // namespace mixt::cuda::emulated
