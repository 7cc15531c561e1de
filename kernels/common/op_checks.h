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

}  // namespace mixt
