// The boundary between the host and device sides of the grad scaler's CUDA kernels
// (kernels/cuda/amp.cpp, amp.cu): plain structs and launchers. See Note [Grad scaler].
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/kernels/common/amp_math.h>
#include <mixt/kernels/common/multi_tensor_plan.h>
#include <mixt/runtime/dtype.h>

namespace mixt::cuda {

// One launch of amp_unscale_check_ over gradients of one dtype: every element is checked
// and multiplied by *inv_scale (unless it is 1); *found_inf becomes 1 when any element was
// non-finite (it is never cleared). Both flags live on the device.
struct UnscaleArgs {
  mt::TensorChunks<1> chunks;
  float* found_inf = nullptr;
  const float* inv_scale = nullptr;
  ScalarType dtype = ScalarType::Float32;  // float16, bfloat16, float32 or float64
};

// amp_update_scale_ on the device's one-element state tensors (one thread).
struct UpdateScaleArgs {
  float* scale = nullptr;
  int32_t* growth_tracker = nullptr;
  int32_t* hysteresis_tracker = nullptr;
  const float* found_inf = nullptr;
  int64_t* skipped_steps = nullptr;
  int64_t* floor_hits = nullptr;
  amp_math::ScaleRuleValues rule{};
};

cudaError_t launch_unscale_check(const UnscaleArgs& args, cudaStream_t stream);
cudaError_t launch_update_scale(const UpdateScaleArgs& args, cudaStream_t stream);

}  // namespace mixt::cuda
