#include <mixt/distributed/ddp.h>

#include <mutex>

#include <mixt/amp/grad_scaler.h>
#include <mixt/runtime/autograd/autograd.h>
#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/ops/ops.h>
#include <mixt/runtime/optim/optimizer.h>

namespace mixt::dist {

// Note [DDP buckets] (docs/notes/distributed.md): the parameters that require
// grad, in reverse registration order, are cut into buckets of one dtype and
// device and at most bucket_cap_bytes. Each bucket owns one flat buffer. When a
// bucket's last gradient is ready, the buckets are launched *in order* from the
// first unlaunched one (all_reduce(avg) of the flat buffer), so every rank posts
// its collectives in the same order. synchronize() launches what backward left
// (unused parameters contribute zeros), all-reduces how many ranks used each
// parameter (on the buckets' device: the group's), waits, and writes the averages
// back into .grad; whatever fails, it waits for what it launched and resets.
class GradientReducer {
 public:
  struct Param {
    std::string name;
    Tensor tensor;
    size_t bucket = 0;
    int64_t offset = 0;
    bool ready = false;
  };
  struct Bucket {
    std::vector<size_t> params;
    Tensor flat;
    size_t pending = 0;
    bool launched = false;
    WorkPtr work;
  };

  GradientReducer(const nn::Module& module, ProcessGroupPtr group, const DdpOptions& options)
      : group_(std::move(group)), find_unused_(options.find_unused_parameters) {
    auto named = module.named_parameters();
    for (auto it = named.rbegin(); it != named.rend(); ++it) {
      if (it->second.requires_grad()) params_.push_back({it->first, it->second});
    }
    int64_t bucket_bytes = 0;
    for (size_t i = 0; i < params_.size(); ++i) {
      Param& p = params_[i];
      const int64_t bytes = p.tensor.nbytes();
      const bool fits = !buckets_.empty() && bucket_bytes + bytes <= options.bucket_cap_bytes &&
                        params_[buckets_.back().params.front()].tensor.dtype() == p.tensor.dtype() &&
                        params_[buckets_.back().params.front()].tensor.device() == p.tensor.device();
      if (!fits) {
        buckets_.emplace_back();
        bucket_bytes = 0;
      }
      Bucket& b = buckets_.back();
      p.bucket = buckets_.size() - 1;
      p.offset = bucket_bytes / p.tensor.element_size();
      b.params.push_back(i);
      bucket_bytes += bytes;
    }
    for (Bucket& b : buckets_) {
      const Tensor& last = params_[b.params.back()].tensor;
      const int64_t n = params_[b.params.back()].offset + last.numel();
      b.flat = empty({n}, TensorOptions{.dtype = last.dtype(), .device = last.device()});
      b.pending = b.params.size();
    }
  }

  void register_hooks(const std::shared_ptr<GradientReducer>& self) {
    for (size_t i = 0; i < params_.size(); ++i) {
      std::weak_ptr<GradientReducer> weak = self;
      autograd::register_post_accumulate_grad_hook(params_[i].tensor, [weak, i](const Tensor&) {
        if (auto r = weak.lock()) r->on_grad_ready(i);
      });
    }
  }

  void on_grad_ready(size_t i) {
    std::lock_guard lock(mutex_);
    if (no_sync_depth_ > 0 || detached_) return;
    Param& p = params_[i];
    MIXT_CHECK(!p.ready, "DistributedDataParallel",
               "the gradient of parameter '{}' was produced twice before the gradients were synchronized (two "
               "backward passes without optimizer_step or synchronize_gradients in between: use no_sync() to "
               "accumulate)",
               p.name);
    p.ready = true;
    Bucket& b = buckets_[p.bucket];
    if (--b.pending == 0) launch_filled_buckets();
    // Non-blocking collectives progress inside MPI calls: one test of the oldest
    // unfinished bucket gives every launched one a turn.
    while (oldest_running_ < next_launch_ && buckets_[oldest_running_].work->is_completed()) ++oldest_running_;
  }

