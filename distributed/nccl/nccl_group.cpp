// The NCCL backend (nccl_group.h). Only this file includes nccl.h; the decisions
// that need no GPU are in nccl_logic.cpp. See Note [NCCL backend].
//
// Note [NCCL backend] (docs/notes/distributed.md): a communicator per group,
// created non-blocking, polled against GroupOptions::timeout. Operations run on
// the group's own stream after an event recorded on the current stream of the
// group's device (where mixt queues its kernels: cuda::current_stream, not the
// legacy default stream), and end with an event that Work::wait polls together
// with the communicator's asynchronous error, or that the current stream waits
// for (Work::wait_on_current_stream). The group's own buffers come from the
// caching allocator on the current stream at creation, so both of its streams
// first wait for that stream. Signature exchanges and send/recv headers run on a
// second communicator and stream. Device switches go through cuda::DeviceGuard.
#include <mixt/distributed/nccl/nccl_group.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mixt/distributed/call_signature.h>
#include <mixt/distributed/nccl/nccl_logic.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/cuda.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::dist {

namespace {

using namespace nccl_logic;
using Clock = std::chrono::steady_clock;

#define MIXT_SAME_NCCL_TYPE(w, n) \
  static_assert(static_cast<int>(WireType::w) == static_cast<int>(n), "WireType must mirror ncclDataType_t");
MIXT_SAME_NCCL_TYPE(Int8, ncclInt8)
MIXT_SAME_NCCL_TYPE(Uint8, ncclUint8)
MIXT_SAME_NCCL_TYPE(Int32, ncclInt32)
MIXT_SAME_NCCL_TYPE(Uint32, ncclUint32)
MIXT_SAME_NCCL_TYPE(Int64, ncclInt64)
MIXT_SAME_NCCL_TYPE(Uint64, ncclUint64)
MIXT_SAME_NCCL_TYPE(Float16, ncclFloat16)
MIXT_SAME_NCCL_TYPE(Float32, ncclFloat32)
MIXT_SAME_NCCL_TYPE(Float64, ncclFloat64)
MIXT_SAME_NCCL_TYPE(Bfloat16, ncclBfloat16)
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
MIXT_SAME_NCCL_TYPE(Float8e4m3, ncclFloat8e4m3)
MIXT_SAME_NCCL_TYPE(Float8e5m2, ncclFloat8e5m2)
constexpr bool kHaveFp8 = true;
#else
constexpr bool kHaveFp8 = false;
#endif
#undef MIXT_SAME_NCCL_TYPE
static_assert(static_cast<int>(WireOp::Sum) == ncclSum && static_cast<int>(WireOp::Prod) == ncclProd &&
                  static_cast<int>(WireOp::Max) == ncclMax && static_cast<int>(WireOp::Min) == ncclMin &&
                  static_cast<int>(WireOp::Avg) == ncclAvg,
              "WireOp must mirror ncclRedOp_t");
static_assert(sizeof(ncclUniqueId) == sizeof(NcclUniqueId), "NcclUniqueId must hold an ncclUniqueId");

constexpr size_t kSignatureBytes = sizeof(CallSignature);

ncclDataType_t nccl_type(WireType t) { return static_cast<ncclDataType_t>(static_cast<int>(t)); }
ncclRedOp_t nccl_op(WireOp o) { return static_cast<ncclRedOp_t>(static_cast<int>(o)); }

std::string nccl_error_text(ncclResult_t r, ncclComm_t comm) {
  std::string text = fmt::format("NCCL error {} ({})", static_cast<int>(r), ncclGetErrorString(r));
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += fmt::format(": {}", last);
  return text;
}

// Raises mixt::Error(op, the CUDA error) unless `err` is cudaSuccess.
void cuda_ok(cudaError_t err, const char* op) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error
  MIXT_FAIL(op, "CUDA error {}: {}", cudaGetErrorName(err), cudaGetErrorString(err));
}

