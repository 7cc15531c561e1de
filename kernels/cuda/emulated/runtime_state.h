// What the parts of the emulated CUDA runtime (runtime_*.cpp) share beyond
// emulator.h. Emulated builds only; not for the stand-ins or applications.
#pragma once

#include <cuda_runtime_api.h>

namespace mixt::cuda::emulated {

// The sticky error of the context (cudaSuccess until a fault).
cudaError_t sticky_error();
// Marks device `device`'s primary context as created (any call that needs one).
void touch_context(int device);
// Runs every piece of queued work of every device (cudaFree, cudaDeviceSynchronize).
cudaError_t synchronize_all();

}  // namespace mixt::cuda::emulated
