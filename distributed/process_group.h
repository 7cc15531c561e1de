// dist::ProcessGroup: the collectives every backend offers (mpi/ for CPU tensors,
// nccl/ for CUDA tensors, and the one-process group that needs neither). Every
// collective exists in a synchronous form and an asynchronous one that returns a
// Work handle; every wait is bounded by the group's timeout and raises
// mixt::Error instead of hanging. See docs/distributed.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <mixt/runtime/tensor.h>

namespace mixt::dist {

enum class ReduceOp : uint8_t { Sum, Avg, Max, Min };
const char* reduce_op_name(ReduceOp op);

using Milliseconds = std::chrono::milliseconds;

struct GroupOptions {
  // The longest any wait (a collective, send/recv, barrier) blocks before raising.
  Milliseconds timeout{std::chrono::minutes(5)};
  // Before each collective the ranks exchange what they are about to do (the
  // collective, dtype, shape, root, reduce op) and raise on every rank, naming
  // each rank's call, when they disagree. One small extra message per collective;
  // turn it off only where the calls are known to match.
  bool check_collectives = true;
};

// An operation in flight. wait() completes it (raising on error or timeout);
// is_completed() asks without blocking.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the operation completes or the group's timeout passes (raises).
  void wait() { wait(timeout_); }
  virtual void wait(Milliseconds timeout) = 0;
  virtual bool is_completed() = 0;
  // Makes the work queued from now on on the current stream of the operation's
  // device wait for the operation, without blocking the host where the backend
  // runs on streams (NCCL: a stream wait on its completion event; a result
  // written back into a non-contiguous tensor is copied on that stream). Other
  // backends wait(). A failure or timeout of such an operation is raised by the
  // group's next wait; a host read of its result before that blocks in CUDA,
  // not bounded by the group's timeout. Note [Stream-ordered waits].
  virtual void wait_on_current_stream() { wait(); }

 protected:
  explicit Work(Milliseconds timeout) : timeout_(timeout) {}
  Milliseconds timeout_;
};
using WorkPtr = std::shared_ptr<Work>;

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const GroupOptions& options() const { return options_; }
  // "mpi", "nccl", "local".
  virtual std::string backend() const = 0;
  // The device type whose tensors this group moves.
  virtual DeviceType device_type() const = 0;

  // ---- asynchronous forms (the tensors must stay alive until wait()) ----
  // Reduces `t` across ranks, in place. Avg: floating dtypes only. The MPI
  // backend reduces float16, bfloat16 and float8 in float32 and rounds once;
  // NCCL reduces them natively (nccl/nccl_group.h).
  virtual WorkPtr all_reduce_async(Tensor& t, ReduceOp op) = 0;
  // Copies root's `t` into every rank's `t` (same shape and dtype everywhere).
  virtual WorkPtr broadcast_async(Tensor& t, int root) = 0;
  // output = the ranks' inputs stacked: shape [size(), *input.shape].
  virtual WorkPtr all_gather_async(Tensor& output, const Tensor& input) = 0;
  // Reduces the flattened `input` (the same numel on every rank) across ranks and
  // leaves this rank's chunk in the 1-D `output`: the chunks split numel as evenly
  // as possible, the first numel % size() ranks holding one more (chunk_range()).
  virtual WorkPtr reduce_scatter_async(Tensor& output, const Tensor& input, ReduceOp op) = 0;
  virtual WorkPtr barrier_async() = 0;
  // Point to point: the receiver's tensor must match the sender's shape and dtype
  // (checked, naming both). `tag` >= 0 tells messages between the same ranks apart.
  virtual WorkPtr send_async(const Tensor& t, int dst, int tag = 0) = 0;
  virtual WorkPtr recv_async(Tensor& t, int src, int tag = 0) = 0;

  // ---- synchronous forms ----
  void all_reduce(Tensor& t, ReduceOp op = ReduceOp::Sum) { all_reduce_async(t, op)->wait(); }
  void broadcast(Tensor& t, int root = 0) { broadcast_async(t, root)->wait(); }
  Tensor all_gather(const Tensor& input);
  Tensor reduce_scatter(const Tensor& input, ReduceOp op = ReduceOp::Sum);
  void barrier() { barrier_async()->wait(); }
  void send(const Tensor& t, int dst, int tag = 0) { send_async(t, dst, tag)->wait(); }
  void recv(Tensor& t, int src, int tag = 0) { recv_async(t, src, tag)->wait(); }

  // Ends the group: later calls raise. Idempotent; the destructor calls it.
  virtual void destroy() = 0;
  bool is_destroyed() const { return destroyed_; }

 protected:
  ProcessGroup(int rank, int size, GroupOptions options);
  // Raises unless the group is usable (not destroyed, not failed) for `op`.
  void check_usable(const char* op) const;
  // Marks the group failed: every later call raises with `why`.
  void mark_failed(const std::string& why);
  // The checks every backend shares: device type, dtype support, rank ranges.
  void check_tensor(const char* op, const Tensor& t) const;
  // check_tensor, and `t` can be written in place (no two elements share memory).
  void check_output(const char* op, const Tensor& t) const;
  void check_rank(const char* op, int r, const char* what) const;
  // all_gather's output: writable, input's dtype, size() * input.numel() elements.
  void check_gather_output(const Tensor& output, const Tensor& input) const;
  // reduce_scatter's output: writable, input's dtype, 1-D with this rank's chunk_range().
  void check_scatter_output(const Tensor& output, const Tensor& input) const;
  // Why a wait for `op` gave up after `timeout` (the group is then marked failed).
  std::string timeout_reason(const char* op, Milliseconds timeout) const;
  // Writes a result computed in the staging buffer `buf` back into `target` (nothing to
  // copy when `buf` is `target` itself) and bumps target's version either way, so the
  // caches keyed on versions (autocast's casts, the CPU's widened GEMM operands) never
  // serve what a collective has overwritten.
  static void copy_back(Tensor& target, const Tensor& buf);

  int rank_;
  int size_;
  GroupOptions options_;
  bool destroyed_ = false;
  std::string failure_;
};
using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

// The pause between two polls of an operation in flight: yields for the first
// 2 ms (a short collective finishes at the latency of the transport, and MPI's
// non-blocking algorithms move only while polled), then sleeps from 10 us doubling
// to 200 us, so ranks that wait long (more processes than cores, a stuck peer, a
// host thread waiting on a GPU) leave the cores to the work.
class PollPause {
 public:
  void operator()();

 private:
  std::chrono::steady_clock::time_point start_{};
  std::chrono::microseconds next_{0};
};

// [begin, end) of rank `r`'s chunk when `numel` elements are split over `size` ranks.
struct ChunkRange {
  int64_t begin = 0, end = 0;
};
ChunkRange chunk_range(int64_t numel, int size, int r);

// The world size 1 group: every collective leaves the tensors as they are (an
// average over one rank is the value itself); it needs neither MPI nor NCCL.
ProcessGroupPtr make_local_group(DeviceType device_type = DeviceType::CPU, GroupOptions options = {});

}  // namespace mixt::dist