// What ncclCommGetAsyncError says of `comm`; `why` gets the error's text.
CommState comm_state(ncclComm_t comm, std::string* why) {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
  if (r != ncclSuccess) state = r;
  if (state == ncclSuccess) return CommState::Ready;
  if (state == ncclInProgress) return CommState::InProgress;
  *why = nccl_error_text(state, comm);
  return CommState::Failed;
}

// An operation on the group's stream: its completion event and the buffers the
// device reads or writes until the event fires.
struct Op {
  cudaEvent_t done = nullptr;
  std::vector<Tensor> keep;
  Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;
  ~Op() {
    if (done != nullptr) cudaEventDestroy(done);
  }
};

class NcclGroup;

class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<NcclGroup> group, const char* op, Milliseconds timeout, std::shared_ptr<Op> record,
           std::function<void()> finish)
      : Work(timeout), group_(std::move(group)), op_(op), record_(std::move(record)), finish_(std::move(finish)) {}
  void wait(Milliseconds timeout) override;
  bool is_completed() override;
  void wait_on_current_stream() override;

 private:
  friend class NcclGroup;
  // Runs finish() once the operation completed (outside the group's lock).
  void complete();

  std::shared_ptr<NcclGroup> group_;  // kept alive while the work is
  const char* op_;
  std::shared_ptr<Op> record_;
  std::function<void()> finish_;  // the copy back into the caller's tensor, if any
  bool completed_ = false, finished_ = false;
  std::exception_ptr error_;
};

class NcclGroup final : public ProcessGroup, public std::enable_shared_from_this<NcclGroup> {
 public:
  NcclGroup(int rank, int size, GroupOptions options, int device)
      : ProcessGroup(rank, size, options), device_(device), cuda_device_(Device::cuda(device)) {}
  ~NcclGroup() override {
    try {
      destroy();
    } catch (...) {  // a destructor never throws; destroy() only raises on broken CUDA state
    }
  }
  std::string backend() const override { return "nccl"; }
  DeviceType device_type() const override { return DeviceType::CUDA; }

