// The NCCL backend's decisions that need no GPU (distributed/nccl/nccl_logic.h):
// the wire of every dtype and reduce op, the padding plan of reduce_scatter with
// uneven chunks (applied here on the host, as the device copies would), the poll
// states of an operation in flight; and the group's refusals on a machine where
// CUDA cannot start. Built wherever the NCCL backend is; needs no GPU.
#include <cstring>
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/distributed/nccl/nccl_group.h>
#include <mixt/distributed/nccl/nccl_logic.h>
#include <mixt/distributed/world.h>
#include <mixt/mixt.h>

using namespace mixt;
using namespace mixt::dist;
using namespace mixt::dist::nccl_logic;
using Catch::Contains;

TEST_CASE("reduce_wire: every dtype reduces natively", "[nccl]") {
  const std::vector<std::pair<ScalarType, WireType>> native = {
      {kFloat32, WireType::Float32}, {kFloat64, WireType::Float64}, {kFloat16, WireType::Float16},
      {kBFloat16, WireType::Bfloat16}, {kInt8, WireType::Int8}, {kUInt8, WireType::Uint8},
      {kInt32, WireType::Int32}, {kInt64, WireType::Int64}};
  for (const auto& [dtype, wire] : native) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
      const ReduceWire w = reduce_wire("all_reduce", dtype, op, false);
      CHECK(w.type == wire);
      CHECK(static_cast<int>(w.op) == static_cast<int>(op == ReduceOp::Sum   ? WireOp::Sum
                                                       : op == ReduceOp::Max ? WireOp::Max
                                                                             : WireOp::Min));
    }
  }
  for (ScalarType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16})
    CHECK(reduce_wire("all_reduce", dtype, ReduceOp::Avg, false).op == WireOp::Avg);
}

TEST_CASE("reduce_wire: bool is any/all over bytes, avg needs a floating dtype", "[nccl]") {
  CHECK(reduce_wire("all_reduce", kBool, ReduceOp::Sum, false).type == WireType::Uint8);
  CHECK(reduce_wire("all_reduce", kBool, ReduceOp::Sum, false).op == WireOp::Max);
  CHECK(reduce_wire("all_reduce", kBool, ReduceOp::Max, false).op == WireOp::Max);
  CHECK(reduce_wire("all_reduce", kBool, ReduceOp::Min, false).op == WireOp::Min);
  for (ScalarType dtype : {kBool, kInt8, kUInt8, kInt32, kInt64})
    CHECK_THROWS_WITH(reduce_wire("reduce_scatter", dtype, ReduceOp::Avg, true),
                      Contains("reduce_scatter") && Contains("avg") && Contains(std::string(dtype_name(dtype))));
}

TEST_CASE("reduce_wire: float8 needs NCCL's float8 types", "[nccl]") {
  CHECK(reduce_wire("all_reduce", kFloat8_e4m3fn, ReduceOp::Sum, true).type == WireType::Float8e4m3);
  CHECK(reduce_wire("all_reduce", kFloat8_e5m2, ReduceOp::Avg, true).type == WireType::Float8e5m2);
  CHECK(reduce_wire("all_reduce", kFloat8_e5m2, ReduceOp::Avg, true).op == WireOp::Avg);
  CHECK_THROWS_WITH(reduce_wire("all_reduce", kFloat8_e4m3fn, ReduceOp::Max, false),
                    Contains("float8_e4m3fn") && Contains("2.24"));
}

