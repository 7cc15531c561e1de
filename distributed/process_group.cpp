#include <mixt/distributed/process_group.h>

#include <algorithm>
#include <thread>

#include <mixt/runtime/check.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::dist {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "unknown";
}

ProcessGroup::ProcessGroup(int rank, int size, GroupOptions options)
    : rank_(rank), size_(size), options_(options) {
  MIXT_CHECK(size >= 1 && rank >= 0 && rank < size, "ProcessGroup", "rank {} of a group of size {}", rank, size);
  MIXT_CHECK(options.timeout.count() > 0, "ProcessGroup", "timeout must be positive, got {} ms", options.timeout.count());
}

void ProcessGroup::check_usable(const char* op) const {
  MIXT_CHECK(!destroyed_, op, "collective on a destroyed process group ({} backend, rank {} of {})", backend(), rank_,
             size_);
  MIXT_CHECK(failure_.empty(), op, "the process group failed earlier and cannot be used: {}", failure_);
}

void ProcessGroup::mark_failed(const std::string& why) {
  if (failure_.empty()) failure_ = why;
}

void ProcessGroup::check_tensor(const char* op, const Tensor& t) const {
  MIXT_CHECK(t.defined(), op, "undefined tensor");
  MIXT_CHECK(t.device().type() == device_type(), op, "the {} backend moves {} tensors, got a tensor on {}", backend(),
             Device(device_type()).str(), t.device());
}

void ProcessGroup::check_output(const char* op, const Tensor& t) const {
  check_tensor(op, t);
  MIXT_CHECK(!t.has_internal_overlap(), op, "cannot write into {} {}: its elements share memory (an expanded view)",
             t.dtype(), t.sizes());
}

void ProcessGroup::check_rank(const char* op, int r, const char* what) const {
  MIXT_CHECK(r >= 0 && r < size_, op, "{} rank {} is outside the group of size {}", what, r, size_);
}

void ProcessGroup::check_gather_output(const Tensor& output, const Tensor& input) const {
  check_output("all_gather", output);
  MIXT_CHECK(output.dtype() == input.dtype() && output.numel() == static_cast<int64_t>(size_) * input.numel(),
             "all_gather", "output {} {} cannot hold {} inputs {} {}", output.dtype(), output.sizes(), size_,
             input.dtype(), input.sizes());
}

void ProcessGroup::check_scatter_output(const Tensor& output, const Tensor& input) const {
  check_output("reduce_scatter", output);
  const ChunkRange mine = chunk_range(input.numel(), size_, rank_);
  MIXT_CHECK(output.dtype() == input.dtype() && output.dim() == 1 && output.numel() == mine.end - mine.begin,
             "reduce_scatter", "rank {} of {} receives {} elements of {} as a 1-D {} tensor, got output {} {}", rank_,
             size_, mine.end - mine.begin, input.numel(), input.dtype(), output.dtype(), output.sizes());
}

std::string ProcessGroup::timeout_reason(const char* op, Milliseconds timeout) const {
  return fmt::format(
      "{} timed out after {} ms on rank {} of {}: a peer did not take part (it may have exited, crashed or be stuck "
      "in other work)",
      op, timeout.count(), rank_, size_);
}

void ProcessGroup::copy_back(Tensor& target, const Tensor& buf) {
  if (buf.is_same(target)) target.bump_version();  // the transport wrote it in place
  else target.copy_(reshape(buf, target.sizes()));  // copy_ bumps the version
}

void PollPause::operator()() {
  const auto now = std::chrono::steady_clock::now();
  if (next_.count() == 0) {
    start_ = now;
    next_ = std::chrono::microseconds(10);
  }
  if (now - start_ < std::chrono::milliseconds(2)) {
    std::this_thread::yield();
    return;
  }
  std::this_thread::sleep_for(next_);
  next_ = std::min(next_ * 2, std::chrono::microseconds(200));
}

Tensor ProcessGroup::all_gather(const Tensor& input) {
  check_tensor("all_gather", input);
  std::vector<int64_t> shape{size_};
  for (int64_t s : input.sizes()) shape.push_back(s);
  Tensor out = empty(Shape(shape), TensorOptions{.dtype = input.dtype(), .device = input.device()});
  all_gather_async(out, input)->wait();
  return out;
}

Tensor ProcessGroup::reduce_scatter(const Tensor& input, ReduceOp op) {
  check_tensor("reduce_scatter", input);
  const ChunkRange c = chunk_range(input.numel(), size_, rank_);
  Tensor out = empty({c.end - c.begin}, TensorOptions{.dtype = input.dtype(), .device = input.device()});
  reduce_scatter_async(out, input, op)->wait();
  return out;
}

ChunkRange chunk_range(int64_t numel, int size, int r) {
  MIXT_CHECK(numel >= 0 && size >= 1 && r >= 0 && r < size, "chunk_range", "numel {}, size {}, rank {}", numel, size,
             r);
  const int64_t base = numel / size, extra = numel % size;
  const int64_t begin = r * base + std::min<int64_t>(r, extra);
  return {begin, begin + base + (r < extra ? 1 : 0)};
}

namespace {

class DoneWork final : public Work {
 public:
  explicit DoneWork(Milliseconds timeout) : Work(timeout) {}
  void wait(Milliseconds) override {}
  bool is_completed() override { return true; }
};

// World size 1: the reductions are identities, gathers and scatters are copies.
class LocalGroup final : public ProcessGroup {
 public:
  LocalGroup(DeviceType type, GroupOptions options) : ProcessGroup(0, 1, options), type_(type) {}
  std::string backend() const override { return "local"; }
  DeviceType device_type() const override { return type_; }

  WorkPtr all_reduce_async(Tensor& t, ReduceOp op) override {
    start("all_reduce", t);
    check_output("all_reduce", t);
    MIXT_CHECK(op != ReduceOp::Avg || t.is_floating_point(), "all_reduce", "avg of a {} tensor (floating dtypes only)",
               t.dtype());
    return done();
  }
  WorkPtr broadcast_async(Tensor& t, int root) override {
    start("broadcast", t);
    check_rank("broadcast", root, "root");
    return done();
  }
  WorkPtr all_gather_async(Tensor& output, const Tensor& input) override {
    start("all_gather", input);
    check_gather_output(output, input);
    output.copy_(reshape(input, output.sizes()));
    return done();
  }
  WorkPtr reduce_scatter_async(Tensor& output, const Tensor& input, ReduceOp op) override {
    start("reduce_scatter", input);
    check_scatter_output(output, input);
    output.copy_(reshape(input, {input.numel()}));
    return done();
  }
  WorkPtr barrier_async() override {
    check_usable("barrier");
    return done();
  }
  WorkPtr send_async(const Tensor& t, int dst, int) override {
    start("send", t);
    MIXT_FAIL("send", "a group of size 1 has no peer to send to (dst {})", dst);
  }
  WorkPtr recv_async(Tensor& t, int src, int) override {
    start("recv", t);
    MIXT_FAIL("recv", "a group of size 1 has no peer to receive from (src {})", src);
  }
  void destroy() override { destroyed_ = true; }

 private:
  void start(const char* op, const Tensor& t) const {
    check_usable(op);
    check_tensor(op, t);
  }
  WorkPtr done() const { return std::make_shared<DoneWork>(options_.timeout); }
  DeviceType type_;
};

}  // namespace

ProcessGroupPtr make_local_group(DeviceType device_type, GroupOptions options) {
  return std::make_shared<LocalGroup>(device_type, options);
}

}  // namespace mixt::dist
