// CPU kernels of the grad scaler's two ops: the fused unscale + non-finite
// check over a list of gradients, and the scale update. See Note [Grad scaler].
#include <cmath>
#include <cstring>
#include <vector>

#include <omp.h>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/multi_tensor.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cpu {
namespace {

constexpr uint32_t kGradDtypes = dtypes::kStandardFloat;

// True when the bits of `v` encode Inf or NaN (exponent all ones): branch-free, vectorizable.
template <class T>
inline bool non_finite(const T& v) {
  if constexpr (std::is_same_v<T, float>) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return (b & 0x7f800000u) == 0x7f800000u;
  } else if constexpr (std::is_same_v<T, double>) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
  } else if constexpr (std::is_same_v<T, Half>) {
    return (v.x & 0x7c00u) == 0x7c00u;
  } else {
    return (v.x & 0x7f80u) == 0x7f80u;  // BFloat16
  }
}

// Unscales p[0, n) in place by `inv` (unless inv == 1) and returns whether any element was non-finite.
template <class T>
bool unscale_chunk(T* p, int64_t n, opmath_t<T> inv) {
  using M = opmath_t<T>;
  unsigned bad = 0;
  if (inv == M(1)) {
#pragma omp simd reduction(| : bad)
    for (int64_t i = 0; i < n; ++i) bad |= non_finite(p[i]);
    return bad != 0;
  }
  if constexpr (std::is_same_v<T, M>) {
#pragma omp simd reduction(| : bad)
    for (int64_t i = 0; i < n; ++i) {
      bad |= non_finite(p[i]);
      p[i] = p[i] * inv;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      bad |= non_finite(p[i]);
      p[i] = T(static_cast<M>(p[i]) * inv);
    }
  }
  return bad != 0;
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
  float& scale = *c.in[0].data_ptr<float>();
  int32_t& growth = *c.in[1].data_ptr<int32_t>();
  int32_t& hysteresis = *c.in[2].data_ptr<int32_t>();
  int64_t& skipped = *c.in[4].data_ptr<int64_t>();
  int64_t& floor_hits = *c.in[5].data_ptr<int64_t>();
  const auto& rule = c.attrs.get<attrs::ScaleUpdate>();
  const double growth_factor = rule.growth_factor, backoff = rule.backoff_factor;
  const double min_scale = rule.min_scale, max_scale = rule.max_scale;
  const int64_t interval = rule.growth_interval, hysteresis_steps = rule.hysteresis;
  MIXT_CHECK_OP(std::isfinite(growth_factor) && growth_factor > 0 && std::isfinite(backoff) && backoff > 0 &&
                    min_scale >= 0 && min_scale <= max_scale && interval >= 1 && interval < (int64_t{1} << 31) &&
                    hysteresis_steps >= 1 && hysteresis_steps < (int64_t{1} << 31),
                c,
                "invalid rule: growth_factor {}, backoff_factor {}, min_scale {}, max_scale {}, growth_interval {}, "
                "hysteresis {}",
                growth_factor, backoff, min_scale, max_scale, interval, hysteresis_steps);
  if (found_inf != 0.0f) {
    ++skipped;
    growth = 0;
    hysteresis = hysteresis > 0 ? hysteresis - 1 : 0;
    if (hysteresis == 0) {  // the budget of tolerated overflows is spent: back off
      if (static_cast<double>(scale) <= min_scale) ++floor_hits;
      const double next = static_cast<double>(scale) * backoff;
      scale = static_cast<float>(next < min_scale ? min_scale : next);
    }
  } else {
    if (rule.consecutive_hysteresis) hysteresis = static_cast<int32_t>(hysteresis_steps);
    if (growth + 1 == interval) {  // exact equality, as PyTorch
      growth = 0;
      hysteresis = static_cast<int32_t>(hysteresis_steps);
      const auto next = static_cast<float>(static_cast<double>(scale) * growth_factor);
      if (std::isfinite(next)) scale = static_cast<double>(next) > max_scale ? static_cast<float>(max_scale) : next;
    } else {
      ++growth;
    }
  }
  c.out[0] = c.in[0];
}

}  // namespace

void register_amp_kernels() {
  register_kernel(OpId::amp_unscale_check_, DispatchKey::CPU, unscale_check_kernel);
  register_kernel(OpId::amp_update_scale_, DispatchKey::CPU, update_scale_kernel);
}

}  // namespace mixt::cpu