namespace {

// Applies `plan` to the input 0, 1, ..., numel-1 as the device copies would
// (padding left at -1) and returns the staging buffer.
std::vector<int64_t> apply(const ScatterPlan& plan, int64_t numel) {
  std::vector<int64_t> in(static_cast<size_t>(numel));
  std::iota(in.begin(), in.end(), 0);
  std::vector<int64_t> staging(static_cast<size_t>(plan.staging_numel), -1);
  for (const ScatterPlan::Copy& c : plan.copies) {
    REQUIRE(c.width <= c.src_pitch);
    REQUIRE(c.width <= c.dst_pitch);
    for (int64_t r = 0; r < c.rows; ++r) {
      const int64_t s = c.src + r * c.src_pitch, d = c.dst + r * c.dst_pitch;
      REQUIRE(s >= 0);
      REQUIRE(s + c.width <= numel);
      REQUIRE(d + c.width <= plan.staging_numel);
      std::memcpy(&staging[static_cast<size_t>(d)], &in[static_cast<size_t>(s)], static_cast<size_t>(c.width) * 8);
    }
  }
  return staging;
}

}  // namespace

TEST_CASE("plan_reduce_scatter: every rank's chunk lands at the start of its slot", "[nccl]") {
  for (int size : {1, 2, 3, 4, 7, 8}) {
    for (int64_t numel : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{7}, int64_t{8}, int64_t{64}, int64_t{1001},
                          int64_t{4097}}) {
      INFO("size " << size << " numel " << numel);
      const ScatterPlan first = plan_reduce_scatter(numel, size, 0);
      const bool even = numel % size == 0;
      CHECK(first.staged == !even);
      CHECK(first.slot == (numel + size - 1) / size);
      if (even) {
        CHECK(first.copies.empty());
        CHECK(first.staging_numel == 0);
        continue;
      }
      CHECK(first.staging_numel == first.slot * size);
      CHECK(first.copies.size() <= 2);
      const std::vector<int64_t> staging = apply(first, numel);
      for (int r = 0; r < size; ++r) {
        const ScatterPlan p = plan_reduce_scatter(numel, size, r);
        const ChunkRange c = chunk_range(numel, size, r);
        CHECK(p.mine.begin == c.begin);
        CHECK(p.mine.end == c.end);
        CHECK(p.copies.size() == first.copies.size());  // the same plan on every rank
        for (int64_t i = 0; i < first.slot; ++i) {
          const int64_t got = staging[static_cast<size_t>(r * first.slot + i)];
          CHECK(got == (i < c.end - c.begin ? c.begin + i : -1));  // the chunk, then padding
        }
      }
    }
  }
  CHECK_THROWS_WITH(plan_reduce_scatter(10, 0, 0), Contains("chunk_range"));
  CHECK_THROWS_WITH(plan_reduce_scatter(10, 2, 2), Contains("chunk_range"));
}

TEST_CASE("poll_result: errors win, then completion, then the deadline", "[nccl]") {
  using P = PollResult;
  for (bool late : {false, true}) {
    CHECK(poll_result(true, CommState::Ready, late) == P::Done);
    CHECK(poll_result(true, CommState::Failed, late) == P::Failed);
    CHECK(poll_result(false, CommState::Failed, late) == P::Failed);
    CHECK(poll_result(false, CommState::Ready, late) == (late ? P::TimedOut : P::Pending));
    CHECK(poll_result(false, CommState::InProgress, late) == (late ? P::TimedOut : P::Pending));
  }
}

TEST_CASE("make_nccl_group refuses clearly where CUDA cannot start", "[nccl]") {
  CHECK(dist::has_nccl());
  if (cuda::is_available()) return;  // the GPU test covers that machine
  NcclUniqueId id{};
  CHECK_THROWS_WITH(make_nccl_group(id, 0, 1, 0), Contains("make_nccl_group") && Contains("CUDA is not available"));
  CHECK_THROWS_WITH(make_nccl_group(id, 2, 2, 0), Contains("rank 2 of a group of size 2"));
  // Through a bootstrap group: rank 0 makes the id (or says why it could not), then the same refusal.
  auto local = make_local_group();
  CHECK_THROWS_WITH(make_nccl_group(*local, 0), Contains("make_nccl_group"));
  auto cuda_local = make_local_group(DeviceType::CUDA);
  CHECK_THROWS_WITH(make_nccl_group(*cuda_local, 0), Contains("bootstrap group must move CPU tensors"));
}
