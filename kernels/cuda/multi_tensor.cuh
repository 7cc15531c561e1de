// The multi-tensor apply on CUDA: block b of a launch works on chunk b of its argument
// block (kernels/common/multi_tensor_plan.h), its threads striding over the chunk's
// elements, so one launch covers up to mt::kMaxTensors tensors and mt::kMaxChunks chunks.
// Device code only.
#pragma once

#include <cstdint>

#include <mixt/kernels/common/multi_tensor_plan.h>
#include <mixt/kernels/cuda/launch_kernel.cuh>

namespace mixt::cuda {

// The chunk of the calling block: its slot in the tensor table and its element range.
struct BlockChunk {
  int slot;
  int64_t begin, length;
};

template <int Lists>
__device__ __forceinline__ BlockChunk block_chunk(const mt::TensorChunks<Lists>& a) {
  BlockChunk c;
  mt::locate_chunk(a, static_cast<int>(blockIdx.x), &c.slot, &c.begin, &c.length);
  return c;
}

// The data of list `list` for the block's chunk, as T*, offset to the chunk's first element.
template <class T, int Lists>
__device__ __forceinline__ T* chunk_data(const mt::TensorChunks<Lists>& a, const BlockChunk& c, int list) {
  return static_cast<T*>(a.ptr[list][c.slot]) + c.begin;
}

// Threads per block of the multi-tensor kernels.
constexpr int kMultiTensorThreads = 512;

}  // namespace mixt::cuda