  void synchronize() {
    std::lock_guard lock(mutex_);
    if (no_sync_depth_ > 0) return;
    // Whatever fails, every launched all-reduce is waited for and the reducer
    // starts a fresh iteration: the next backward must not find it midway.
    std::exception_ptr failure;
    auto attempt = [&failure](auto&& f) {
      try {
        f();
      } catch (const Error&) {
        if (!failure) failure = std::current_exception();
      }
    };
    Tensor used;
    WorkPtr count;
    attempt([&] {
      // Every rank launches what its backward left, in the same order.
      for (; next_launch_ < buckets_.size(); ++next_launch_) launch(buckets_[next_launch_]);
      if (params_.empty()) return;
      used = usage_counts();
      count = group_->all_reduce_async(used, ReduceOp::Sum);
    });
    for (Bucket& b : buckets_)
      if (b.work) attempt([&] { b.work->wait(); });
    std::vector<int32_t> u;
    if (count)
      attempt([&] {
        count->wait();
        u = used.cpu().to_vector<int32_t>();  // after the wait: the counts of every rank
      });
    const int64_t launched_early = launched_in_backward_;
    reset();
    last_launched_in_backward_ = launched_early;
    if (failure) std::rethrow_exception(failure);

    std::string missing;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (u[i] > 0 && u[i] < group_->size() && !find_unused_) {
        missing += fmt::format("{}'{}' (on {} of {} ranks)", missing.empty() ? "" : ", ", params_[i].name, u[i],
                               group_->size());
      }
    }
    MIXT_CHECK(missing.empty(), "DistributedDataParallel",
               "parameters that received no gradient in this iteration: {}. Use every parameter in forward, or "
               "construct DistributedDataParallel with find_unused_parameters = true",
               missing);
    autograd::NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (u[i] == 0) continue;  // unused on every rank: .grad stays as it was
      Param& p = params_[i];
      Tensor avg = reshape(narrow(buckets_[p.bucket].flat, 0, p.offset, p.tensor.numel()), p.tensor.sizes());
      if (p.tensor.grad().defined()) {
        Tensor g = p.tensor.grad();
        g.copy_(avg);
      } else {
        p.tensor.set_grad(avg.clone());
      }
    }
  }

  void enter_no_sync() {
    std::lock_guard lock(mutex_);
    ++no_sync_depth_;
  }
  void leave_no_sync() {
    std::lock_guard lock(mutex_);
    --no_sync_depth_;
  }
  void detach() {
    std::lock_guard lock(mutex_);
    detached_ = true;
  }

  std::vector<std::vector<std::string>> bucket_names() const {
    std::vector<std::vector<std::string>> out;
    for (const Bucket& b : buckets_) {
      out.emplace_back();
      for (size_t i : b.params) out.back().push_back(params_[i].name);
    }
    return out;
  }
  int64_t launched_in_backward() const {
    std::lock_guard lock(mutex_);
    return last_launched_in_backward_;
  }

 private:
  void launch_filled_buckets() {
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
      launch(buckets_[next_launch_++]);
      ++launched_in_backward_;
    }
  }

  // Packs the bucket's gradients (zeros for parameters without one) and starts its average.
  void launch(Bucket& b) {
    autograd::NoGradGuard no_grad;
    for (size_t i : b.params) {
      const Param& p = params_[i];
      Tensor slot = narrow(b.flat, 0, p.offset, p.tensor.numel());
      const Tensor& g = p.tensor.grad();
      if (p.ready && g.defined()) {
        slot.copy_(reshape(g, {p.tensor.numel()}));
      } else {
        slot.zero_();
      }
    }
    b.launched = true;
    b.work = group_->all_reduce_async(b.flat, ReduceOp::Avg);
  }

  // 1 for each parameter this rank produced a gradient for, on the device the
  // buckets (and so the group's collectives) live on: a GPU group moves only
  // tensors of its GPU.
  Tensor usage_counts() const {
    std::vector<int32_t> mine(params_.size());
    for (size_t i = 0; i < params_.size(); ++i) mine[i] = params_[i].ready ? 1 : 0;
    return from_vector(mine, {static_cast<int64_t>(mine.size())}, buckets_.front().flat.device());
  }

  void reset() {
    for (Param& p : params_) p.ready = false;
    for (Bucket& b : buckets_) {
      b.pending = b.params.size();
      b.launched = false;
      b.work.reset();
    }
    next_launch_ = 0;
    oldest_running_ = 0;
    launched_in_backward_ = 0;
  }

  mutable std::mutex mutex_;
  ProcessGroupPtr group_;
  bool find_unused_;
  std::vector<Param> params_;
  std::vector<Bucket> buckets_;
  size_t next_launch_ = 0;
  size_t oldest_running_ = 0;  // buckets before it have completed their all-reduce
  int no_sync_depth_ = 0;
  bool detached_ = false;
  int64_t launched_in_backward_ = 0;
  int64_t last_launched_in_backward_ = 0;
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module, ProcessGroupPtr group,
                                                 DdpOptions options)
    : module_(std::move(module)), group_(std::move(group)), options_(options) {
  MIXT_CHECK(module_ != nullptr && group_ != nullptr, "DistributedDataParallel", "null module or process group");
  MIXT_CHECK(options.bucket_cap_bytes > 0, "DistributedDataParallel", "bucket_cap_bytes must be positive, got {}",
             options.bucket_cap_bytes);
  {
    autograd::NoGradGuard no_grad;
    for (auto& [name, t] : module_->named_parameters()) group_->broadcast(t, 0);
    for (auto& [name, t] : module_->named_buffers()) group_->broadcast(t, 0);
  }
  reducer_ = std::make_shared<GradientReducer>(*module_, group_, options_);
  reducer_->register_hooks(reducer_);
}