  // Joins the communicator of `id` (every rank of the group calls it with the same id).
  void start(const NcclUniqueId& id) {
    const char* op = "make_nccl_group";
    std::lock_guard lock(mutex_);
    cuda::DeviceGuard guard(device_, op);
    const auto deadline = Clock::now() + options_.timeout;
    guarded(op, [&] {
      cuda_ok(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), op);
      cuda_ok(cudaStreamCreateWithFlags(&sig_stream_, cudaStreamNonBlocking), op);
      cuda_ok(cudaEventCreateWithFlags(&compute_ready_, cudaEventDisableTiming), op);
      cuda_ok(cudaEventCreateWithFlags(&sig_done_, cudaEventDisableTiming), op);
      void* pinned = nullptr;
      cuda_ok(cudaMallocHost(&pinned, (static_cast<size_t>(size_) + 1) * kSignatureBytes), op);
      sig_host_ = static_cast<CallSignature*>(pinned);
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      ncclUniqueId nid;
      std::memcpy(&nid, id.data(), sizeof nid);
      // (The call sets comm_ before settle() reads it: arguments have no order.)
      const ncclResult_t init = ncclCommInitRankConfig(&comm_, size_, nid, rank_, &config);
      settle(op, comm_, init, deadline);
      settle(op, comm_, ncclCommSplit(comm_, 0, rank_, &sig_comm_, &config), deadline);
      settle(op, sig_comm_, ncclInProgress, deadline);
    });
    sig_dev_ = empty({static_cast<int64_t>(size_ * kSignatureBytes)}, TensorOptions{.dtype = kUInt8, .device = cuda_device_});
    barrier_buf_ = zeros({1}, TensorOptions{.dtype = kFloat32, .device = cuda_device_});
    // Both came from the caching allocator on the current stream, which may still
    // have work queued on their blocks' previous owners: the group's streams start
    // after it (Note [NCCL backend]).
    guarded(op, [&] {
      cuda_ok(cudaEventRecord(compute_ready_, current_stream()), op);
      for (cudaStream_t s : {stream_, sig_stream_}) cuda_ok(cudaStreamWaitEvent(s, compute_ready_, 0), op);
    });
  }

  WorkPtr all_reduce_async(Tensor& t, ReduceOp op) override {
    const char* name = "all_reduce";
    check_on_device(name, t, true);
    const ReduceWire w = reduce_wire(name, t.dtype(), op, kHaveFp8);
    const Tensor buf = t.is_contiguous() ? t : t.contiguous();
    const CallSignature sig = CallSignature::of(CollectiveKind::AllReduce, &t, static_cast<int32_t>(op));
    const auto count = static_cast<size_t>(t.numel());
    return enqueue(name, &sig, {buf}, count == 0, [this, buf, count, w](cudaStream_t s) {
      return ncclAllReduce(buf.data_ptr(), buf.data_ptr(), count, nccl_type(w.type), nccl_op(w.op), comm_, s);
    }, [t, buf]() mutable { copy_back(t, buf); });
  }

  WorkPtr broadcast_async(Tensor& t, int root) override {
    const char* name = "broadcast";
    check_on_device(name, t, true);
    check_rank(name, root, "root");
    const Tensor buf = t.is_contiguous() ? t : t.contiguous();
    const CallSignature sig = CallSignature::of(CollectiveKind::Broadcast, &t, root);
    const auto bytes = static_cast<size_t>(t.nbytes());
    return enqueue(name, &sig, {buf}, bytes == 0, [this, buf, bytes, root](cudaStream_t s) {
      return ncclBroadcast(buf.data_ptr(), buf.data_ptr(), bytes, ncclUint8, root, comm_, s);
    }, [t, buf]() mutable { copy_back(t, buf); });
  }

  WorkPtr all_gather_async(Tensor& output, const Tensor& input) override {
    const char* name = "all_gather";
    check_on_device(name, input, false);
    check_on_device(name, output, false);
    check_gather_output(output, input);
    const Tensor in = input.contiguous();
    const Tensor out = output.is_contiguous() ? output : output.contiguous();
    const CallSignature sig = CallSignature::of(CollectiveKind::AllGather, &input, 0);
    const auto bytes = static_cast<size_t>(input.nbytes());
    return enqueue(name, &sig, {in, out}, bytes == 0, [this, in, out, bytes](cudaStream_t s) {
      return ncclAllGather(in.data_ptr(), out.data_ptr(), bytes, ncclUint8, comm_, s);
    }, [output, out]() mutable { copy_back(output, out); });
  }

  WorkPtr reduce_scatter_async(Tensor& output, const Tensor& input, ReduceOp op) override {
    const char* name = "reduce_scatter";
    check_on_device(name, input, false);
    check_on_device(name, output, false);
    check_scatter_output(output, input);
    const ReduceWire w = reduce_wire(name, input.dtype(), op, kHaveFp8);
    const ScatterPlan plan = plan_reduce_scatter(input.numel(), size_, rank_);
    const int64_t count = plan.mine.end - plan.mine.begin;
    const TensorOptions on_device{.dtype = input.dtype(), .device = cuda_device_};
    const Tensor in = input.contiguous();
    const Tensor staging = plan.staged ? empty({plan.staging_numel}, on_device) : in;
    const bool direct = output.is_contiguous() && count == plan.slot;
    const Tensor recv = direct ? output : empty({plan.slot}, on_device);
    const CallSignature sig = CallSignature::of(CollectiveKind::ReduceScatter, &input, static_cast<int32_t>(op));
    const auto es = static_cast<size_t>(input.element_size());
    auto launch = [this, plan, in, staging, recv, w, es, name](cudaStream_t s) {
      auto* dst = static_cast<char*>(staging.data_ptr());
      const auto* src = static_cast<const char*>(in.data_ptr());
      for (const ScatterPlan::Copy& c : plan.copies) {
        auto bytes = [es](int64_t elements) { return static_cast<size_t>(elements) * es; };
        cuda_ok(cudaMemcpy2DAsync(dst + bytes(c.dst), bytes(c.dst_pitch), src + bytes(c.src), bytes(c.src_pitch),
                                  bytes(c.width), static_cast<size_t>(c.rows), cudaMemcpyDeviceToDevice, s),
                name);
      }
      return ncclReduceScatter(staging.data_ptr(), recv.data_ptr(), static_cast<size_t>(plan.slot), nccl_type(w.type),
                               nccl_op(w.op), comm_, s);
    };
    return enqueue(name, &sig, {in, staging, recv}, plan.slot == 0, launch, [output, recv, count]() mutable {
      copy_back(output, recv.is_same(output) ? output : recv.narrow(0, 0, count));
    });
  }

  WorkPtr barrier_async() override {
    const CallSignature sig = CallSignature::of(CollectiveKind::Barrier, nullptr, 0);
    return enqueue("barrier", &sig, {}, false, [this](cudaStream_t s) {
      return ncclAllReduce(barrier_buf_.data_ptr(), barrier_buf_.data_ptr(), 1, ncclFloat32, ncclSum, comm_, s);
    }, nullptr);
  }

  WorkPtr send_async(const Tensor& t, int dst, int tag) override {
    const char* name = "send";
    check_on_device(name, t, false);
    check_peer(name, dst, tag);
    const Tensor buf = t.contiguous();
    if (options_.check_collectives) {
      const CallSignature header = CallSignature::of(CollectiveKind::Broadcast, &t, rank_);
      exchange_header(name, &header, dst);
    }
    const auto bytes = static_cast<size_t>(t.nbytes());
    return enqueue(name, nullptr, {buf}, bytes == 0, [this, buf, bytes, dst](cudaStream_t s) {
      return ncclSend(buf.data_ptr(), bytes, ncclUint8, dst, comm_, s);
    }, nullptr);
  }

  WorkPtr recv_async(Tensor& t, int src, int tag) override {
    const char* name = "recv";
    check_on_device(name, t, true);
    check_peer(name, src, tag);
    const Tensor buf = t.is_contiguous() ? t : t.contiguous();
    if (options_.check_collectives) {
      const CallSignature sent = exchange_header(name, nullptr, src);
      const CallSignature expected = CallSignature::of(CollectiveKind::Broadcast, &t, src);
      if (!(sent == expected)) {
        // Drain the message into a scratch buffer of the sender's size, so the
        // next exchange between the two ranks stays intact, then refuse.
        MIXT_CHECK(sent.dtype >= 0 && sent.dtype < kNumDtypes && sent.numel >= 0, name,
                   "rank {} sent a corrupt header (dtype {}, numel {})", src, sent.dtype, sent.numel);
        const int64_t bytes = checked_nbytes(sent.numel, element_size(static_cast<ScalarType>(sent.dtype)), name);
        const Tensor scratch = empty({bytes}, TensorOptions{.dtype = kUInt8, .device = cuda_device_});
        enqueue(name, nullptr, {scratch}, bytes == 0, [this, scratch, bytes, src](cudaStream_t s) {
          return ncclRecv(scratch.data_ptr(), static_cast<size_t>(bytes), ncclUint8, src, comm_, s);
        }, nullptr)->wait();
        MIXT_FAIL(name, "rank {} sent {} but this rank receives into {}", src, sent.tensor_str(), expected.tensor_str());
      }
    }
    const auto bytes = static_cast<size_t>(t.nbytes());
    return enqueue(name, nullptr, {buf}, bytes == 0, [this, buf, bytes, src](cudaStream_t s) {
      return ncclRecv(buf.data_ptr(), bytes, ncclUint8, src, comm_, s);
    }, [t, buf]() mutable { copy_back(t, buf); });
  }

  // Waits (bounded) for the operations in flight, then flushes and frees the
  // communicators; a failed group's communicators were aborted already. Never
  // raises: it runs from the destructor.
  void destroy() override {
    std::lock_guard lock(mutex_);
    if (destroyed_) return;
    destroyed_ = true;
    std::optional<cuda::DeviceGuard> guard;
    try {
      guard.emplace(device_, "destroy");
    } catch (const Error&) {  // CUDA is broken: free what can be freed
      cudaGetLastError();
    }
    if (failure_.empty() && comm_ != nullptr && !finalize_comms()) abort_comms();
    abort_comms();  // no-op after a clean finalize
    inflight_.clear();
    sig_dev_ = Tensor();
    barrier_buf_ = Tensor();
    if (sig_host_ != nullptr) cudaFreeHost(sig_host_);
    for (cudaEvent_t e : {compute_ready_, sig_done_})
      if (e != nullptr) cudaEventDestroy(e);
    for (cudaStream_t s : {stream_, sig_stream_})
      if (s != nullptr) cudaStreamDestroy(s);
    sig_host_ = nullptr;
    compute_ready_ = sig_done_ = nullptr;
    stream_ = sig_stream_ = nullptr;
    cudaGetLastError();
  }


 private:
  friend class NcclWork;
  using Launch = std::function<ncclResult_t(cudaStream_t)>;

  // Polls `w` once; a failure or (with `past_deadline`) a timeout fails the
  // group and completes `w` with the error. Caller holds the lock.
  bool test(NcclWork& w, bool past_deadline, Milliseconds timeout) {
    if (w.completed_) return true;
    const cudaError_t q = cudaEventQuery(w.record_->done);
    if (q != cudaSuccess && q != cudaErrorNotReady) {
      cudaGetLastError();
      return complete_failed(w, fmt::format("{} failed on rank {}: CUDA error {}: {}", w.op_, rank_,
                                            cudaGetErrorName(q), cudaGetErrorString(q)));
    }
    std::string why = failure_;
    // After a clean destroy() the communicator is gone but finished work stays done.
    CommState state = failure_.empty() ? CommState::Ready : CommState::Failed;
    if (comm_ != nullptr && failure_.empty()) state = comm_state(comm_, &why);
    switch (poll_result(q == cudaSuccess, state, past_deadline)) {
      case PollResult::Pending: return false;
      case PollResult::Done: w.completed_ = true; return true;
      case PollResult::Failed:
        return complete_failed(w, failure_.empty() ? fmt::format("{} failed on rank {}: {}", w.op_, rank_, why)
                                                   : "the process group failed earlier: " + failure_);
      case PollResult::TimedOut:
        return complete_failed(w, timeout_reason(w.op_, timeout) + "; the NCCL communicator was aborted");
    }
    return false;
  }


  // The checks of every operation: usable group, a CUDA tensor on this group's
  // device, and (`written`) elements that can be written in place.
  void check_on_device(const char* op, const Tensor& t, bool written) const {
    check_usable(op);
    if (written) check_output(op, t);
    else check_tensor(op, t);
    MIXT_CHECK(t.device().index() == device_, op, "this NCCL group runs on {}, got a tensor on {}", cuda_device_,
               t.device());
  }

  void check_peer(const char* op, int peer, int tag) const {
    check_rank(op, peer, "peer");
    MIXT_CHECK(peer != rank_, op, "rank {} cannot exchange with itself", rank_);
    MIXT_CHECK(tag == 0, op,
               "tag {}: NCCL matches sends and receives between two ranks in the order they are issued and has no "
               "tags (use tag 0)",
               tag);
  }

  // Runs `f`; a mixt::Error inside it fails the group (aborting the
  // communicators): the ranks are out of step once one stops midway.
  template <class F>
  void guarded(const char* op, F&& f) {
    try {
      f();
    } catch (const Error& e) {
      abort_comms();
      mark_failed(e.what());
      throw;
    }
  }

  // Waits until `comm` settled the call that returned `r` (a non-blocking
  // communicator returns ncclInProgress while it works); raises on an error or
  // once `deadline` passed.
  void settle(const char* op, ncclComm_t comm, ncclResult_t r, Clock::time_point deadline) {
    PollPause pause;
    while (r == ncclInProgress) {
      MIXT_CHECK(Clock::now() < deadline, op, "{}", timeout_reason(op, options_.timeout));
      pause();
      ncclResult_t state = ncclSuccess;
      const ncclResult_t q = ncclCommGetAsyncError(comm, &state);
      r = q == ncclSuccess ? state : q;
    }
    MIXT_CHECK(r == ncclSuccess, op, "{} failed on rank {}: {}", op, rank_, nccl_error_text(r, comm));
  }

  // Waits until `event` fired, `comm` reports an error or `deadline` passed (raises for both).
  void await_event(const char* op, cudaEvent_t event, ncclComm_t comm, Clock::time_point deadline) {
    PollPause pause;
    for (;;) {
      const cudaError_t q = cudaEventQuery(event);
      if (q != cudaErrorNotReady) cuda_ok(q, op);
      std::string why;
      const CommState state = comm_state(comm, &why);
      switch (poll_result(q == cudaSuccess, state, Clock::now() >= deadline)) {
        case PollResult::Done: return;
        case PollResult::Pending: break;
        case PollResult::Failed: MIXT_FAIL(op, "{} failed on rank {}: {}", op, rank_, why);
        case PollResult::TimedOut: MIXT_FAIL(op, "{}", timeout_reason(op, options_.timeout));
      }
      pause();
    }
  }

  // Every rank's call signature into sig_host_[0, size) (Note [NCCL backend]).
  void exchange_signatures(const char* op, const CallSignature& mine, Clock::time_point deadline) {
    auto* dev = static_cast<char*>(sig_dev_.data_ptr());
    char* slot = dev + static_cast<size_t>(rank_) * kSignatureBytes;
    sig_host_[size_] = mine;  // pinned: the copy runs asynchronously, and the exchange is awaited before reuse
    cuda_ok(cudaMemcpyAsync(slot, &sig_host_[size_], kSignatureBytes, cudaMemcpyHostToDevice, sig_stream_), op);
    settle(op, sig_comm_, ncclAllGather(slot, dev, kSignatureBytes, ncclUint8, sig_comm_, sig_stream_), deadline);
    cuda_ok(cudaMemcpyAsync(sig_host_, dev, static_cast<size_t>(size_) * kSignatureBytes, cudaMemcpyDeviceToHost,
                            sig_stream_),
            op);
    cuda_ok(cudaEventRecord(sig_done_, sig_stream_), op);
    await_event(op, sig_done_, sig_comm_, deadline);
  }

  // send's header to `peer` (`send` set) or recv's from it (returned); waits
  // until the peer took part. Failures fail the group.
  CallSignature exchange_header(const char* op, const CallSignature* send, int peer) {
    std::lock_guard lock(mutex_);
    check_usable(op);
    cuda::DeviceGuard guard(device_, op);
    const auto deadline = Clock::now() + options_.timeout;
    CallSignature got;
    guarded(op, [&] {
      void* dev = sig_dev_.data_ptr();
      if (send != nullptr) {
        sig_host_[size_] = *send;
        cuda_ok(cudaMemcpyAsync(dev, &sig_host_[size_], kSignatureBytes, cudaMemcpyHostToDevice, sig_stream_), op);
        settle(op, sig_comm_, ncclSend(dev, kSignatureBytes, ncclUint8, peer, sig_comm_, sig_stream_), deadline);
      } else {
        settle(op, sig_comm_, ncclRecv(dev, kSignatureBytes, ncclUint8, peer, sig_comm_, sig_stream_), deadline);
        cuda_ok(cudaMemcpyAsync(sig_host_, dev, kSignatureBytes, cudaMemcpyDeviceToHost, sig_stream_), op);
      }
      cuda_ok(cudaEventRecord(sig_done_, sig_stream_), op);
      await_event(op, sig_done_, sig_comm_, deadline);
      got = sig_host_[0];
    });
    return got;
  }

  // Queues one operation: the signature exchange of a collective (when
  // checked), then `launch` on the group's stream after the work queued so far
  // on the current stream (unless `nothing_to_move`), then the completion event.
  WorkPtr enqueue(const char* op, const CallSignature* collective, std::vector<Tensor> keep, bool nothing_to_move,
                  const Launch& launch, std::function<void()> finish) {
    std::lock_guard lock(mutex_);
    check_usable(op);
    cuda::DeviceGuard guard(device_, op);
    reap();
    const auto deadline = Clock::now() + options_.timeout;
    if (collective != nullptr && options_.check_collectives) {
      guarded(op, [&] { exchange_signatures(op, *collective, deadline); });
      // Every rank saw the same records: all refuse, none launches, the group stays usable.
      check_signatures(op, std::span<const CallSignature>(sig_host_, static_cast<size_t>(size_)));
    }
    auto record = std::make_shared<Op>();
    record->keep = std::move(keep);
    guarded(op, [&] {
      cuda_ok(cudaEventCreateWithFlags(&record->done, cudaEventDisableTiming), op);
      cuda_ok(cudaEventRecord(compute_ready_, current_stream()), op);
      cuda_ok(cudaStreamWaitEvent(stream_, compute_ready_, 0), op);
      if (!nothing_to_move) settle(op, comm_, launch(stream_), deadline);
      cuda_ok(cudaEventRecord(record->done, stream_), op);
    });
    inflight_.push_back(record);
    return std::make_shared<NcclWork>(shared_from_this(), op, options_.timeout, record, std::move(finish));
  }

  // This thread's current stream of the group's device: where mixt queues the
  // kernels that write the tensors a collective reads and read what it wrote.
  cudaStream_t current_stream() const { return cuda::current_native_stream(device_); }

  // Makes the current stream wait for `w`'s completion event (the host does not
  // wait). False when `w` completed already or the group failed: the caller
  // waits on the host, which finishes `w` or raises.
  bool order_after(NcclWork& w) {
    if (w.completed_ || !failure_.empty()) return false;
    cuda::DeviceGuard guard(device_, w.op_);
    cuda_ok(cudaStreamWaitEvent(current_stream(), w.record_->done, 0), w.op_);
    return true;
  }

  // Drops the finished operations' buffers (they finish in stream order).
  void reap() {
    while (!inflight_.empty()) {
      const cudaError_t q = cudaEventQuery(inflight_.front()->done);
      if (q != cudaSuccess) {
        if (q != cudaErrorNotReady) cudaGetLastError();
        return;
      }
      inflight_.pop_front();
    }
  }

  bool complete_failed(NcclWork& w, const std::string& why) {
    abort_comms();
    mark_failed(why);
    w.error_ = std::make_exception_ptr(Error(w.op_, why));
    w.completed_ = true;
    return true;
  }

  // Aborts both communicators (ends their kernels). Idempotent.
  void abort_comms() {
    for (ncclComm_t* c : {&sig_comm_, &comm_}) {
      if (*c != nullptr) ncclCommAbort(*c);
      *c = nullptr;
    }
  }

  // Lets the operations in flight finish and flushes both communicators, within
  // the timeout; false when that failed (the caller aborts).
  bool finalize_comms() {
    const auto deadline = Clock::now() + options_.timeout;
    PollPause pause;
    auto settled = [&](ncclComm_t comm) {
      for (;;) {
        ncclResult_t state = ncclSuccess;
        if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return false;
        if (state == ncclSuccess) return true;
        if (state != ncclInProgress || Clock::now() >= deadline) return false;
        pause();
      }
    };
    while (!inflight_.empty()) {
      reap();
      if (inflight_.empty()) break;
      std::string why;
      if (comm_state(comm_, &why) == CommState::Failed || Clock::now() >= deadline) return false;
      pause();
    }
    for (ncclComm_t* c : {&sig_comm_, &comm_}) {
      const ncclResult_t r = ncclCommFinalize(*c);
      if ((r != ncclSuccess && r != ncclInProgress) || !settled(*c)) return false;
      ncclCommDestroy(*c);
      *c = nullptr;
    }
    return true;
  }

  std::mutex mutex_;  // serialises the NCCL and CUDA calls on this group's communicators and streams
  const int device_;
  const Device cuda_device_;
  ncclComm_t comm_ = nullptr;      // the collectives and send/recv
  ncclComm_t sig_comm_ = nullptr;  // signature exchanges and send/recv headers
  cudaStream_t stream_ = nullptr, sig_stream_ = nullptr;
  cudaEvent_t compute_ready_ = nullptr, sig_done_ = nullptr;
  CallSignature* sig_host_ = nullptr;  // pinned: size_ records received, one to send
  Tensor sig_dev_;                     // size_ records on the device
  Tensor barrier_buf_;                 // barrier's one element
  std::deque<std::shared_ptr<Op>> inflight_;
};

