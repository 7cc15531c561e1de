// uniform_, normal_ and random_ on the CPU. Every value comes from the per-element
// formulas of kernels/common/random_transforms.h, so the CUDA kernels can reproduce
// the stream from (seed, offset). Blocks are independent: both cores generate.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/random_transforms.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/generator.h>

namespace mixt::cpu {
namespace {

// The tensor an in-place random op writes (out[0], or in[0] when no output was given).
Tensor target(OpCall& c) {
  Tensor self = c.out[0].defined() ? c.out[0] : c.in[0];
  MIXT_CHECK_OP(self.is_cpu(), c, "the CPU kernel got a tensor on {}", self.device());
  return self;
}

// Largest finite value of floating storage type T.
template <class T>
double finite_max() {
  if constexpr (std::is_same_v<T, double>) return DBL_MAX;
  else if constexpr (std::is_same_v<T, float>) return FLT_MAX;
  else if constexpr (std::is_same_v<T, Half>) return 65504.0;
  else if constexpr (std::is_same_v<T, BFloat16>) return static_cast<float>(BFloat16::from_bits(0x7f7f));
  else if constexpr (std::is_same_v<T, Float8_e4m3fn>) return 448.0;
  else return 57344.0;  // Float8_e5m2
}

// Fills `self` in row-major order: block j of the reservation gives elements
// [j * P, j * P + P), written by fill(block, dst, lanes). Non-contiguous tensors
// are generated into a contiguous temporary and copied.
template <class T, class F>
void generate(OpCall& c, const Tensor& self, F&& fill) {
  c.out[0] = self;
  const int64_t n = self.numel();
  if (n == 0) return;
  check_writable(c, self, "the tensor");
  constexpr int P = rng::per_block<T>();
  const auto blocks = static_cast<int64_t>(rng::blocks_needed(n, P));
  Generator& gen = c.attrs.generator ? *c.attrs.generator : default_generator();
  const Generator::Reservation r = gen.reserve(static_cast<uint64_t>(blocks));
  const Tensor dst = self.is_contiguous() ? self : make_empty(self.sizes(), self.dtype(), self.device());
  T* p = static_cast<T*>(dst.data_ptr());
  parallel_for(blocks, std::max<int64_t>(1, kParallelGrain / (4 * P)), [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const philox::Block blk = philox::generate(r.seed, r.offset + static_cast<uint64_t>(j));
      fill(blk, p + j * P, static_cast<int>(std::min<int64_t>(P, n - j * P)));
    }
  });
  if (!dst.is_same(self)) host::copy_into(self, dst, c);
}

// uniform_: values in [low, high).
void uniform_kernel(OpCall& c, DispatchKeySet) {
  const Tensor self = target(c);
  const double low = c.attrs.get<attrs::Uniform>().low, high = c.attrs.get<attrs::Uniform>().high;
  MIXT_CHECK_OP(std::isfinite(low) && std::isfinite(high), c, "expects finite bounds, got [{}, {})", low, high);
  MIXT_CHECK_OP(low <= high, c, "expects from <= to, got from={} > to={}", low, high);
  check_random_fill(c, self);
  visit_dtype<dtypes::kFloating>(self.dtype(), "uniform_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const double max = finite_max<T>();
    MIXT_CHECK_OP(low >= -max && high <= max && high - low <= max, c,
                  "bounds [{}, {}) and their difference must be within the range of {} (+-{})", low, high,
                  self.dtype(), max);
    generate<T>(c, self, [=](const philox::Block& b, T* out, int lanes) {
      for (int l = 0; l < lanes; ++l) {
        if constexpr (rng::per_block<T>() == 2) out[l] = rng::uniform_value<T>(rng::uniform64(b, l), low, high);
        else out[l] = rng::uniform_value<T>(rng::uniform32(b, l), low, high);
      }
    });
  });
}

// normal_: mean + std * z with z standard normal (Box-Muller).
void normal_kernel(OpCall& c, DispatchKeySet) {
  const Tensor self = target(c);
  const double mean = c.attrs.get<attrs::Normal>().mean, sd = c.attrs.get<attrs::Normal>().std;
  MIXT_CHECK_OP(sd >= 0.0, c, "expects std >= 0.0, got {}", sd);
  MIXT_CHECK_OP(std::isfinite(mean) && std::isfinite(sd), c, "expects a finite mean and std, got {} and {}", mean, sd);
  check_random_fill(c, self);
  visit_dtype<dtypes::kFloating>(self.dtype(), "normal_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    generate<T>(c, self, [=](const philox::Block& b, T* out, int lanes) {
      double z[4] = {};
      if constexpr (rng::per_block<T>() == 2) {
        rng::box_muller(rng::uniform64(b, 0), rng::uniform64(b, 1), &z[0], &z[1]);
      } else {
        rng::box_muller(rng::uniform32(b, 0), rng::uniform32(b, 1), &z[0], &z[1]);
        if (lanes > 2) rng::box_muller(rng::uniform32(b, 2), rng::uniform32(b, 3), &z[2], &z[3]);
      }
      for (int l = 0; l < lanes; ++l) out[l] = convert<T>(mean + sd * z[l]);
    });
  });
}

// random_: integers in [low, high), stored in any dtype that holds them exactly.
void random_kernel(OpCall& c, DispatchKeySet) {
  const Tensor self = target(c);
  const int64_t low = c.attrs.get<attrs::RandomInts>().low, high = c.attrs.get<attrs::RandomInts>().high;
  check_random_range(c, low, high, self.dtype());
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  visit_dtype(self.dtype(), "random_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    generate<T>(c, self, [=](const philox::Block& b, T* out, int lanes) {
      for (int l = 0; l < lanes; ++l) {
        if constexpr (rng::per_block<T>() == 2) out[l] = convert<T>(rng::randint64(b, l, low, range));
        else out[l] = convert<T>(rng::randint32(b, l, low, range));
      }
    });
  });
}

}  // namespace

void register_random_kernels() {
  register_kernel(OpId::uniform_, DispatchKey::CPU, uniform_kernel);
  register_kernel(OpId::normal_, DispatchKey::CPU, normal_kernel);
  register_kernel(OpId::random_, DispatchKey::CPU, random_kernel);
}

}  // namespace mixt::cpu
