// The NCCL backend's decisions that need neither a GPU nor nccl.h: how each
// dtype travels and is reduced, how reduce_scatter's uneven chunks are padded
// for ncclReduceScatter, and when a polled operation is done, failed or late.
// nccl_group.cpp acts on them; tests/distributed/test_nccl_logic.cpp checks
// them on any machine of a build with the NCCL backend.
#pragma once

#include <cstdint>
#include <vector>

#include <mixt/distributed/process_group.h>
#include <mixt/runtime/dtype.h>

namespace mixt::dist::nccl_logic {

// NCCL's data types, numbered as nccl.h numbers ncclDataType_t (nccl_group.cpp
// checks each value against the header).
enum class WireType : int {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  Bfloat16 = 9,
  Float8e4m3 = 10,
  Float8e5m2 = 11,
};
// NCCL's reductions, numbered as ncclRedOp_t.
enum class WireOp : int { Sum = 0, Prod = 1, Max = 2, Min = 3, Avg = 4 };

// How a reduction travels: the element type NCCL reduces in and its operation.
struct ReduceWire {
  WireType type = WireType::Float32;
  WireOp op = WireOp::Sum;
};

// The wire of reducing a `dtype` tensor with `op` in collective `collective`
// (for error messages). Every dtype is reduced natively: float16 and bfloat16
// as NCCL's half types, float8 as ncclFloat8e4m3/e5m2 when `have_fp8` (the
// NCCL headers mixt was built with declare them), bool as uint8 (sum and max:
// any; min: all). Raises mixt::Error for avg of a non-floating dtype and for
// float8 without `have_fp8`.
ReduceWire reduce_wire(const char* collective, ScalarType dtype, ReduceOp op, bool have_fp8);

// Bytes moved by the copying collectives (broadcast, all_gather, send/recv):
// every dtype travels as its bytes (WireType::Uint8, nbytes elements).

// reduce_scatter with chunks that the group size need not divide (chunk_range()):
// ncclReduceScatter wants equal chunks, so when the sizes differ every rank's
// chunk is copied into a slot of `slot` elements of a staging buffer (size x
// slot elements; the padding's values are never read back) and the collective
// runs on the slots.
struct ScatterPlan {
  // One strided copy (elements, not bytes): `rows` rows of `width` elements
  // from input + src (rows `src_pitch` apart) to staging + dst (`dst_pitch` apart).
  struct Copy {
    int64_t src = 0, dst = 0, rows = 0, width = 0, src_pitch = 0, dst_pitch = 0;
  };
  int64_t slot = 0;            // elements per rank in the collective (the largest chunk)
  bool staged = false;         // false: the chunks are equal and the input is used as it is
  std::vector<Copy> copies;    // input -> staging (empty when not staged)
  ChunkRange mine;             // this rank's elements of the input
  int64_t staging_numel = 0;   // size x slot when staged, else 0
};
ScatterPlan plan_reduce_scatter(int64_t numel, int size, int rank);

// What a wait sees when it polls an enqueued operation: whether its completion
// event has fired, what ncclCommGetAsyncError says, whether its deadline passed.
enum class CommState : uint8_t { Ready, InProgress, Failed };
enum class PollResult : uint8_t { Pending, Done, Failed, TimedOut };
// The next state of a polled operation. A communicator error wins over
// everything (the group is failed); a fired event is done; otherwise the
// operation is late once the deadline passed (the caller aborts the
// communicator) and pending before.
PollResult poll_result(bool event_done, CommState comm, bool past_deadline);

}  // namespace mixt::dist::nccl_logic
