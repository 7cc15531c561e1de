// Registration functions of the CUDA kernel families (one per file).
#pragma once

namespace mixt::cuda {
void register_copy_kernels();     // copy_
void register_factory_kernels();  // empty, full, fill_
void register_binary_kernels();   // add, add_, mul, mul_
void register_reduce_kernels();   // sum, prod, mean, amax, amin, max, min, argmax, argmin, var, std, norm, logsumexp, all, any
void register_scan_kernels();     // cumsum, cumprod
void register_softmax_kernels();  // softmax, log_softmax
void register_norm_kernels();     // layer_norm, rms_norm
}  // namespace mixt::cuda
