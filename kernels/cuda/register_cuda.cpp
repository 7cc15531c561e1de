// register_cuda_kernels(): binds the CUDA kernels and the CUDA allocator (harmless
// without a GPU: the allocator then refuses, saying why CUDA is not available, so no
// CUDA tensor can exist).
#include <mixt/dispatcher/op.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>

namespace mixt {

void register_cuda_kernels() {
  cuda::register_copy_kernels();
  cuda::register_factory_kernels();
  cuda::register_unary_kernels();
  cuda::register_binary_kernels();
  cuda::register_amp_kernels();
  cuda::register_optim_step_kernels();
  cuda::register_random_kernels();
  cuda::register_index_kernels();
  cuda::register_conv_kernels();
  cuda::register_gemm_kernels();
  cuda::register_reduce_kernels();
  cuda::register_scan_kernels();
  cuda::register_sort_kernels();
  cuda::register_masked_select_kernels();
  cuda::register_softmax_kernels();
  cuda::register_cross_entropy_kernels();
  cuda::register_norm_kernels();
  cuda::register_norm_backward_kernels();
  cuda::register_activation_backward_kernels();
  cuda::register_compare_kernels();
  cuda::register_ternary_kernels();
  set_allocator(DeviceType::CUDA, cuda::cuda_allocator());
}

}  // namespace mixt