void NcclWork::complete() {
  if (finished_) return;
  finished_ = true;
  if (error_ || !finish_) return;
  try {
    autograd::NoGradGuard no_grad;
    finish_();
  } catch (const Error&) {
    error_ = std::current_exception();
  }
}

bool NcclWork::is_completed() {
  {
    std::lock_guard lock(group_->mutex_);
    if (!group_->test(*this, false, timeout_)) return false;
  }
  complete();
  return true;
}

void NcclWork::wait_on_current_stream() {
  bool ordered = false;
  {
    std::lock_guard lock(group_->mutex_);
    ordered = group_->order_after(*this);
  }
  if (!ordered) return wait(timeout_);
  complete();  // a copy back is queued on the current stream, after the wait
  if (error_) std::rethrow_exception(error_);
}

void NcclWork::wait(Milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  PollPause pause;
  for (;;) {
    {
      std::lock_guard lock(group_->mutex_);
      if (group_->test(*this, Clock::now() >= deadline, timeout)) break;
    }
    pause();
  }
  complete();
  if (error_) std::rethrow_exception(error_);
}

}  // namespace

NcclUniqueId nccl_unique_id() {
  ncclUniqueId id;
  const ncclResult_t r = ncclGetUniqueId(&id);
  MIXT_CHECK(r == ncclSuccess, "nccl_unique_id", "ncclGetUniqueId failed: {}", nccl_error_text(r, nullptr));
  NcclUniqueId out{};
  std::memcpy(out.data(), &id, sizeof id);
  return out;
}

