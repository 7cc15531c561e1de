// Registration functions of the CUDA kernel families (one per file).
#pragma once

namespace mixt::cuda {
void register_copy_kernels();     // copy_
void register_factory_kernels();  // empty, full, fill_, arange, linspace, eye
void register_unary_kernels();    // the rows of MIXT_ELEMENTWISE_UNARY (kernels/common/elementwise_ops.h)
void register_binary_kernels();   // MIXT_ELEMENTWISE_BINARY
void register_compare_kernels();  // MIXT_ELEMENTWISE_COMPARE
void register_ternary_kernels();  // MIXT_ELEMENTWISE_TERNARY
void register_amp_kernels();         // amp_unscale_check_, amp_update_scale_
void register_optim_step_kernels();  // adam_step_, sgd_step_
void register_random_kernels();      // uniform_, normal_, random_
void register_index_kernels();       // embedding, gather, index_select, masked_fill(_), scatter(_), scatter_add(_)
void register_conv_kernels();        // im2col, col2im
void register_gemm_kernels();     // mm, bmm, addmm, baddbmm, linear, scaled_mm (gemm/matmul.cpp)
void register_scaled_mm_kernel(); // scaled_mm (gemm/scaled_mm.cpp; called by register_gemm_kernels)
void register_reduce_kernels();   // sum, prod, mean, amax, amin, max, min, argmax, argmin, var, std, norm, logsumexp, all, any
void register_scan_kernels();     // cumsum, cumprod
void register_sort_kernels();     // sort, argsort, topk, unique
void register_masked_select_kernels();  // masked_select, nonzero
void register_softmax_kernels();  // softmax, log_softmax and their backward kernels
void register_cross_entropy_kernels();  // cross_entropy_rows, cross_entropy_rows_backward
void register_norm_kernels();     // layer_norm, rms_norm
void register_norm_backward_kernels();  // layer_norm_backward, rms_norm_backward
void register_activation_backward_kernels();  // gelu_backward, silu_backward
}  // namespace mixt::cuda
