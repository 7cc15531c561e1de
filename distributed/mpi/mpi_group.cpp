#include <mixt/distributed/mpi/mpi_group.h>

#include <mpi.h>

#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <utility>

#include <mixt/distributed/call_signature.h>
#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::dist {

namespace {

// Note [MPI calls are serialised]: MPI is initialised at MPI_THREAD_SERIALIZED and
// every MPI call of mixt holds this mutex, so DDP's hooks (on the backward
// thread) and the application's waits never enter MPI at the same time.
std::mutex& mpi_mutex() {
  static std::mutex m;
  return m;
}

bool g_we_initialized = false;

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return fmt::format("MPI error {}", rc);
  return std::string(text, static_cast<size_t>(len));
}

// How a dtype travels: natively, as raw bytes (moved, never reduced), or
// reduced in float32 (float16, bfloat16, float8).
struct Wire {
  MPI_Datatype type = MPI_BYTE;
  bool reduce_in_float32 = false;
};

Wire wire_of(ScalarType t) {
  switch (t) {
    case kFloat32: return {MPI_FLOAT, false};
    case kFloat64: return {MPI_DOUBLE, false};
    case kInt32: return {MPI_INT32_T, false};
    case kInt64: return {MPI_INT64_T, false};
    case kInt8: return {MPI_INT8_T, false};
    case kUInt8: return {MPI_UINT8_T, false};
    case kBool: return {MPI_C_BOOL, false};
    default: return {MPI_FLOAT, true};
  }
}

MPI_Op mpi_op(ReduceOp op, ScalarType t) {
  if (t == kBool) return op == ReduceOp::Min ? MPI_LAND : MPI_LOR;  // sum/max of bools: any; min: all
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return MPI_SUM;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
  }
  return MPI_SUM;
}

int to_count(const char* op, int64_t n) {
  MIXT_CHECK(n >= 0 && n <= std::numeric_limits<int>::max(), op,
             "{} elements exceed what one MPI call moves (2^31 - 1); split the tensor", n);
  return static_cast<int>(n);
}

class MpiGroup;

// One operation: an optional signature exchange, then the MPI requests, then the
// copy back into the caller's tensor (a staged copy when the tensor is not
// contiguous or is reduced in float32).
class MpiWork final : public Work, public std::enable_shared_from_this<MpiWork> {
 public:
  MpiWork(std::shared_ptr<MpiGroup> group, const char* op, Milliseconds timeout)
      : Work(timeout), group_(std::move(group)), op_(op) {}
  void wait(Milliseconds timeout) override;
  bool is_completed() override;

  // Filled by the group before the work is queued or posted.
  CallSignature mine;
  std::vector<CallSignature> all;  // the signature exchange's receive buffer
  MPI_Request signature_request = MPI_REQUEST_NULL;
  std::function<void(std::vector<MPI_Request>&)> post;  // posts the main requests
  std::function<void(std::vector<MPI_Request>&)> then;  // posts a second round after the first completed
  std::function<void()> finish;                          // after the main requests completed
  std::vector<MPI_Request> requests;
  bool posted = false, completed = false;
  std::exception_ptr error;  // raised by wait()

 private:
  friend class MpiGroup;
  std::shared_ptr<MpiGroup> group_;  // kept alive while the work is
  const char* op_;
};

class MpiGroup final : public ProcessGroup, public std::enable_shared_from_this<MpiGroup> {
 public:
  MpiGroup(int rank, int size, GroupOptions options, MPI_Comm main, MPI_Comm signatures)
      : ProcessGroup(rank, size, options), main_(main), signatures_(signatures) {}
  ~MpiGroup() override { destroy(); }
  std::string backend() const override { return "mpi"; }
  DeviceType device_type() const override { return DeviceType::CPU; }

  WorkPtr all_reduce_async(Tensor& t, ReduceOp op) override {
    const char* name = "all_reduce";
    start(name, t);
    check_output(name, t);
    MIXT_CHECK(op != ReduceOp::Avg || t.is_floating_point(), name, "avg of a {} tensor (floating dtypes only)",
               t.dtype());
    const Wire w = wire_of(t.dtype());
    Tensor buf = staged(t, w.reduce_in_float32);
    const int count = to_count(name, t.numel());
    auto work = make_work(name, CollectiveKind::AllReduce, &t, static_cast<int32_t>(op));
    const MPI_Op mop = mpi_op(op, t.dtype());
    work->post = [this, buf, count, w, mop](std::vector<MPI_Request>& r) {
      r.emplace_back();
      check_rc("all_reduce", MPI_Iallreduce(MPI_IN_PLACE, buf.data_ptr(), count, w.type, mop, main_, &r.back()));
    };
    work->finish = [t, buf, op, n = size_]() mutable {
      if (op == ReduceOp::Avg) div_(buf, Scalar(static_cast<double>(n)));
      copy_back(t, buf);
    };
    return submit(work);
  }

