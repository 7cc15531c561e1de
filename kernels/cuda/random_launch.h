// The boundary between the host and device sides of the CUDA random ops (kernels/cuda/
// random.cpp, random.cu): one plain struct and its launcher. The host reserves the
// Philox blocks from the generator exactly as the CPU kernel does; the device draws
// block j from (seed, offset + j) with the CPU's per-block transforms
// (kernels/common/random_transforms.h). See Note [Philox streams].
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/runtime/dtype.h>

namespace mixt::cuda {

enum class RandomKind : int8_t { Uniform, Normal, Integers };

// Fills a dense output of n elements.
struct RandomArgs {
  void* out = nullptr;
  int64_t n = 0;
  uint64_t seed = 0, offset = 0;  // the reservation
  ScalarType dtype = ScalarType::Float32;
  RandomKind kind = RandomKind::Uniform;
  double a = 0, b = 0;  // uniform: low, high; normal: mean, std
  int64_t low = 0;      // random_: low and high - low
  uint64_t range = 1;
};

cudaError_t launch_random(const RandomArgs& args, cudaStream_t stream);

}  // namespace mixt::cuda
