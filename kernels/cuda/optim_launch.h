// The boundary between the host and device sides of the fused optimizer steps on CUDA
// (kernels/cuda/optim_step.cpp, optim_step.cu): plain structs and launchers.
// Every kernel first reads the optional found_inf flag on the device and returns when it
// is set, so a skipped step needs no host read (Note [Fused optimizer steps]).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/kernels/common/multi_tensor_plan.h>
#include <mixt/runtime/dtype.h>

namespace mixt::cuda {

// The step counters of a launch's tensor table: one-element float32 or float64 tensors.
struct StepTable {
  const void* ptr[mt::kMaxTensors];
  bool is_double[mt::kMaxTensors];
};

// One adam_step_ launch over parameters of one dtype: lists params, grads, exp_avg,
// exp_avg_sq and (amsgrad) max_exp_avg_sq. Each block derives its tensor's step
// constants from the counter + 1 (the counters are advanced afterwards by launch_advance_steps).
struct AdamArgs {
  mt::TensorChunks<5> chunks;
  StepTable steps;
  const float* found_inf = nullptr;  // null: never skip
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  bool amsgrad = false, decoupled = false;
  ScalarType dtype = ScalarType::Float32;
};

// One sgd_step_ launch: lists params, grads and (momentum) the buffers; with momentum a
// block reads its tensor's counter to know whether this is the first step.
struct SgdArgs {
  mt::TensorChunks<3> chunks;
  StepTable steps;
  const float* found_inf = nullptr;
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  ScalarType dtype = ScalarType::Float32;
};

// Adds 1 to up to kMaxCounters step counters unless *found_inf is set.
struct AdvanceStepsArgs {
  static constexpr int kMaxCounters = 256;
  void* ptr[kMaxCounters];
  bool is_double[kMaxCounters];
  int n = 0;
  const float* found_inf = nullptr;
};

cudaError_t launch_adam_step(const AdamArgs& args, cudaStream_t stream);
cudaError_t launch_sgd_step(const SgdArgs& args, cudaStream_t stream);
cudaError_t launch_advance_steps(const AdvanceStepsArgs& args, cudaStream_t stream);

}  // namespace mixt::cuda
