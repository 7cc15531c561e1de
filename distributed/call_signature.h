// What a rank is about to do in a collective, as a fixed-size record the ranks
// exchange before the collective itself (GroupOptions::check_collectives), so a
// mismatch raises on every rank with each rank's call named instead of hanging
// or corrupting memory. Shared by every backend.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <mixt/runtime/tensor.h>

namespace mixt::dist {

enum class CollectiveKind : int32_t { AllReduce, Broadcast, AllGather, ReduceScatter, Barrier };

struct CallSignature {
  static constexpr int kMaxDims = mixt::kMaxDims;  // every shape mixt can hold
  int32_t kind = 0;
  int32_t dtype = -1;
  int32_t arg = 0;  // the reduce op, or the broadcast root
  int32_t ndim = 0;
  int64_t numel = 0;
  int64_t dims[kMaxDims] = {};

  static CallSignature of(CollectiveKind kind, const Tensor* t, int32_t arg);
  bool operator==(const CallSignature& o) const;
  // "all_reduce(sum) float32 [4, 5]".
  std::string str() const;
  // The tensor alone: "float32 [4, 5]".
  std::string tensor_str() const;
};

// Raises mixt::Error(op) listing every rank's call unless all of `ranks` equal.
void check_signatures(const char* op, std::span<const CallSignature> ranks);

}  // namespace mixt::dist
