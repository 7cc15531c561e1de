// Knobs of the CPU GEMMs (kernels/cpu/matmul.cpp) for tests and benchmarks.
#pragma once

namespace mixt::cpu {

// Whether bfloat16 products call OpenBLAS's sbgemm (Note [bfloat16 GEMM on the CPU]):
// -1 follows the CPU (sbgemm only with AVX512-BF16), 0 never, 1 always.
void set_native_bf16_gemm(int mode);
// True when the OpenBLAS loaded at run time exports cblas_sbgemm.
bool bf16_gemm_available();
// True when bfloat16 products call sbgemm now.
bool native_bf16_gemm_enabled();

}  // namespace mixt::cpu
