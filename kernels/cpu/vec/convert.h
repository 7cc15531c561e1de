// float16 / bfloat16 arrays to and from float32 in vector lanes (convert.cpp), with the
// rounding of runtime/float_types.h on every instruction set (bit-identical to the
// scalar Half / BFloat16 conversions). Plain C++: no Highway here.
#pragma once

#include <cstddef>

#include <mixt/kernels/cpu/vec/isa.h>
#include <mixt/runtime/float_types.h>

namespace mixt::cpu::vec {

void to_float(const Half* in, float* out, size_t n);
void to_float(const BFloat16* in, float* out, size_t n);
void from_float(const float* in, Half* out, size_t n);
void from_float(const float* in, BFloat16* out, size_t n);

// The same on the given instruction set (tests; `isa` must be supported).
void to_float(const Half* in, float* out, size_t n, Isa isa);
void to_float(const BFloat16* in, float* out, size_t n, Isa isa);
void from_float(const float* in, Half* out, size_t n, Isa isa);
void from_float(const float* in, BFloat16* out, size_t n, Isa isa);

}  // namespace mixt::cpu::vec
