// The boundary between the host side (cross_entropy.cpp) and the device side
// (cross_entropy.cu) of cross_entropy_rows and cross_entropy_rows_backward on CUDA (Note
// [Fused cross-entropy]): a plain struct, the launchers, and the host-testable rule that
// sorts a row's target. A target that is neither a class in [0, C) nor ignore_index is
// met on the device: it records DeviceError::CrossEntropyTargetOutOfBounds in the device
// error word (Note [Device-side errors]; mixt::Error at the next wait) and its row gets NaN.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/kernels/common/cross_entropy_math.h>
#include <mixt/kernels/cuda/device_error.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/macros.h>

namespace mixt::cuda {

// The rule that sorts a row's target, shared with the CPU kernel.
using cross_entropy_math::TargetKind;
using cross_entropy_math::target_kind;

// The rows of contiguous logits [rows, classes] (dtype, floating) with contiguous targets
// [rows] (int64 or int32) and, when not null, a contiguous weight [classes]; the weight,
// the per-row tensors and the outputs are in the accumulate type (float32, or float64 for
// float64 logits).
struct CrossEntropyArgs {
  int64_t rows = 0, classes = 0;
  const void* logits = nullptr;
  const void* target = nullptr;
  const void* weight = nullptr;  // null: every class weighs 1
  // W, the sum of the weights (one double on the device), written by the launcher's first
  // kernel when there is a weight and label smoothing; null: W = classes.
  double* sum_w = nullptr;
  const void* grad_loss = nullptr;  // backward: [rows]
  const void* lse_in = nullptr;     // backward: the forward's lse [rows]
  void* loss = nullptr;             // forward: [rows]
  void* lse = nullptr;              // forward: [rows]
  void* grad = nullptr;             // backward: [rows, classes] in dtype
  int64_t ignore_index = -100;
  double label_smoothing = 0;
  ScalarType dtype = ScalarType::Float32;
  ScalarType target_dtype = ScalarType::Int64;
  uint32_t* error = nullptr;  // the device's error word
};

// Each queues its kernels on `stream` and returns the launch's error; rows == 0 queues nothing.
cudaError_t launch_cross_entropy_rows(const CrossEntropyArgs& args, cudaStream_t stream);
cudaError_t launch_cross_entropy_rows_backward(const CrossEntropyArgs& args, cudaStream_t stream);

}  // namespace mixt::cuda
