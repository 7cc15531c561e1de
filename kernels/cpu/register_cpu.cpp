#include <mixt/dispatcher/op.h>
#include <mixt/kernels/cpu/register.h>

namespace mixt {

void register_cpu_kernels() {
  cpu::register_copy_kernels();
  cpu::register_factory_kernels();
  cpu::register_random_kernels();
  cpu::register_unary_kernels();
  cpu::register_binary_kernels();
  cpu::register_compare_kernels();
  cpu::register_ternary_kernels();
  cpu::register_reduce_kernels();
  cpu::register_scan_kernels();
  cpu::register_index_kernels();
  cpu::register_matmul_kernels();
  cpu::register_softmax_kernels();
  cpu::register_cross_entropy_kernels();
  cpu::register_norm_kernels();
  cpu::register_norm_backward_kernels();
  cpu::register_activation_backward_kernels();
  cpu::register_conv_kernels();
  cpu::register_amp_kernels();
  cpu::register_optim_step_kernels();
  cpu::register_sort_kernels();
  cpu::register_masked_select_kernels();
}

}  // namespace mixt
