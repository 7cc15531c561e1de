// gelu's and silu's derivatives times a gradient, in float32 vector lanes
// (activation_backward.cpp): the kernels of gelu_backward and silu_backward
// (kernels/cpu/activation_backward.cpp, Note [Fused backward ops]), with the formulas of
// kernels/common/backward_math.h and the error bounds of that note. Plain C++: no Highway here.
#pragma once

#include <cstddef>

#include <mixt/kernels/common/backward_math.h>
#include <mixt/kernels/cpu/vec/isa.h>

namespace mixt::cpu::vec {

using backward_math::ActivationGrad;

// out[i] = g[i] * f'(x[i]) for i < n, f the activation of `op`, on active_isa(); `out` may
// equal `g` or `x`.
void activation_backward(ActivationGrad op, const float* g, const float* x, float* out, size_t n);
// The same on the given instruction set (tests; `isa` must be supported).
void activation_backward(ActivationGrad op, const float* g, const float* x, float* out, size_t n, Isa isa);

}  // namespace mixt::cpu::vec