DistributedDataParallel::~DistributedDataParallel() {
  if (reducer_) reducer_->detach();
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  if (options_.broadcast_buffers && group_->size() > 1) {
    autograd::NoGradGuard no_grad;
    for (auto& [name, t] : module_->named_buffers()) group_->broadcast(t, 0);
  }
  return module_->forward(x);
}

DistributedDataParallel::NoSync::NoSync(GradientReducer& r) : reducer_(r) { reducer_.enter_no_sync(); }
DistributedDataParallel::NoSync::~NoSync() { reducer_.leave_no_sync(); }
DistributedDataParallel::NoSync DistributedDataParallel::no_sync() { return NoSync(*reducer_); }

void DistributedDataParallel::synchronize_gradients() { reducer_->synchronize(); }

std::vector<std::vector<std::string>> DistributedDataParallel::bucket_parameter_names() const {
  return reducer_->bucket_names();
}

int64_t DistributedDataParallel::buckets_launched_in_backward() const { return reducer_->launched_in_backward(); }

void sync_overflow_flags(amp::GradScaler& scaler, const ProcessGroupPtr& group, FlagWait wait) {
  std::weak_ptr<ProcessGroup> weak = group;
  scaler.set_flag_reducer([weak, wait](Tensor& found_inf) {
    auto g = weak.lock();
    MIXT_CHECK(g != nullptr, "optimizer_step", "the process group of the scaler's flag reducer is gone");
    WorkPtr work = g->all_reduce_async(found_inf, ReduceOp::Max);
    if (wait == FlagWait::Stream)
      work->wait_on_current_stream();
    else
      work->wait();
  });
}

void optimizer_step(DistributedDataParallel& ddp, optim::Optimizer& optimizer) {
  ddp.synchronize_gradients();
  optimizer.step();
}

bool optimizer_step(DistributedDataParallel& ddp, optim::Optimizer& optimizer, amp::GradScaler& scaler) {
  ddp.synchronize_gradients();
  sync_overflow_flags(scaler, ddp.process_group(), FlagWait::Host);
  const bool stepped = scaler.step(optimizer);
  scaler.update();
  return stepped;
}

void optimizer_step_sync_free(DistributedDataParallel& ddp, optim::Optimizer& optimizer, amp::GradScaler& scaler) {
  ddp.synchronize_gradients();
  sync_overflow_flags(scaler, ddp.process_group(), FlagWait::Stream);
  scaler.step_sync_free(optimizer);
  scaler.update();
}

}  // namespace mixt::dist
