// Front ends of the grad scaler's ops, which amp::GradScaler (amp/grad_scaler.h) calls
// (kernels: kernels/cpu/amp.cpp and kernels/cuda/amp.cu, one multi-tensor launch per group). See
// Note [Grad scaler].
#pragma once

#include <span>

#include <mixt/runtime/tensor.h>

namespace mixt::amp {

// Multiplies every gradient in place by inv_scale (one fused pass per call; all
// on found_inf's device) and sets found_inf to 1 when any element is Inf or NaN.
// found_inf is never cleared: zero it before the first call of an iteration.
// Gradients may be float16, bfloat16, float32 or float64 and strided.
void unscale_check_(std::span<const Tensor> grads, Tensor& found_inf, const Tensor& inv_scale);

// The scale update rule's parameters (from GradScalerOptions).
struct ScaleRule {
  double growth_factor = 2.0, backoff_factor = 0.5;
  double min_scale = 0.0, max_scale = 0.0;
  int64_t growth_interval = 2000, hysteresis = 1;
  bool consecutive_hysteresis = false;
};

// Updates the scaler's one-element tensors in place from found_inf, on their
// device: skipped steps and the hysteresis budget, backoff (clamped at
// min_scale; an overflow already at min_scale counts a floor hit) or growth
// after growth_interval finite steps (never to Inf, clamped at max_scale).
void update_scale_(Tensor& scale, Tensor& growth_tracker, Tensor& hysteresis_tracker, const Tensor& found_inf,
                   Tensor& skipped_steps, Tensor& floor_hits, const ScaleRule& rule);

}  // namespace mixt::amp
