// The multi-tensor apply's plan, shared by the CPU loops (kernels/cpu/multi_tensor.h)
// and the CUDA launches (kernels/cuda/multi_tensor.cuh): a list of dense tensors is cut
// into chunks of at most kChunkElements elements, and the chunks are packed into
// kernel-argument blocks (TensorChunks) of at most kMaxTensors tensors and kMaxChunks
// chunks, so one launch covers many small tensors and a huge tensor spreads over many
// blocks. On CUDA, block b of a launch works on chunk b of its argument block.
// Plain code: the planning runs on the host (and in host tests), the chunk lookup on both.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <mixt/runtime/macros.h>

namespace mixt::mt {

constexpr int64_t kChunkElements = 65536;  // elements per chunk (one CUDA block, one CPU task)
constexpr int kMaxTensors = 32;            // tensors per kernel-argument block
constexpr int kMaxChunks = 320;            // chunks (CUDA blocks) per kernel-argument block
// Chunk indices are stored as uint32: a tensor holds at most this many elements.
constexpr int64_t kMaxElements = kChunkElements * (int64_t{1} << 32);

// Chunks of a tensor of `numel` elements (0 for an empty tensor).
MIXT_HD constexpr int64_t chunks_of(int64_t numel) {
  return numel <= 0 ? 0 : (numel + kChunkElements - 1) / kChunkElements;
}

// The element range [*begin, *begin + *length) of chunk `chunk` of a tensor of `numel` elements.
MIXT_HD inline void chunk_range(int64_t numel, int64_t chunk, int64_t* begin, int64_t* length) {
  *begin = chunk * kChunkElements;
  const int64_t left = numel - *begin;
  *length = left < kChunkElements ? left : kChunkElements;
}

// One chunk of one launch: a slot of the launch's tensor table and the chunk's index in that tensor.
struct ChunkRef {
  int slot;
  int64_t chunk;
};

// One launch: the tensors of its table (indices into the caller's list; a tensor split
// between two launches is in both tables) and its chunks, in order.
struct PlannedLaunch {
  std::vector<size_t> tensors;
  std::vector<ChunkRef> chunks;
};

// The launches covering every chunk of tensors of sizes `numels` in order: empty tensors
// take no slot; a launch is closed when its chunk or tensor table is full.
// Requires 1 <= max_tensors <= kMaxTensors, 1 <= max_chunks <= kMaxChunks and every numel
// within kMaxElements (the host code checks the sizes first).
inline std::vector<PlannedLaunch> plan_launches(std::span<const int64_t> numels, int max_tensors = kMaxTensors,
                                                int max_chunks = kMaxChunks) {
  std::vector<PlannedLaunch> launches;
  PlannedLaunch cur;
  for (size_t t = 0; t < numels.size(); ++t) {
    const int64_t n = chunks_of(numels[t]);
    for (int64_t k = 0; k < n; ++k) {
      if (cur.tensors.empty() || cur.tensors.back() != t) {
        if (static_cast<int>(cur.tensors.size()) == max_tensors) launches.push_back(std::move(cur)), cur = {};
        cur.tensors.push_back(t);
      }
      cur.chunks.push_back({static_cast<int>(cur.tensors.size()) - 1, k});
      if (static_cast<int>(cur.chunks.size()) == max_chunks) launches.push_back(std::move(cur)), cur = {};
    }
  }
  if (!cur.chunks.empty()) launches.push_back(std::move(cur));
  return launches;
}

// The kernel-argument block of one launch over `Lists` parallel tensor lists (for Adam:
// params, grads, exp_avg, exp_avg_sq, max_exp_avg_sq): a trivially copyable struct passed
// by value, under 4 KiB for up to five lists.
template <int Lists>
struct TensorChunks {
  void* ptr[Lists][kMaxTensors];  // data pointer of slot s in list l: ptr[l][s]
  int64_t numel[kMaxTensors];
  uint32_t chunk[kMaxChunks];
  uint8_t slot[kMaxChunks];
  int32_t n_tensors;
  int32_t n_chunks;
};
static_assert(kMaxTensors <= 256, "slots are stored as uint8");
static_assert(sizeof(TensorChunks<5>) + 512 <= 4096, "the largest block plus its extras fits the classic 4 KiB limit");

// Packs launch `l` into `out`: numels[t] the sizes, pointer(list, t) the data pointers.
template <int Lists, class Pointer>
void pack_chunks(const PlannedLaunch& l, std::span<const int64_t> numels, Pointer&& pointer, TensorChunks<Lists>* out) {
  out->n_tensors = static_cast<int32_t>(l.tensors.size());
  out->n_chunks = static_cast<int32_t>(l.chunks.size());
  for (size_t s = 0; s < l.tensors.size(); ++s) {
    out->numel[s] = numels[l.tensors[s]];
    for (int list = 0; list < Lists; ++list) out->ptr[list][s] = pointer(list, l.tensors[s]);
  }
  for (size_t k = 0; k < l.chunks.size(); ++k) {
    out->slot[k] = static_cast<uint8_t>(l.chunks[k].slot);
    out->chunk[k] = static_cast<uint32_t>(l.chunks[k].chunk);
  }
}

// The work of chunk `k` of an argument block: its slot and element range (what CUDA block k computes).
template <int Lists>
MIXT_HD inline void locate_chunk(const TensorChunks<Lists>& a, int k, int* slot, int64_t* begin, int64_t* length) {
  *slot = a.slot[k];
  chunk_range(a.numel[*slot], static_cast<int64_t>(a.chunk[k]), begin, length);
}

}  // namespace mixt::mt
