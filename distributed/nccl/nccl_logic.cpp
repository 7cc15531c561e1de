#include <mixt/distributed/nccl/nccl_logic.h>

#include <mixt/runtime/check.h>

namespace mixt::dist::nccl_logic {

namespace {

WireOp wire_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return WireOp::Sum;
    case ReduceOp::Avg: return WireOp::Avg;
    case ReduceOp::Max: return WireOp::Max;
    case ReduceOp::Min: return WireOp::Min;
  }
  return WireOp::Sum;
}

}  // namespace

ReduceWire reduce_wire(const char* collective, ScalarType dtype, ReduceOp op, bool have_fp8) {
  MIXT_CHECK(op != ReduceOp::Avg || is_floating(dtype), collective, "avg of a {} tensor (floating dtypes only)", dtype);
  switch (dtype) {
    case kFloat32: return {WireType::Float32, wire_op(op)};
    case kFloat64: return {WireType::Float64, wire_op(op)};
    case kFloat16: return {WireType::Float16, wire_op(op)};
    case kBFloat16: return {WireType::Bfloat16, wire_op(op)};
    case kInt8: return {WireType::Int8, wire_op(op)};
    case kUInt8: return {WireType::Uint8, wire_op(op)};
    case kInt32: return {WireType::Int32, wire_op(op)};
    case kInt64: return {WireType::Int64, wire_op(op)};
    // A bool is one byte holding 0 or 1: the max of the bytes is "any", their min "all";
    // a sum would leave bytes other than 0 and 1.
    case kBool: return {WireType::Uint8, op == ReduceOp::Min ? WireOp::Min : WireOp::Max};
    case kFloat8_e4m3fn:
    case kFloat8_e5m2:
      MIXT_CHECK(have_fp8, collective,
                 "{} {}: mixt was built with NCCL headers older than 2.24, which have no float8 types; reduce a "
                 "float16 or float32 copy instead",
                 reduce_op_name(op), dtype);
      return {dtype == kFloat8_e4m3fn ? WireType::Float8e4m3 : WireType::Float8e5m2, wire_op(op)};
    default: break;
  }
  MIXT_FAIL(collective, "{} of a {} tensor is not supported by the NCCL backend", reduce_op_name(op), dtype);
}

ScatterPlan plan_reduce_scatter(int64_t numel, int size, int rank) {
  ScatterPlan p;
  p.mine = chunk_range(numel, size, rank);  // validates the arguments
  const int64_t base = numel / size, extra = numel % size;
  p.slot = base + (extra > 0 ? 1 : 0);
  p.staged = extra > 0;
  if (!p.staged) return p;
  p.staging_numel = p.slot * size;
  // Ranks [0, extra) hold `slot` elements each: one run, already slot apart.
  p.copies.push_back({.src = 0, .dst = 0, .rows = 1, .width = extra * p.slot, .src_pitch = extra * p.slot,
                      .dst_pitch = extra * p.slot});
  // Ranks [extra, size) hold one element fewer: each row moves one slot further.
  if (base > 0)
    p.copies.push_back({.src = extra * p.slot, .dst = extra * p.slot, .rows = size - extra, .width = base,
                        .src_pitch = base, .dst_pitch = p.slot});
  return p;
}

PollResult poll_result(bool event_done, CommState comm, bool past_deadline) {
  if (comm == CommState::Failed) return PollResult::Failed;
  if (event_done) return PollResult::Done;
  return past_deadline ? PollResult::TimedOut : PollResult::Pending;
}

}  // namespace mixt::dist::nccl_logic
