// The boundary between the host code (kernels/cuda/*.cpp: OpCalls, checks, fmt)
// and the device code (kernels/cuda/*.cu): plain structs and launcher functions.
// Included by both sides, so it must stay free of fmt and of mixt's tensor headers;
// the layout (kernels/common/strided_layout.h) and the dtype table (runtime/dtype.h)
// are shared with the CPU, so both trees speak of the same types.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/kernels/common/launch_geometry.h>
#include <mixt/kernels/common/strided_layout.h>
#include <mixt/runtime/dtype.h>

namespace mixt::cuda {

// An iteration space over an output (operand 0) and up to four inputs, strides in
// bytes (0 for a broadcast or scalar operand), and whether it is one dense run.
struct LaunchLayout {
  StridedLayout layout;
  bool contiguous = false;  // every tensor operand's stride is its element size (is_dense)
};

// dst = convert(src): two operands, any pair of dtypes (the CPU's conversion rules).
struct CastArgs {
  LaunchLayout layout;
  void* dst = nullptr;
  const void* src = nullptr;
  ScalarType dst_dtype = ScalarType::Float32;
  ScalarType src_dtype = ScalarType::Float32;
};

// True when the device cast kernel converts `from` to `to`.
// Every pair of dtypes, with the CPU's conversion (kernels/common/convert.h).
constexpr bool cast_supported(ScalarType from, ScalarType to) {
  return from != ScalarType::Undefined && to != ScalarType::Undefined;
}

// Each launcher queues its kernel on `stream` (of the current device; the host side
// passes the current stream) and returns the launch's error (cudaSuccess when nothing
// was launched).
cudaError_t launch_cast(const CastArgs& args, cudaStream_t stream);
// Writes the `element_size`-byte pattern `bits` to every element of operand 0.
cudaError_t launch_fill(const LaunchLayout& layout, void* dst, int element_size, uint64_t bits, cudaStream_t stream);
// An empty kernel of one thread: the bare launch (cuda::launch_empty_kernel).
cudaError_t launch_empty(cudaStream_t stream);

}  // namespace mixt::cuda
