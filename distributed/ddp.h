// DistributedDataParallel: one replica of a module per rank, gradients averaged
// across ranks as backward produces them. Parameters and buffers come from rank
// 0 at construction; gradients are packed into buckets (about 25 MB, in reverse
// registration order, since backward produces the last layers' gradients first)
// whose all-reduces start from the parameters' post-accumulate-grad hooks as
// each bucket fills, so communication overlaps the rest of backward. no_sync()
// accumulates locally; optimizer_step() finishes the averaging and steps, with
// the grad scaler's overflow flag reduced across ranks so every rank makes the
// same decision. See docs/distributed.md.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <mixt/distributed/process_group.h>
#include <mixt/runtime/nn/module.h>

namespace mixt::optim {
class Optimizer;
}
namespace mixt::amp {
class GradScaler;
}

namespace mixt::dist {

struct DdpOptions {
  int64_t bucket_cap_bytes = 25 * 1024 * 1024;
  // A parameter that gets a gradient on some ranks but not on others (a branch
  // taken on some ranks) is averaged with zeros from the others; without this,
  // synchronize_gradients() raises on every rank, naming it. (A parameter that
  // no rank used keeps its .grad as it was either way.)
  bool find_unused_parameters = false;
  // Copy rank 0's buffers (running statistics) to every rank before each forward.
  bool broadcast_buffers = true;
};

class GradientReducer;

class DistributedDataParallel {
 public:
  // Broadcasts `module`'s parameters and buffers from rank 0 (a collective: every
  // rank constructs its DDP at the same point) and registers the gradient hooks.
  DistributedDataParallel(std::shared_ptr<nn::Module> module, ProcessGroupPtr group, DdpOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // module().forward(x), after broadcasting buffers when asked to.
  Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  // While alive, backward only accumulates into .grad (no communication); the
  // first backward after it averages the accumulated gradients.
  class NoSync {
   public:
    explicit NoSync(GradientReducer& r);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    GradientReducer& reducer_;
  };
  [[nodiscard]] NoSync no_sync();

  // Waits for every bucket's all-reduce and writes the averaged gradients into
  // .grad (launching the buckets backward did not fill). Called by
  // optimizer_step(). A collective: every rank calls it at the same point, and
  // it always all-reduces every bucket (zeros where no gradient was produced),
  // so a second call with no backward in between costs a full all-reduce and
  // leaves .grad unchanged (no rank produced anything). Inside no_sync(): nothing.
  void synchronize_gradients();

  nn::Module& module() { return *module_; }
  const std::shared_ptr<nn::Module>& module_ptr() const { return module_; }
  const ProcessGroupPtr& process_group() const { return group_; }
  // The buckets, as the dotted names of their parameters (launch order).
  std::vector<std::vector<std::string>> bucket_parameter_names() const;
  // Buckets whose all-reduce started during the last synchronised backward (the
  // rest started in synchronize_gradients()).
  int64_t buckets_launched_in_backward() const;

 private:
  std::shared_ptr<nn::Module> module_;
  ProcessGroupPtr group_;
  DdpOptions options_;
  std::shared_ptr<GradientReducer> reducer_;
};

// Synchronises ddp's gradients, then optimizer.step().
void optimizer_step(DistributedDataParallel& ddp, optim::Optimizer& optimizer);
// Synchronises ddp's gradients, reduces the scaler's found_inf flag across the
// group (max) before the decision, then scaler.step() and scaler.update():
// every rank skips the same steps and keeps the same scale. Returns true when
// the step was taken.
bool optimizer_step(DistributedDataParallel& ddp, optim::Optimizer& optimizer, amp::GradScaler& scaler);
// The same with the scaler's sync-free step: no host read of the flag, and on
// an NCCL group no host wait for its all-reduce (FlagWait::Stream). The gradient
// synchronisation before it still waits on the host.
void optimizer_step_sync_free(DistributedDataParallel& ddp, optim::Optimizer& optimizer, amp::GradScaler& scaler);
// How the all-reduce of the scaler's found_inf flag is awaited.
enum class FlagWait : uint8_t {
  // The host waits, bounded by the group's timeout: for the step that reads the
  // flag on the host anyway (optimizer_step with a scaler).
  Host,
  // Later work on the current stream waits, the host does not, on a group whose
  // collectives run on streams (NCCL); other groups wait on the host. For the
  // sync-free step (Work::wait_on_current_stream, Note [Stream-ordered waits]).
  Stream,
};
// Makes `scaler` reduce its found_inf flag across `group` (max) before each
// decision, so every rank skips the same steps (the optimizer_step functions do
// this). Keeps a weak reference to the group.
void sync_overflow_flags(amp::GradScaler& scaler, const ProcessGroupPtr& group, FlagWait wait = FlagWait::Stream);

}  // namespace mixt::dist
