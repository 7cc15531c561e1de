// The boundary between the host and device sides of the CUDA factories arange, linspace
// and eye (kernels/cuda/factory.cpp, factory.cu): plain structs and launchers.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/kernels/common/factory_math.h>
#include <mixt/runtime/dtype.h>

namespace mixt::cuda {

// arange into a dense output of n elements: integer arithmetic (exact) or double.
struct ArangeArgs {
  void* out = nullptr;
  int64_t n = 0;
  ScalarType dtype = ScalarType::Float32;  // any but bool
  bool exact = false;                      // integer bounds into an integer dtype
  uint64_t start_int = 0, step_int = 0;
  double start = 0, step = 0;
};

// linspace into a dense output of l.steps elements.
struct LinspaceArgs {
  void* out = nullptr;
  factory_math::Linspace l{};
  ScalarType dtype = ScalarType::Float32;  // any but bool
};

cudaError_t launch_arange(const ArangeArgs& args, cudaStream_t stream);
cudaError_t launch_linspace(const LinspaceArgs& args, cudaStream_t stream);
// Writes the `element_size`-byte pattern `one` at (i, i) of a dense rows x cols matrix
// (the zeros are written first by the caller).
cudaError_t launch_eye_diagonal(void* out, int64_t rows, int64_t cols, int element_size, uint64_t one,
                                cudaStream_t stream);

}  // namespace mixt::cuda
