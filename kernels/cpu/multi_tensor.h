// Multi-tensor loops on the CPU: a list of dense tensors cut into chunks of at
// most kChunk elements, so one OpenMP loop spreads 2000 small gradients or one
// huge one evenly over the threads (the CPU side of multi_tensor_apply; the chunk
// size is the CUDA launches' one, kernels/common/multi_tensor_plan.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/multi_tensor_checks.h>
#include <mixt/kernels/common/multi_tensor_plan.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/runtime/tensor.h>

namespace mixt::cpu {

constexpr int64_t kChunk = mt::kChunkElements;

struct Chunk {
  size_t tensor;  // index into the list
  int64_t begin, end;  // element range
};

// The chunks of `tensors` (each contiguous), in order.
inline std::vector<Chunk> make_chunks(std::span<const Tensor> tensors) {
  std::vector<Chunk> chunks;
  for (size_t t = 0; t < tensors.size(); ++t)
    for (int64_t b = 0, n = tensors[t].numel(); b < n; b += kChunk) chunks.push_back({t, b, b + kChunk < n ? b + kChunk : n});
  return chunks;
}

inline int64_t total_elements(const std::vector<Chunk>& chunks) {
  int64_t n = 0;
  for (const Chunk& c : chunks) n += c.end - c.begin;
  return n;
}

}  // namespace mixt::cpu
