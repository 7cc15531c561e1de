// The grad scaler's ops on CUDA (Note [Grad scaler]): amp_unscale_check_ as multi-tensor
// launches (gradients grouped by dtype, chunks packed by kernels/common/multi_tensor_plan.h)
// that set the found_inf flag on the device, and amp_update_scale_ as one device thread.
// Neither reads anything back, so GradScaler::step_sync_free never waits for the GPU.
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/common/multi_tensor_checks.h>
#include <mixt/kernels/cuda/amp_launch.h>
#include <mixt/kernels/cuda/factory.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {
namespace {

// Checks that in[i] is a one-element tensor of `dtype` on `device` (`what` names it).
void check_state(const OpCall& c, int i, ScalarType dtype, const Device& device, const char* what) {
  const Tensor& t = c.in[i];
  MIXT_CHECK_OP(t.defined() && t.dtype() == dtype && t.numel() == 1 && t.device() == device, c,
                "{} must be a one-element {} tensor on {}, got {}", what, dtype, device,
                t.defined() ? t.describe() : "undefined");
}


void unscale_check_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& found = c.in[0];
  MIXT_CHECK_OP(found.defined() && found.is_cuda(), c, "the CUDA kernel got found_inf {}",
                found.defined() ? found.describe() : "undefined");
  const Device device = found.device();
  check_state(c, 0, kFloat32, device, "found_inf");
  check_state(c, 1, kFloat32, device, "inv_scale");
  for (size_t i = 0; i < c.list.size(); ++i) {
    const Tensor& g = c.list[i];
    MIXT_CHECK_OP(g.device() == device, c, "gradient {} is on {}, found_inf on {}", i, g.device(), device);
    check_unscale_gradient(c, i, g);
    check_writable(c, g, "a gradient");  // before any gradient is modified
  }
  DeviceGuard guard(device.index(), "amp_unscale_check_");
  const cudaStream_t stream = current_native_stream(device.index());
  // Dense gradients are processed in place; others through a contiguous copy written back.
  std::vector<Tensor> work(c.list.begin(), c.list.end());
  for (Tensor& w : work)
    if (!w.is_contiguous() && w.numel() > 0) {
      w = dense_copy(w, stream, "amp_unscale_check_");
    }
  for (ScalarType dtype : {kFloat16, kBFloat16, kFloat32, kFloat64}) {
    std::vector<int64_t> numels;
    std::vector<void*> data;
    for (const Tensor& w : work)
      if (w.dtype() == dtype) numels.push_back(w.numel()), data.push_back(w.data_ptr());
    UnscaleArgs a;
    a.found_inf = found.data_ptr<float>();
    a.inv_scale = c.in[1].data_ptr<float>();
    a.dtype = dtype;
    for (const mt::PlannedLaunch& l : mt::plan_launches(numels)) {
      mt::pack_chunks<1>(l, numels, [&](int, size_t t) { return data[t]; }, &a.chunks);
      check(launch_unscale_check(a, stream), "amp_unscale_check_");
    }
  }
  for (size_t i = 0; i < work.size(); ++i)
    if (!work[i].is_same(c.list[i])) move_elements(c.list[i], work[i], stream, "amp_unscale_check_");
  c.out[0] = c.in[0];
}

void update_scale_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& scale = c.in[0];
  MIXT_CHECK_OP(scale.defined() && scale.is_cuda(), c, "the CUDA kernel got scale {}",
                scale.defined() ? scale.describe() : "undefined");
  const Device device = scale.device();
  check_state(c, 0, kFloat32, device, "scale");
  check_state(c, 1, kInt32, device, "growth_tracker");
  check_state(c, 2, kInt32, device, "hysteresis_tracker");
  check_state(c, 3, kFloat32, device, "found_inf");
  check_state(c, 4, kInt64, device, "skipped_steps");
  check_state(c, 5, kInt64, device, "floor_hits");
  UpdateScaleArgs a;
  a.rule = checked_scale_rule(c, c.attrs.get<attrs::ScaleUpdate>());
  a.scale = c.in[0].data_ptr<float>();
  a.growth_tracker = c.in[1].data_ptr<int32_t>();
  a.hysteresis_tracker = c.in[2].data_ptr<int32_t>();
  a.found_inf = c.in[3].data_ptr<float>();
  a.skipped_steps = c.in[4].data_ptr<int64_t>();
  a.floor_hits = c.in[5].data_ptr<int64_t>();
  DeviceGuard guard(device.index(), "amp_update_scale_");
  check(launch_update_scale(a, current_native_stream(device.index())), "amp_update_scale_");
  c.out[0] = c.in[0];
}

}  // namespace

void register_amp_kernels() {
  register_kernel(OpId::amp_unscale_check_, DispatchKey::CUDA, unscale_check_kernel);
  register_kernel(OpId::amp_update_scale_, DispatchKey::CUDA, update_scale_kernel);
}

}  // namespace mixt::cuda
