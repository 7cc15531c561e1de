// Registration functions of the CUDA kernel families (one per file).
#pragma once

namespace mixt::cuda {
void register_copy_kernels();     // copy_
void register_factory_kernels();  // empty, full, fill_
void register_unary_kernels();    // the rows of MIXT_ELEMENTWISE_UNARY (kernels/common/elementwise_ops.h)
void register_binary_kernels();   // MIXT_ELEMENTWISE_BINARY
void register_compare_kernels();  // MIXT_ELEMENTWISE_COMPARE
void register_ternary_kernels();  // MIXT_ELEMENTWISE_TERNARY
}  // namespace mixt::cuda
