// The boundary between the host and device sides of im2col / col2im on CUDA
// (kernels/cuda/conv.cpp, conv.cu): one plain struct and the launchers. The window math is
// the CPU's (kernels/common/conv_window.h).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/kernels/common/conv_window.h>
#include <mixt/runtime/dtype.h>

namespace mixt::cuda {

// Dense input and output over `planes` channel planes (N * C).
struct WindowArgs {
  conv::Window w;
  int64_t planes = 0;
  const void* in = nullptr;
  void* out = nullptr;
  ScalarType dtype = ScalarType::Float32;  // a floating dtype
};

// out[plane][col] = in[plane][im2col_source(col)] or zero: one thread per output element.
cudaError_t launch_im2col(const WindowArgs& args, cudaStream_t stream);
// out[plane][i] = the sum in double, in column order, of the columns reading i, rounded
// once: one thread per output element, no atomics (deterministic, the CPU's bits).
cudaError_t launch_col2im(const WindowArgs& args, cudaStream_t stream);

}  // namespace mixt::cuda
