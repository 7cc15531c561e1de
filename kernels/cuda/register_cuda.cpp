// register_cuda_kernels(): binds the CUDA kernels (harmless without a GPU: no
// CUDA tensor can exist then) and, when a GPU is present, the CUDA allocator.
#include <mixt/dispatcher/op.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/runtime/cuda.h>

namespace mixt {

void register_cuda_kernels() {
  cuda::register_copy_kernels();
  cuda::register_factory_kernels();
  cuda::register_binary_kernels();
  if (cuda::is_available()) set_allocator(DeviceType::CUDA, cuda::cuda_allocator());
}

}  // namespace mixt
