// Registration functions of the CPU kernel families (one per file).
#pragma once

namespace mixt::cpu {
void register_copy_kernels();
void register_factory_kernels();
void register_random_kernels();
void register_unary_kernels();
void register_binary_kernels();
void register_compare_kernels();
void register_ternary_kernels();
void register_reduce_kernels();
void register_scan_kernels();
void register_index_kernels();
void register_matmul_kernels();
void register_softmax_kernels();
void register_cross_entropy_kernels();  // kernels/cpu/cross_entropy.cpp: cross_entropy_rows and its backward
void register_norm_kernels();
void register_norm_backward_kernels();
void register_activation_backward_kernels();  // kernels/cpu/activation_backward.cpp: gelu_backward, silu_backward
void register_conv_kernels();
void register_amp_kernels();
void register_optim_step_kernels();
void register_sort_kernels();            // kernels/cpu/sort.cpp: sort, argsort, topk, unique
void register_masked_select_kernels();   // kernels/cpu/masked_select.cpp: masked_select, nonzero
}  // namespace mixt::cpu
