// The boundary between the host and device sides of the CUDA sorting and selection
// kernels (kernels/cuda/sort.cpp, masked_select.cpp; sort.cu, masked_select.cu): plain
// structs and launchers. The order is Note [Sort keys] and the network Note [Bitonic
// lines] (kernels/common/sort_keys.h).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/runtime/dtype.h>

namespace mixt::cuda {

// The lines of a contiguous tensor seen as [outer, len, inner], each sorted along len
// into scratch: keys[line * padded + j] and positions pos[line * padded + j] (the j-th
// element of the sorted line and its index along len). Line l is (l / inner, l % inner).
struct SortArgs {
  const void* in = nullptr;
  ScalarType dtype = ScalarType::Float32;
  int64_t outer = 1, len = 1, inner = 1;
  int64_t padded = 1;  // sort_keys::padded_length(len)
  bool descending = false;
  uint64_t* keys = nullptr;  // outer * inner * padded
  int64_t* pos = nullptr;    // outer * inner * padded
};

// The first `keep` sorted elements of every line, contiguous [outer, keep, inner]:
// `indices` (int64) always, `values` (the input's dtype) when not null.
struct SortGatherArgs {
  SortArgs sort;
  int64_t keep = 0;
  void* values = nullptr;
  int64_t* indices = nullptr;
};

// unique over one sorted line of n elements (SortArgs with outer = inner = 1, ascending):
// marks[j] = 1 where sorted element j starts a group (j = 0, a key unlike the previous
// one, or a NaN), else 0.
struct UniqueMarkArgs {
  const uint64_t* keys = nullptr;
  int64_t n = 0;
  int64_t* marks = nullptr;
};

// With group[j] the inclusive prefix sum of the marks (group number + 1 of sorted element
// j): values[g] and starts[g] (its first sorted position) from each group's first
// element, inverse[input position] = group; then counts[g] = starts[g + 1] - starts[g]
// (n for the last group's end).
struct UniqueWriteArgs {
  const void* in = nullptr;
  ScalarType dtype = ScalarType::Float32;
  const int64_t* pos = nullptr;
  const int64_t* marks = nullptr;
  const int64_t* group = nullptr;
  int64_t n = 0, groups = 0;
  void* values = nullptr;
  int64_t* starts = nullptr;
  int64_t* inverse = nullptr;  // may be null
  int64_t* counts = nullptr;   // may be null
};

// masked_select and nonzero over n elements in row-major order: `selected` (bool bytes)
// and its inclusive prefix sum `rank` (int64). Selected element i goes to row rank[i] - 1
// of the output: its element_size bytes of `src` (masked_select), or its coordinates
// over `sizes` (nonzero: ndim int64 values per row; src null).
struct CompactArgs {
  const uint8_t* selected = nullptr;
  const int64_t* rank = nullptr;
  int64_t n = 0;
  const void* src = nullptr;
  int element_size = 1;
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  void* out = nullptr;
};

cudaError_t launch_sort(const SortArgs& args, cudaStream_t stream);
cudaError_t launch_sort_gather(const SortGatherArgs& args, cudaStream_t stream);
cudaError_t launch_unique_marks(const UniqueMarkArgs& args, cudaStream_t stream);
cudaError_t launch_unique_write(const UniqueWriteArgs& args, cudaStream_t stream);
cudaError_t launch_compact(const CompactArgs& args, cudaStream_t stream);

}  // namespace mixt::cuda
