// float32 copies of the float16 / bfloat16 operands of the CPU GEMMs (kernels/cpu/matmul.cpp),
// and the cache that keeps the copies of parameters between calls (its public knobs:
// runtime/gemm_settings.h). See Note [GEMM widening cache] in gemm_widening.cpp and docs/gemm.md.
#pragma once

#include <cstdint>

#include <mixt/dispatcher/op.h>
#include <mixt/runtime/tensor.h>

namespace mixt::cpu {

// `t` (float16 or bfloat16) as a contiguous float32 tensor of its shape. With `cacheable`
// (the operand is a parameter: a leaf that requires grad, or a view of one), a copy made
// earlier from the same storage, version, offset, sizes, strides and dtype is returned
// instead of widening again, and a new copy is kept for the next call.
Tensor widened_operand(const Tensor& t, bool cacheable, const OpCall& c);

}  // namespace mixt::cpu
