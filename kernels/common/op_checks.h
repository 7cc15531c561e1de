// Argument checks that follow from shapes, dtypes and attributes alone. The backend
// kernels and the meta rules call the same functions, so a call the CPU refuses is
// refused on the meta device with the same message (Note [Meta functions]).
#pragma once

#include <cstddef>
#include <cstdint>

#include <mixt/dispatcher/op.h>
#include <mixt/runtime/tensor.h>

namespace mixt {

// uniform_, normal_: the tensor is floating.
void check_random_fill(const OpCall& c, const Tensor& self);
// random_: low < high and every integer of [low, high) is exact in `dtype`.
void check_random_range(const OpCall& c, int64_t low, int64_t high, ScalarType dtype);
// round: integers round to 0 decimals only; decimals within [-308, 308].
void check_round_decimals(const OpCall& c, ScalarType dtype, int64_t decimals);
// hardtanh: not bool; uint8 only with nonnegative bounds (PyTorch's rule).
void check_hardtanh_bounds(const OpCall& c);
// amp_unscale_check_: gradient `i` is float16, bfloat16, float32 or float64.
void check_unscale_gradient(const OpCall& c, size_t i, const Tensor& g);
// Fused optimizer steps: parameter `i` is a contiguous float16/bfloat16/float32/float64
// tensor on `device`.
void check_step_parameter(const OpCall& c, size_t i, const Tensor& p, Device device);

// where(condition, a, b): the condition is bool; returns the broadcast shape of all
// three and the promoted dtype of a and b.
OutputMeta where_result(const OpCall& c);
// layer_norm, rms_norm: x is floating and `normalized` its trailing dims; the affine
// parameters in[1..n_params] (when given) are floating of shape `normalized`. Returns
// the statistics' shape (x's leading dims).
Shape normalization_stats_shape(const OpCall& c, const Shape& normalized, int n_params);

// softmax_backward, log_softmax_backward: grad_output and output are floating tensors of
// one shape, dtype and device. Returns the wrapped dim.
int64_t check_softmax_backward(const OpCall& c);
// gelu_backward, silu_backward: grad_output and self are floating tensors of one shape,
// dtype and device.
void check_activation_backward(const OpCall& c);

// layer_norm_backward / rms_norm_backward, checked (Note [Fused backward ops]): grad_y and
// x floating of one shape, dtype and device; the statistics [x's leading dims] in x's
// accumulate type; the weight (when given) floating of shape normalized_shape.
struct NormBackwardPlan {
  bool layer = false;                 // layer_norm (a mean input and a bias gradient)
  int weight = -1;                    // the weight's input position, or -1 without one
  bool input_grad = false, weight_grad = false, bias_grad = false;  // the outputs asked for
  Shape stat_sizes;                   // x's leading dims
  int64_t rows = 0, cols = 0;         // x as [rows, cols]
  ScalarType stat_dtype = ScalarType::Undefined;  // accumulate type of x: mean, rstd, grad_weight, grad_bias
};
NormBackwardPlan plan_norm_backward(const OpCall& c);

// cross_entropy_rows and cross_entropy_rows_backward (Note [Fused cross-entropy]), checked:
// logits floating [N, C] (C >= 1); target [N] int64 or int32; the weight (when given) [C] in
// the logits' accumulate type; label_smoothing in [0, 1]; for the backward, grad_loss and lse
// [N] in the accumulate type. Every tensor on the logits' device.
struct CrossEntropyRowsPlan {
  int64_t rows = 0, classes = 0;
  int logits = 0, target = 1, lse = -1, grad = -1, weight = -1;  // input positions (-1: none)
  ScalarType logits_dtype = ScalarType::Undefined, acc_dtype = ScalarType::Undefined;
};
CrossEntropyRowsPlan plan_cross_entropy_rows(const OpCall& c);

}  // namespace mixt
