// Host-side helpers of the CUDA kernels that write whole tensors (move_elements in
// copy.cpp, which copy_ runs too; dense_copy and write_output in factory.cpp;
// inclusive_sum in scan.cpp): used by the kernels that compact an operand or write a
// result back (amp, index, conv, random, sort) without re-entering the dispatcher.
// Host code only.
#pragma once

#include <cuda_runtime_api.h>

#include <mixt/dispatcher/op_call.h>
#include <mixt/runtime/tensor.h>

namespace mixt::cuda {

// dst = src broadcast to dst's shape and converted to dst's dtype (any pair, the CPU's
// rules: launch_cast), both on the current CUDA device; queued on `stream`, errors name `op`.
void move_elements(const Tensor& dst, const Tensor& src, cudaStream_t stream, const char* op);

// A dense copy of `t` on its device.
Tensor dense_copy(const Tensor& t, cudaStream_t stream, const char* op);

// Output i of the call becomes `result`, or, when the caller gave one, `result` is moved
// into it (same shape, dtype and device, else mixt::Error).
void write_output(OpCall& c, int i, const Tensor& result, cudaStream_t stream);

// The inclusive prefix sums, int64, of a dense 1-D bool or int64 tensor on the current
// CUDA device (cumsum's kernel, scan.cpp), queued on the device's current stream.
Tensor inclusive_sum(const Tensor& t, const char* op);

// Waits for `stream` and reads the int64 at `p` on the device.
int64_t read_int64(const int64_t* p, cudaStream_t stream, const char* op);

}  // namespace mixt::cuda
