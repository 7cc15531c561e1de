// Host-side helpers of the CUDA kernels: CUDA errors as mixt::Error, the
// current-device guard, dtype codes and launch layouts (launch.h) from tensors.
// Host code only (uses mixt's headers and fmt).
#pragma once

#include <span>

#include <cuda_runtime_api.h>

#include <mixt/dispatcher/op_call.h>
#include <mixt/kernels/common/strided_layout.h>
#include <mixt/kernels/cuda/launch.h>
#include <mixt/runtime/allocator.h>
#include <mixt/runtime/tensor.h>

namespace mixt::cuda {

// Throws mixt::Error(op, the CUDA error's name and text) unless `err` is cudaSuccess.
void check(cudaError_t err, const char* op);

// Makes device `index` current for the guard's lifetime; afterwards the previous device
// becomes current again if mixt has used it in this process (Note [Device guard]).
class DeviceGuard {
 public:
  DeviceGuard(int index, const char* op);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// For a kernel whose input 0 says the device: that device (a CUDA tensor's, else
// mixt::Error naming the op) made current for the scope, and its current stream.
class InputDevice {
 public:
  explicit InputDevice(const OpCall& c);
  cudaStream_t stream() const { return stream_; }

 private:
  static int index_of(const OpCall& c);
  DeviceGuard guard_;
  cudaStream_t stream_;
};

// Records that mixt used device `index` in this process (DeviceGuard does).
void mark_device_used(int index);
// The devices mixt has used in this process, one bit each (bit d: cuda:d).
uint64_t used_devices();

// The launch layout of `operands` (operand 0 the output) over `out_sizes`; operands
// with `ignore_for_contiguity[i]` set (scalars) do not affect the dense fast path.
LaunchLayout make_launch_layout(const Shape& out_sizes, std::span<const OperandGeometry> operands,
                          const bool* ignore_for_contiguity = nullptr);

// The CUDA allocator: the stream-ordered caching allocator of allocator.cpp.
Allocator* cuda_allocator();

}  // namespace mixt::cuda
