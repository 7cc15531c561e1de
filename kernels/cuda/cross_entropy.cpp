// cross_entropy_rows and cross_entropy_rows_backward on CUDA (Note [Fused cross-entropy]):
// the CPU's checks (plan_cross_entropy_rows), contiguous inputs, the outputs, and the
// launch of the device kernels (cross_entropy.cu). The targets are checked on the device:
// a bad one raises mixt::Error at the next wait for the device (Note [Device-side errors]).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/cuda/cross_entropy_launch.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {
namespace {

// The inputs both kernels read, made contiguous (kept alive while the kernels are queued:
// the caching allocator orders their reuse on the stream), and the launch arguments.
struct Prepared {
  Tensor x, target, weight, sum_w;
  CrossEntropyArgs args;
};

Prepared prepare(const OpCall& c, const CrossEntropyRowsPlan& p) {
  const Tensor& logits = c.in[p.logits];
  MIXT_CHECK_OP(logits.is_cuda(), c, "the CUDA kernel got a tensor on {}", logits.device());
  const auto& at = c.attrs.get<attrs::CrossEntropy>();
  Prepared r;
  r.x = contiguous(logits);
  r.target = contiguous(c.in[p.target]);
  CrossEntropyArgs& a = r.args;
  a.rows = p.rows;
  a.classes = p.classes;
  a.logits = r.x.data_ptr();
  a.target = r.target.data_ptr();
  if (p.weight >= 0) {
    r.weight = contiguous(c.in[p.weight]);
    a.weight = r.weight.data_ptr();
    // W, read only with label smoothing: one double the launcher's first kernel writes.
    if (at.label_smoothing > 0) {
      r.sum_w = make_empty({}, kFloat64, logits.device());
      a.sum_w = r.sum_w.data_ptr<double>();
    }
  }
  a.ignore_index = at.ignore_index;
  a.label_smoothing = at.label_smoothing;
  a.dtype = p.logits_dtype;
  a.target_dtype = r.target.dtype();
  a.error = device_error_word(logits.device().index());
  return r;
}

// Hands `t` back as output i (copied into a given output).
void set_output(OpCall& c, size_t i, const Tensor& t) {
  if (c.out[i].defined()) c.out[i].copy_(t);
  else c.out[i] = t;
}

// Launches `launch(args, stream)` on the logits' device and current stream.
template <class Launch>
void run(const OpCall& c, const Prepared& r, Launch&& launch) {
  if (r.args.rows == 0) return;
  const int index = r.x.device().index();
  DeviceGuard guard(index, op_name(c.op).data());
  check(launch(r.args, current_native_stream(index)), op_name(c.op).data());
}

void cross_entropy_rows_kernel(OpCall& c, DispatchKeySet) {
  const CrossEntropyRowsPlan p = plan_cross_entropy_rows(c);
  Prepared r = prepare(c, p);
  const Tensor loss = make_empty({p.rows}, p.acc_dtype, r.x.device());
  const Tensor lse = make_empty({p.rows}, p.acc_dtype, r.x.device());
  r.args.loss = loss.data_ptr();
  r.args.lse = lse.data_ptr();
  run(c, r, launch_cross_entropy_rows);
  set_output(c, 0, loss);
  set_output(c, 1, lse);
}

void cross_entropy_rows_backward_kernel(OpCall& c, DispatchKeySet) {
  const CrossEntropyRowsPlan p = plan_cross_entropy_rows(c);
  Prepared r = prepare(c, p);
  const Tensor grad_loss = contiguous(c.in[p.grad]), lse = contiguous(c.in[p.lse]);
  const Tensor gx = make_empty({p.rows, p.classes}, p.logits_dtype, r.x.device());
  r.args.grad_loss = grad_loss.data_ptr();
  r.args.lse_in = lse.data_ptr();
  r.args.grad = gx.data_ptr();
  run(c, r, launch_cross_entropy_rows_backward);
  set_output(c, 0, gx);
}

}  // namespace

void register_cross_entropy_kernels() {
  register_kernel(OpId::cross_entropy_rows, DispatchKey::CUDA, cross_entropy_rows_kernel);
  register_kernel(OpId::cross_entropy_rows_backward, DispatchKey::CUDA, cross_entropy_rows_backward_kernel);
}

}  // namespace mixt::cuda
