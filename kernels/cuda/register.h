// Registration functions of the CUDA kernel families (one per file).
#pragma once

namespace mixt::cuda {
void register_copy_kernels();     // copy_
void register_factory_kernels();  // empty, full, fill_
void register_binary_kernels();   // add, add_, mul, mul_
}  // namespace mixt::cuda
