// Internal helpers shared by the backward formulas (runtime/autograd/derivatives_*.cpp).
#pragma once

#include <mixt/runtime/autograd/function.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::autograd {

using Grads = std::vector<Tensor>;

// Bits for Derivative::save_inputs / save_outputs.
constexpr uint32_t in0 = 1u << 0, in1 = 1u << 1, in2 = 1u << 2, in3 = 1u << 3;
constexpr uint32_t out0 = 1u << 0, out1 = 1u << 1;

// The reduced dims of a reduction's attrs (empty list = every dim), wrapped and sorted.
Shape reduced_dims(const Shape& dims, int64_t ndim);
// A reduction's gradient (or output) broadcast back to the input's shape.
Tensor expand_reduced(const Tensor& g, const Shape& input_sizes, const Shape& dims, bool keepdim);
// Number of input elements each output element of a reduction combines.
int64_t reduced_count(const Shape& input_sizes, const Shape& dims);
// `t` in reverse order along `dim`.
Tensor flip(const Tensor& t, int64_t dim);

// Sets the formula of a built-in op (no locking; used while the built-ins register).
void define_derivative(OpId id, Derivative d);

// Per-family registration (called by register_builtin_derivatives).
void register_shape_derivatives();
void register_elementwise_derivatives();
void register_reduction_derivatives();
void register_nn_derivatives();

}  // namespace mixt::autograd
