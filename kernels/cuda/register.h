// Registration functions of the CUDA kernel families (one per file).
#pragma once

namespace mixt::cuda {
void register_copy_kernels();     // copy_
void register_factory_kernels();  // empty, full, fill_
void register_binary_kernels();   // add, add_, mul, mul_
void register_gemm_kernels();     // mm, bmm, addmm, baddbmm, linear, scaled_mm (gemm/matmul.cpp)
void register_scaled_mm_kernel(); // scaled_mm (gemm/scaled_mm.cpp; called by register_gemm_kernels)
}  // namespace mixt::cuda
