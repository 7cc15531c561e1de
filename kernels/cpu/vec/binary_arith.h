// Elementwise arithmetic of two float32 arrays in vector lanes (kernels/cpu/vec/binary_arith.cpp):
// the vector path of add, sub, mul, div, maximum and minimum on float16 and bfloat16 tensors
// (kernels/cpu/binary.cpp), whose values are widened to float32 in blocks, combined here and
// rounded once. Every function is one correctly rounded IEEE operation (two for a +- alpha * b:
// the product, then the sum, never fused), so every instruction set gives the bits of the
// scalar functors (kernels/common/functors.h). Plain C++: no Highway here.
#pragma once

#include <cstddef>
#include <cstdint>

#include <mixt/kernels/cpu/vec/isa.h>

namespace mixt::cpu::vec {

enum class BinaryArith : uint8_t {
  Add,      // a + alpha * b
  Sub,      // a - alpha * b
  Mul,      // a * b
  Div,      // a / b (true division)
  Maximum,  // NaN if either is NaN (a's first), else the larger; b on ties (-0 vs +0)
  Minimum,  // NaN if either is NaN (a's first), else the smaller; b on ties
};

// out[i] = op(a[i], b[i]) for i < n, on active_isa(); `a` or `b` may equal `out`.
// alpha is read by Add and Sub only.
void binary_arith(BinaryArith op, float alpha, const float* a, const float* b, float* out, size_t n);
// The same on the given instruction set (tests; `isa` must be supported).
void binary_arith(BinaryArith op, float alpha, const float* a, const float* b, float* out, size_t n, Isa isa);

}  // namespace mixt::cpu::vec