  WorkPtr broadcast_async(Tensor& t, int root) override {
    const char* name = "broadcast";
    start(name, t);
    check_output(name, t);
    check_rank(name, root, "root");
    Tensor buf = staged(t, false);
    const int count = to_count(name, t.nbytes());
    auto work = make_work(name, CollectiveKind::Broadcast, &t, root);
    work->post = [this, buf, count, root](std::vector<MPI_Request>& r) {
      r.emplace_back();
      check_rc("broadcast", MPI_Ibcast(buf.data_ptr(), count, MPI_BYTE, root, main_, &r.back()));
    };
    work->finish = [t, buf]() mutable { copy_back(t, buf); };
    return submit(work);
  }

  WorkPtr all_gather_async(Tensor& output, const Tensor& input) override {
    const char* name = "all_gather";
    start(name, input);
    check_gather_output(output, input);
    Tensor in = input.contiguous();
    Tensor out = staged(output, false);
    const int count = to_count(name, input.nbytes());
    to_count(name, output.nbytes());
    auto work = make_work(name, CollectiveKind::AllGather, &input, 0);
    work->post = [this, in, out, count](std::vector<MPI_Request>& r) {
      r.emplace_back();
      check_rc("all_gather", MPI_Iallgather(in.data_ptr(), count, MPI_BYTE, out.data_ptr(), count, MPI_BYTE, main_,
                                            &r.back()));
    };
    work->finish = [output, out]() mutable { copy_back(output, out); };
    return submit(work);
  }

  WorkPtr reduce_scatter_async(Tensor& output, const Tensor& input, ReduceOp op) override {
    const char* name = "reduce_scatter";
    start(name, input);
    check_scatter_output(output, input);
    MIXT_CHECK(op != ReduceOp::Avg || input.is_floating_point(), name, "avg of a {} tensor (floating dtypes only)",
               input.dtype());
    to_count(name, input.numel());
    const Wire w = wire_of(input.dtype());
    Tensor in = w.reduce_in_float32 ? to(input, kFloat32).contiguous() : input.contiguous();
    Tensor out = staged(output, w.reduce_in_float32);
    std::vector<int> counts(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      const ChunkRange c = chunk_range(input.numel(), size_, r);
      counts[static_cast<size_t>(r)] = static_cast<int>(c.end - c.begin);
    }
    auto work = make_work(name, CollectiveKind::ReduceScatter, &input, static_cast<int32_t>(op));
    const MPI_Op mop = mpi_op(op, input.dtype());
    work->post = [this, in, out, counts, w, mop](std::vector<MPI_Request>& r) {
      r.emplace_back();
      check_rc("reduce_scatter",
               MPI_Ireduce_scatter(in.data_ptr(), out.data_ptr(), counts.data(), w.type, mop, main_, &r.back()));
    };
    work->finish = [output, out, op, n = size_]() mutable {
      if (op == ReduceOp::Avg) div_(out, Scalar(static_cast<double>(n)));
      copy_back(output, out);
    };
    return submit(work);
  }

  WorkPtr barrier_async() override {
    check_usable("barrier");
    auto work = make_work("barrier", CollectiveKind::Barrier, nullptr, 0);
    work->post = [this](std::vector<MPI_Request>& r) {
      r.emplace_back();
      check_rc("barrier", MPI_Ibarrier(main_, &r.back()));
    };
    return submit(work);
  }

  WorkPtr send_async(const Tensor& t, int dst, int tag) override {
    const char* name = "send";
    start(name, t);
    check_peer(name, dst, tag);
    auto work = std::make_shared<MpiWork>(shared_from_this(), name, options_.timeout);
    auto header = std::make_shared<CallSignature>(CallSignature::of(CollectiveKind::Broadcast, &t, rank_));
    Tensor buf = t.contiguous();
    const int count = to_count(name, t.nbytes());
    work->post = [this, header, buf, count, dst, tag](std::vector<MPI_Request>& r) {
      r.resize(2);
      check_rc("send", MPI_Isend(header.get(), sizeof(CallSignature), MPI_BYTE, dst, 2 * tag, main_, &r[0]));
      check_rc("send", MPI_Isend(buf.data_ptr(), count, MPI_BYTE, dst, 2 * tag + 1, main_, &r[1]));
    };
    return post_now(work);
  }

