// Vectorised unary math (and pow) on float32 (kernels/cpu/vec/unary_math.cpp): the functions of
// the unary op list (kernels/common/elementwise_ops.h) the CPU runs in SIMD lanes, with
// the error bounds of docs/notes/cpu-vectorisation.md, Note [Vector math accuracy].
// Plain C++: no Highway here.
#pragma once

#include <cstddef>
#include <cstdint>

#include <mixt/kernels/cpu/vec/isa.h>

namespace mixt::cpu::vec {

// float32 results; the bound of each (in ulps of the correctly rounded result) is in
// Note [Vector math accuracy] and tested by tests/cpu/test_vec_math.cpp.
enum class UnaryMath : uint8_t {
  Exp, Expm1, Log, Log1p, Log2, Log10, Sin, Cos, Tanh, Sigmoid, Silu, Softplus, Erf, GeluErf, GeluTanh,
  Sqrt, Rsqrt, Reciprocal, Mish,
  Floor, Ceil, Trunc, Round, Frac,  // exact: the scalar functors' bits (Round: to nearest, ties to even)
  LeakyRelu,                        // exact: x > 0 ? x : slope x
  Elu,                              // elu and selu: x > 0 ? scale x : alpha_scale expm1(input_scale x)
};
inline constexpr int kUnaryMathCount = 26;

// Attributes of the ops that have them.
struct UnaryMathParams {
  float beta = 1.0f, threshold = 20.0f;  // softplus
  float slope = 0.01f;                   // leaky_relu's negative_slope
  float elu_alpha_scale = 1.0f, elu_scale = 1.0f, elu_input_scale = 1.0f;  // elu / selu (functors::Elu's fields)
};

// out[i] = op(in[i]) for i < n, on active_isa(); `in` may equal `out`.
void unary_math(UnaryMath op, const UnaryMathParams& p, const float* in, float* out, size_t n);
// The same on the given instruction set (tests; `isa` must be supported).
void unary_math(UnaryMath op, const UnaryMathParams& p, const float* in, float* out, size_t n, Isa isa);

// out[i] = pow(x[i], y[i]) for i < n, C's powf with its special values, within 1 ulp
// (Note [Vector math accuracy]); `x` or `y` may equal `out`.
void pow_math(const float* x, const float* y, float* out, size_t n);
void pow_math(const float* x, const float* y, float* out, size_t n, Isa isa);

}  // namespace mixt::cpu::vec
