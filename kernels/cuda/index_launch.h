// The boundary between the host and device sides of the CUDA indexing kernels
// (kernels/cuda/index.cpp, index.cu): plain structs and launchers. Index values are
// checked on the device: a value outside [-size, size) records `code` in the device error
// word (Note [Device-side errors]) and its element is left alone.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/kernels/common/scatter_plan.h>
#include <mixt/kernels/common/strided_layout.h>
#include <mixt/kernels/cuda/device_error.h>
#include <mixt/runtime/dtype.h>

namespace mixt::cuda {

// gather, index_select, embedding: over a layout of three operands (out, index, src with
// its indexed dim's stride zeroed), out[o0] = src[o2 + wrap(index[o1]) * src_stride].
struct GatherArgs {
  StridedLayout layout;
  void* out = nullptr;
  const void* index = nullptr;
  const void* src = nullptr;
  int64_t size = 0;              // the indexed dim's size
  int64_t src_stride = 0;        // bytes per step along the indexed dim
  int element_size = 1;          // raw moves
  ScalarType index_dtype = ScalarType::Int64;
  uint32_t* error = nullptr;
  DeviceError code = DeviceError::IndexOutOfBounds;
};

enum class ScatterMode : int8_t { Assign, Add };

// scatter(_) and scatter_add(_): the layout (operands out with its dim-`d` stride zeroed,
// index, src) runs over the lines of the index (its sizes with dim d set to 1), whose
// plan.length elements are applied in the CPU's order under `plan` (Note [Ordered
// scatter], kernels/common/scatter_plan.h: one thread per line, or owners of disjoint
// output positions after a bucketing pass; deterministic), or over every element of the
// index with plan.length 1 (duplicates race: the last writer wins for Assign; Add then
// uses atomics).
struct ScatterArgs {
  StridedLayout layout;
  ScatterPlan plan;                      // plan.lines == layout.numel
  int32_t* workspace = nullptr;          // scatter_workspace_ints(plan) int32s when bucketed
  int64_t index_step = 0, src_step = 0;  // bytes per element along a line
  void* out = nullptr;
  const void* index = nullptr;
  const void* src = nullptr;             // null: write `value_bits`
  uint64_t value_bits = 0;
  int64_t size = 0;                      // out's size along dim d
  int64_t out_stride = 0;                // bytes per step along dim d
  ScalarType dtype = ScalarType::Float32;
  ScalarType index_dtype = ScalarType::Int64;
  ScatterMode mode = ScatterMode::Assign;
  bool atomic = false;                   // Add with atomics (plan.length 1; float32/64, int32/64)
  uint32_t* error = nullptr;
};

// True when scatter_add of `dtype` has an atomic path.
constexpr bool scatter_add_has_atomics(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::Int32 || t == ScalarType::Int64;
}

// masked_fill: operand 0 out, operand 1 the bool mask (broadcast); writes the value's
// element_size-byte pattern where the mask byte is nonzero.
struct MaskedFillArgs {
  StridedLayout layout;
  void* out = nullptr;
  const void* mask = nullptr;
  int element_size = 1;
  uint64_t value_bits = 0;
};

cudaError_t launch_gather(const GatherArgs& args, cudaStream_t stream);
cudaError_t launch_scatter(const ScatterArgs& args, cudaStream_t stream);
cudaError_t launch_masked_fill(const MaskedFillArgs& args, cudaStream_t stream);

}  // namespace mixt::cuda
