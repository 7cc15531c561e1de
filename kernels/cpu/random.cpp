// uniform_, normal_ and random_ on the CPU. Every value comes from the per-element
// formulas of kernels/common/random_transforms.h, so the CUDA kernels can reproduce
// the stream from (seed, offset). Blocks are independent: both cores generate.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/random_checks.h>
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
      fill(blk, p + j * P, rng::block_lanes(j, n, P));
    }
  });
  if (!dst.is_same(self)) host::copy_into(self, dst, c);
}

// uniform_: values in [low, high).
void uniform_kernel(OpCall& c, DispatchKeySet) {
  const Tensor self = target(c);
  const double low = c.attrs.get<attrs::Uniform>().low, high = c.attrs.get<attrs::Uniform>().high;
  check_uniform(c, self, low, high);
  visit_dtype<dtypes::kFloating>(self.dtype(), "uniform_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    generate<T>(c, self,
                [=](const philox::Block& b, T* out, int lanes) { rng::uniform_block(b, out, lanes, low, high); });
  });
}

// normal_: mean + std * z with z standard normal (Box-Muller).
void normal_kernel(OpCall& c, DispatchKeySet) {
  const Tensor self = target(c);
  const double mean = c.attrs.get<attrs::Normal>().mean, sd = c.attrs.get<attrs::Normal>().std;
  check_normal(c, self, mean, sd);
  visit_dtype<dtypes::kFloating>(self.dtype(), "normal_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    generate<T>(c, self, [=](const philox::Block& b, T* out, int lanes) { rng::normal_block(b, out, lanes, mean, sd); });
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
    generate<T>(c, self,
                [=](const philox::Block& b, T* out, int lanes) { rng::random_block(b, out, lanes, low, range); });
  });
}

}  // namespace

void register_random_kernels() {
  register_kernel(OpId::uniform_, DispatchKey::CPU, uniform_kernel);
  register_kernel(OpId::normal_, DispatchKey::CPU, normal_kernel);
  register_kernel(OpId::random_, DispatchKey::CPU, random_kernel);
}

}  // namespace mixt::cpu
