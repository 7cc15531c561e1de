// CPU kernels of the grad scaler's two ops: the fused unscale + non-finite
// check over a list of gradients, and the scale update. See Note [Grad scaler].
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include <omp.h>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/amp_math.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/multi_tensor.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/kernels/cpu/vec/optim_lanes.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cpu {
namespace {

constexpr uint32_t kGradDtypes = dtypes::kStandardFloat;

// Unscales p[0, n) in place by `inv` (unless inv == 1) and returns whether any element
// was non-finite: float32 math in vector lanes (vec/optim_lanes.h), float64 here.
template <class T>
bool unscale_chunk(T* p, int64_t n, opmath_t<T> inv) {
  if constexpr (!std::is_same_v<T, double>) {
    return vec::unscale_check_lanes(p, static_cast<size_t>(n), inv);
  } else {
    unsigned bad = 0;
    if (inv == 1.0) {
#pragma omp simd reduction(| : bad)
      for (int64_t i = 0; i < n; ++i) bad |= amp_math::non_finite(p[i]);
      return bad != 0;
    }
#pragma omp simd reduction(| : bad)
    for (int64_t i = 0; i < n; ++i) {
      bad |= amp_math::non_finite(p[i]);
      p[i] = amp_math::unscale(p[i], inv);
    }
    return bad != 0;
  }
}

// A one-element float32 tensor's value (the flags and scales of the scaler).
float read_flag(const OpCall& c, int i, const char* what) {
  const Tensor& t = c.in[i];
  MIXT_CHECK_OP(t.defined() && t.dtype() == kFloat32 && t.numel() == 1 && t.device().is_cpu(), c,
                "{} must be a one-element float32 CPU tensor, got {}", what, t.defined() ? t.describe() : "undefined");
  return *t.data_ptr<float>();
}

// amp_unscale_check_: in0 found_inf (set to 1 when any element is non-finite, never
// cleared), in1 inv_scale; list: the gradients, multiplied in place by inv_scale.
void unscale_check_kernel(OpCall& c, DispatchKeySet) {
  read_flag(c, 0, "found_inf");
  const float inv = read_flag(c, 1, "inv_scale");
  for (size_t i = 0; i < c.list.size(); ++i) {
    const Tensor& g = c.list[i];
    MIXT_CHECK_OP(g.device().is_cpu(), c, "gradient {} is on {}, found_inf on cpu", i, g.device().str());
    check_unscale_gradient(c, i, g);
    check_writable(c, g, "a gradient");  // before any gradient is modified
  }
  // Dense gradients are processed in place; others through a contiguous copy written back.
  std::vector<Tensor> work(c.list.begin(), c.list.end()), strided;
  std::vector<size_t> strided_index;
  for (size_t i = 0; i < work.size(); ++i)
    if (!work[i].is_contiguous()) {
      strided_index.push_back(i);
      work[i] = host::contiguous(work[i], c);
    }
  const std::vector<Chunk> chunks = make_chunks(work);
  unsigned bad = 0;
  const int nt = threads_for(total_elements(chunks));
#pragma omp parallel for num_threads(nt) reduction(| : bad) schedule(static)
  for (int64_t k = 0; k < static_cast<int64_t>(chunks.size()); ++k) {
    const Chunk& ch = chunks[static_cast<size_t>(k)];
    visit_dtype<kGradDtypes>(work[ch.tensor].dtype(), "amp_unscale_check_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      bad |= unscale_chunk(work[ch.tensor].data_ptr<T>() + ch.begin, ch.end - ch.begin, static_cast<M>(inv));
    });
  }
  for (size_t i : strided_index) host::copy_into(c.list[i], work[i], c);  // the front end bumped the versions
  if (bad) *c.in[0].data_ptr<float>() = 1.0f;
  c.out[0] = c.in[0];
}

// amp_update_scale_: in0 scale, in1 growth_tracker (int32), in2 hysteresis_tracker
// (int32), in3 found_inf, in4 skipped steps (int64), in5 floor hits (int64), all one
// element, updated in place. Attributes: s0 growth_factor, s1 backoff_factor,
// s2 min_scale, s3 max_scale, i0 growth_interval, i1 hysteresis, flag
// consecutive_hysteresis.
void update_scale_kernel(OpCall& c, DispatchKeySet) {
  read_flag(c, 0, "scale");
  const float found_inf = read_flag(c, 3, "found_inf");
  const char* names[] = {"", "growth_tracker", "hysteresis_tracker", "", "skipped_steps", "floor_hits"};
  const ScalarType types[] = {kFloat32, kInt32, kInt32, kFloat32, kInt64, kInt64};
  for (int i : {1, 2, 4, 5}) {
    const Tensor& t = c.in[i];
    MIXT_CHECK_OP(t.defined() && t.dtype() == types[i] && t.numel() == 1 && t.device().is_cpu(), c,
                  "{} must be a one-element {} CPU tensor, got {}", names[i], types[i],
                  t.defined() ? t.describe() : "undefined");
  }
  const auto& rule = c.attrs.get<attrs::ScaleUpdate>();
  const amp_math::ScaleRuleValues r = checked_scale_rule(c, rule);
  amp_math::ScaleState s{*c.in[0].data_ptr<float>(), *c.in[1].data_ptr<int32_t>(), *c.in[2].data_ptr<int32_t>(),
                         *c.in[4].data_ptr<int64_t>(), *c.in[5].data_ptr<int64_t>()};
  amp_math::update_scale(s, found_inf != 0.0f, r);
  *c.in[0].data_ptr<float>() = s.scale;
  *c.in[1].data_ptr<int32_t>() = s.growth_tracker;
  *c.in[2].data_ptr<int32_t>() = s.hysteresis_tracker;
  *c.in[4].data_ptr<int64_t>() = s.skipped_steps;
  *c.in[5].data_ptr<int64_t>() = s.floor_hits;
  c.out[0] = c.in[0];
}

}  // namespace

void register_amp_kernels() {
  register_kernel(OpId::amp_unscale_check_, DispatchKey::CPU, unscale_check_kernel);
  register_kernel(OpId::amp_update_scale_, DispatchKey::CPU, update_scale_kernel);
}

}  // namespace mixt::cpu