  WorkPtr recv_async(Tensor& t, int src, int tag) override {
    const char* name = "recv";
    start(name, t);
    check_output(name, t);
    check_peer(name, src, tag);
    auto work = std::make_shared<MpiWork>(shared_from_this(), name, options_.timeout);
    auto header = std::make_shared<CallSignature>();
    auto mismatch = std::make_shared<std::string>();
    const CallSignature expected = CallSignature::of(CollectiveKind::Broadcast, &t, src);
    Tensor buf = staged(t, false);
    const int count = to_count(name, t.nbytes());
    // First the sender's header, then the payload: into `buf` when the header
    // matches, else into a scratch buffer of the sender's size (the message is
    // drained, so the next exchange between the two ranks stays intact).
    work->post = [this, header, src, tag](std::vector<MPI_Request>& r) {
      r.emplace_back();
      check_rc("recv", MPI_Irecv(header.get(), sizeof(CallSignature), MPI_BYTE, src, 2 * tag, main_, &r.back()));
    };
    work->then = [this, header, mismatch, expected, buf, count, src, tag](std::vector<MPI_Request>& r) {
      const CallSignature sent = *header;
      MIXT_CHECK(sent.dtype >= 0 && sent.dtype < kNumDtypes && sent.numel >= 0, "recv",
                 "rank {} sent a corrupt header (dtype {}, numel {})", src, sent.dtype, sent.numel);
      void* dst = buf.data_ptr();
      int n = count;
      if (!(sent == expected)) {
        *mismatch = fmt::format("rank {} sent {} but this rank receives into {}", src, sent.tensor_str(),
                                expected.tensor_str());
        const int64_t bytes = checked_nbytes(sent.numel, element_size(static_cast<ScalarType>(sent.dtype)), "recv");
        Tensor scratch = empty({bytes}, TensorOptions{.dtype = kUInt8});
        n = to_count("recv", bytes);
        dst = scratch.data_ptr();
        drains_.push_back(scratch);
      }
      r.emplace_back();
      check_rc("recv", MPI_Irecv(dst, n, MPI_BYTE, src, 2 * tag + 1, main_, &r.back()));
    };
    work->finish = [t, buf, mismatch]() mutable {
      if (!mismatch->empty()) MIXT_FAIL("recv", "{}", *mismatch);
      copy_back(t, buf);
    };
    return post_now(work);
  }

  void destroy() override {
    std::lock_guard lock(mpi_mutex());
    if (destroyed_) return;
    destroyed_ = true;
    int finalized = 0;
    MPI_Finalized(&finalized);
    // A failed group may still have requests a dead peer never matched: its
    // communicators are left to MPI_Finalize / process exit.
    if (finalized || !failure_.empty()) return;
    MPI_Comm_free(&main_);
    MPI_Comm_free(&signatures_);
  }

  // Posts the main requests of queued works, in submission order, as their
  // signature exchanges complete (Note [Collective order]). Caller holds the mutex.
  void progress() {
    while (!queue_.empty()) {
      auto& w = *queue_.front();
      if (w.signature_request != MPI_REQUEST_NULL) {
        int done = 0;
        const int rc = MPI_Test(&w.signature_request, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) fail_group(w, mpi_error_text(rc));
        if (!done) return;
        try {
          check_signatures(w.op_, w.all);
        } catch (const Error&) {
          w.error = std::current_exception();  // every rank saw the same records: all refuse, none posts
          w.completed = true;
          queue_.pop_front();
          continue;
        }
      }
      post_main(w);
      queue_.pop_front();
    }
  }

  // Tests `w` once (progressing the queue first). Caller holds the mutex.
  bool test(MpiWork& w) {
    progress();
    if (w.completed) return true;
    if (!w.posted) return false;
    for (;;) {
      int done = 0;
      const int rc = MPI_Testall(static_cast<int>(w.requests.size()), w.requests.data(), &done, MPI_STATUSES_IGNORE);
      if (rc != MPI_SUCCESS) {
        const std::string why = fmt::format("{} failed on rank {}: {}", w.op_, rank_, mpi_error_text(rc));
        w.error = std::make_exception_ptr(Error(w.op_, why));
        w.completed = true;
        mark_failed(why);
        return true;
      }
      if (!done) return false;
      if (!w.then) break;
      auto next = std::exchange(w.then, nullptr);
      w.requests.clear();
      try {
        next(w.requests);
      } catch (const Error&) {
        w.error = std::current_exception();
        w.completed = true;
        return true;
      }
    }
    w.completed = true;
    if (w.finish) {
      try {
        autograd::NoGradGuard no_grad;
        w.finish();
      } catch (const Error&) {
        w.error = std::current_exception();
      }
    }
    return true;
  }

