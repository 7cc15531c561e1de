// Host-side helpers of the CUDA kernels that write whole tensors (move_elements in
// copy.cpp, which copy_ runs too; dense_copy in factory.cpp): used by the kernels that compact an operand or write a result back
// (amp, index, conv, random) without re-entering the dispatcher. Host code only.
#pragma once

#include <cuda_runtime_api.h>

#include <mixt/runtime/tensor.h>

namespace mixt::cuda {

// dst = src broadcast to dst's shape and converted to dst's dtype (any pair, the CPU's
// rules: launch_cast), both on the current CUDA device; queued on `stream`, errors name `op`.
void move_elements(const Tensor& dst, const Tensor& src, cudaStream_t stream, const char* op);

// A dense copy of `t` on its device.
Tensor dense_copy(const Tensor& t, cudaStream_t stream, const char* op);

}  // namespace mixt::cuda
