// The device half of docs/examples/custom_cuda_op.cpp: an application's own CUDA kernel
// (the sum of squares of each row, one block per row, a tree reduction in shared
// memory) and its launcher. Compiled by nvcc in a CUDA build and by the host compiler
// on the emulated device (-Dcuda=emulated), where its barriers and shared memory are
// checked (docs/emulated-cuda.md). Like mixt's own .cu files it includes no mixt
// tensor headers: plain pointers and sizes cross the boundary.
#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/kernels/cuda/launch_kernel.cuh>

namespace {

constexpr int kThreads = 128;

__global__ void row_sumsq_kernel(const float* x, float* out, int64_t cols) {
  MIXT_DYNAMIC_SHARED_BYTES(bytes);
  float* partial = reinterpret_cast<float*>(bytes);
  const int t = static_cast<int>(threadIdx.x);
  const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  float s = 0.0f;
  for (int64_t j = t; j < cols; j += blockDim.x) s += row[j] * row[j];
  partial[t] = s;
  for (int half = kThreads / 2; half > 0; half /= 2) {
    __syncthreads();  // the partials of the previous level are written
    if (t < half) partial[t] += partial[t + half];
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

}  // namespace

// Queues out[r] = sum of x[r, :]^2 for `rows` rows of `cols` floats on `stream`.
cudaError_t launch_row_sumsq(const float* x, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  mixt::cuda::launch_kernel(row_sumsq_kernel, {static_cast<unsigned>(rows), kThreads, kThreads * sizeof(float), stream},
                            x, out, cols);
  return cudaGetLastError();
}