  void timed_out(MpiWork& w, Milliseconds timeout) {
    const std::string why = timeout_reason(w.op_, timeout);
    mark_failed(why);
    MIXT_FAIL(w.op_, "{}", why);
  }

 private:
  void start(const char* op, const Tensor& t) {
    check_usable(op);
    check_tensor(op, t);
  }

  void check_peer(const char* op, int peer, int tag) const {
    check_rank(op, peer, "peer");
    MIXT_CHECK(peer != rank_, op, "rank {} cannot exchange with itself", rank_);
    MIXT_CHECK(tag >= 0 && tag < 16384, op, "tag {} outside [0, 16384)", tag);
  }

  // The buffer MPI works on: `t` itself when it is contiguous and travels as it
  // is, else a contiguous (float32) copy that finish() copies back.
  static Tensor staged(const Tensor& t, bool in_float32) {
    if (in_float32) return to(t, kFloat32).contiguous();
    return t.is_contiguous() ? t : t.contiguous();
  }

  void check_rc(const char* op, int rc) {
    if (rc == MPI_SUCCESS) return;
    const std::string why = fmt::format("{} failed on rank {}: {}", op, rank_, mpi_error_text(rc));
    mark_failed(why);
    MIXT_FAIL(op, "{}", why);
  }

  std::shared_ptr<MpiWork> make_work(const char* op, CollectiveKind kind, const Tensor* t, int32_t arg) {
    auto w = std::make_shared<MpiWork>(shared_from_this(), op, options_.timeout);
    w->mine = CallSignature::of(kind, t, arg);
    return w;
  }

  // Collectives: exchange signatures (if checked), then post in queue order.
  WorkPtr submit(const std::shared_ptr<MpiWork>& w) {
    std::lock_guard lock(mpi_mutex());
    if (options_.check_collectives) {
      w->all.resize(static_cast<size_t>(size_));
      check_rc(w->op_, MPI_Iallgather(&w->mine, sizeof(CallSignature), MPI_BYTE, w->all.data(),
                                      sizeof(CallSignature), MPI_BYTE, signatures_, &w->signature_request));
    }
    queue_.push_back(w);
    progress();
    return w;
  }

  WorkPtr post_now(const std::shared_ptr<MpiWork>& w) {
    std::lock_guard lock(mpi_mutex());
    post_main(*w);
    return w;
  }

  void post_main(MpiWork& w) {
    w.post(w.requests);
    w.posted = true;
  }

  void fail_group(MpiWork& w, const std::string& what) {
    const std::string why = fmt::format("{} failed on rank {}: {}", w.op_, rank_, what);
    mark_failed(why);
    MIXT_FAIL(w.op_, "{}", why);
  }

  MPI_Comm main_;
  MPI_Comm signatures_;
  std::deque<std::shared_ptr<MpiWork>> queue_;
  std::vector<Tensor> drains_;  // scratch buffers of mismatched receives (kept until the group ends)
};

bool MpiWork::is_completed() {
  std::lock_guard lock(mpi_mutex());
  return group_->test(*this);
}

void MpiWork::wait(Milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  PollPause pause;  // oversubscribed ranks must not starve the peer they wait for
  for (;;) {
    {
      std::lock_guard lock(mpi_mutex());
      if (group_->test(*this)) break;
      if (std::chrono::steady_clock::now() >= deadline) group_->timed_out(*this, timeout);
    }
    pause();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace

bool mpi_initialized() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

ProcessGroupPtr make_mpi_group(GroupOptions options) {
  std::lock_guard lock(mpi_mutex());
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  MIXT_CHECK(!fin, "make_mpi_group", "MPI was already finalized in this process");
  if (!init) {
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    MIXT_CHECK(rc == MPI_SUCCESS, "make_mpi_group", "MPI_Init_thread failed: {}", mpi_error_text(rc));
    g_we_initialized = true;
  }
  MPI_Comm main = MPI_COMM_NULL, signatures = MPI_COMM_NULL;
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &main);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(MPI_COMM_WORLD, &signatures);
  MIXT_CHECK(rc == MPI_SUCCESS, "make_mpi_group", "MPI_Comm_dup failed: {}", mpi_error_text(rc));
  MPI_Comm_set_errhandler(main, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(signatures, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(main, &rank);
  MPI_Comm_size(main, &size);
  return std::make_shared<MpiGroup>(rank, size, options, main, signatures);
}

void mpi_finalize() {
  std::lock_guard lock(mpi_mutex());
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin && g_we_initialized) MPI_Finalize();
}

}  // namespace mixt::dist