ProcessGroupPtr make_nccl_group(const NcclUniqueId& id, int rank, int size, int cuda_device, GroupOptions options) {
  const char* op = "make_nccl_group";
  MIXT_CHECK(size >= 1 && rank >= 0 && rank < size, op, "rank {} of a group of size {}", rank, size);
  MIXT_CHECK(cuda::is_available(), op, "CUDA is not available: {}", cuda::unavailable_reason());
  MIXT_CHECK(cuda_device >= 0 && cuda_device < cuda::device_count(), op, "no CUDA device {} ({} present)",
             cuda_device, cuda::device_count());
  auto group = std::make_shared<NcclGroup>(rank, size, options, cuda_device);
  group->start(id);
  return group;
}

ProcessGroupPtr make_nccl_group(ProcessGroup& bootstrap, int cuda_device, GroupOptions options) {
  const char* op = "make_nccl_group";
  MIXT_CHECK(bootstrap.device_type() == DeviceType::CPU, op,
             "the bootstrap group must move CPU tensors (its {} backend moves {} tensors)", bootstrap.backend(),
             Device(bootstrap.device_type()).str());
  // The id's bytes and one status byte: rank 0 tells the others when it could not make an id.
  constexpr int64_t kBytes = static_cast<int64_t>(sizeof(NcclUniqueId));
  Tensor buf = zeros({kBytes + 1}, TensorOptions{.dtype = kUInt8});
  auto* bytes = static_cast<uint8_t*>(buf.data_ptr());
  std::string why;
  if (bootstrap.rank() == 0) {
    try {
      const NcclUniqueId id = nccl_unique_id();
      std::memcpy(bytes, id.data(), id.size());
      bytes[kBytes] = 1;
    } catch (const Error& e) {
      why = e.what();
    }
  }
  bootstrap.broadcast(buf, 0);
  bytes = static_cast<uint8_t*>(buf.data_ptr());
  MIXT_CHECK(bytes[kBytes] == 1, op, "rank 0 of the bootstrap group could not create the NCCL unique id{}",
             why.empty() ? std::string() : ": " + why);
  NcclUniqueId id{};
  std::memcpy(id.data(), bytes, id.size());
  return make_nccl_group(id, bootstrap.rank(), bootstrap.size(), cuda_device, options);
}

}  // namespace mixt::dist
