// The vector loops of the fused optimizer steps and of the grad scaler's unscale + check
// (kernels/cpu/vec/optim_lanes.h) against the scalar per-element functions they mirror
// (kernels/common/optim_math.h, amp_math.h; the CUDA kernels use the same ones): the same
// bits on every instruction set this machine has, for float, Half and BFloat16 storage,
// lengths that leave every tail size, and values that include Inf, NaN, subnormals,
// signed zeros and overflowing squares.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/kernels/common/amp_math.h>
#include <mixt/kernels/common/optim_math.h>
#include <mixt/kernels/cpu/vec/isa.h>
#include <mixt/kernels/cpu/vec/optim_lanes.h>
#include <mixt/runtime/float_types.h>

using namespace mixt;
using namespace mixt::cpu::vec;

namespace {

std::vector<Isa> supported_isas() {
  std::vector<Isa> v;
  for (int i = 0; i < kIsaCount; ++i)
    if (isa_supported(static_cast<Isa>(i))) v.push_back(static_cast<Isa>(i));
  return v;
}

// Restores the default instruction set when a test ends, passed or not.
struct IsaGuard {
  explicit IsaGuard(Isa isa) { set_isa_for_testing(isa); }
  ~IsaGuard() { set_isa_for_testing(std::nullopt); }
};

// Values of every kind: mostly moderate ones of both signs, then zeros, subnormals,
// huge ones (whose squares overflow), infinities and NaNs.
std::vector<float> values(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::uniform_int_distribution<int> kind(0, 39);
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f, -0.0f, 1e-40f, -3e-39f, 1e30f, -2e25f, inf, -inf,
                            std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::max()};
  std::vector<float> v(n);
  for (float& x : v) {
    const int k = kind(rng);
    x = k < 10 ? specials[k] : normal(rng);
  }
  return v;
}

template <class T>
std::vector<T> stored(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <class T>
uint32_t bits_of(const T& x) {
  uint32_t u = 0;
  std::memcpy(&u, &x, sizeof x);
  return u;
}
template <class T>
bool is_nan(const T& x) {
  return std::isnan(static_cast<float>(x));
}

// Same bits, or both NaN (a NaN's payload is not promised: the scalar code's operand
// order is the compiler's choice). float16 and bfloat16 store every NaN as one code.
template <class T>
void require_same(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = bits_of(got[i]) == bits_of(want[i]) || (is_nan(got[i]) && is_nan(want[i]));
    if (!same) {
      INFO(what << "[" << i << "] of " << got.size() << ": got " << static_cast<float>(got[i]) << " want "
                << static_cast<float>(want[i]));
      REQUIRE(same);
    }
  }
}

const size_t kLengths[] = {0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 1000, 1031};

}  // namespace

TEMPLATE_TEST_CASE("optimizer vector loops: the bits of optim_math's scalar updates on every instruction set",
                   "[vec][optim]", float, Half, BFloat16) {
  using P = TestType;
  const optim_math::AdamStepScalars s = optim_math::adam_step_scalars(1e-2, 0.9, 0.999, 3.0);
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    INFO("instruction set " << isa_name(isa));
    for (size_t n : kLengths) {
      INFO("n = " << n);
      const auto p0 = stored<P>(values(n, 1, 1.0f)), g0 = stored<P>(values(n, 2, 0.1f));
      const auto m0 = values(n, 3, 0.1f), v0 = values(n, 4, 0.01f), vmax0 = values(n, 5, 0.01f);
      for (int variant = 0; variant < 4; ++variant) {
        const bool l2 = variant & 1, ams = variant & 2;
        const auto k = optim_math::adam_consts<float>(s, 1e-2, 0.9, 0.999, 1e-8, 0.1, !l2);
        auto p = p0, rp = p0;
        auto m = m0, v = v0, vmax = vmax0, rm = m0, rv = v0, rvmax = vmax0;
        adam_lanes(p.data(), g0.data(), m.data(), v.data(), vmax.data(), n, k, l2, ams);
        for (size_t i = 0; i < n; ++i) {
          const auto j = static_cast<int64_t>(i);
          if (l2) ams ? optim_math::adam_update<true, true>(rp.data(), g0.data(), rm.data(), rv.data(), rvmax.data(), j, k)
                      : optim_math::adam_update<true, false>(rp.data(), g0.data(), rm.data(), rv.data(), rvmax.data(), j, k);
          else ams ? optim_math::adam_update<false, true>(rp.data(), g0.data(), rm.data(), rv.data(), rvmax.data(), j, k)
                   : optim_math::adam_update<false, false>(rp.data(), g0.data(), rm.data(), rv.data(), rvmax.data(), j, k);
        }
        INFO("adam, l2 " << l2 << ", amsgrad " << ams);
        require_same(p, rp, "param");
        require_same(m, rm, "exp_avg");
        require_same(v, rv, "exp_avg_sq");
        require_same(vmax, rvmax, "max_exp_avg_sq");
      }
      for (int variant = 0; variant < 8; ++variant) {
        const bool l2 = variant & 1, init = variant & 2, nesterov = variant & 4;
        for (bool momentum : {false, true}) {
          if (nesterov && !momentum) continue;
          const auto k = optim_math::sgd_consts<float>(0.05, 0.9, nesterov ? 0.0 : 0.1, 0.01);
          auto p = p0, rp = p0;
          auto buf = m0, rbuf = m0;
          sgd_lanes(p.data(), g0.data(), buf.data(), n, init, k, l2, momentum, nesterov);
          for (size_t i = 0; i < n; ++i) {
            const auto j = static_cast<int64_t>(i);
            if (!momentum) l2 ? optim_math::sgd_update<true, false, false>(rp.data(), g0.data(), rbuf.data(), j, init, k)
                              : optim_math::sgd_update<false, false, false>(rp.data(), g0.data(), rbuf.data(), j, init, k);
            else if (nesterov) l2 ? optim_math::sgd_update<true, true, true>(rp.data(), g0.data(), rbuf.data(), j, init, k)
                                  : optim_math::sgd_update<false, true, true>(rp.data(), g0.data(), rbuf.data(), j, init, k);
            else l2 ? optim_math::sgd_update<true, true, false>(rp.data(), g0.data(), rbuf.data(), j, init, k)
                    : optim_math::sgd_update<false, true, false>(rp.data(), g0.data(), rbuf.data(), j, init, k);
          }
          INFO("sgd, l2 " << l2 << ", init " << init << ", momentum " << momentum << ", nesterov " << nesterov);
          require_same(p, rp, "param");
          require_same(buf, rbuf, "momentum_buffer");
        }
      }
    }
  }
}

TEMPLATE_TEST_CASE("unscale + check vector loop: amp_math's bits and flag on every instruction set", "[vec][amp]",
                   float, Half, BFloat16) {
  using T = TestType;
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    INFO("instruction set " << isa_name(isa));
    for (size_t n : kLengths) {
      INFO("n = " << n);
      std::vector<float> finite = values(n, 7, 1000.0f);
      for (float& x : finite)
        if (!std::isfinite(x)) x = 3.0f;
      for (float inv : {1.0f, 1.0f / 65536.0f, 0.7f, 3e-39f}) {
        INFO("inv_scale " << inv);
        // All finite, then one non-finite value at each position of interest (vector body and tail).
        std::vector<std::vector<float>> cases = {finite};
        for (size_t at : {size_t{0}, n / 2, n - 1})
          for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()})
            if (at < n) {
              cases.push_back(finite);
              cases.back()[at] = bad;
            }
        for (const auto& c : cases) {
          auto x = stored<T>(c), ref = x;
          const bool found = unscale_check_lanes(x.data(), n, inv);
          bool want = false;
          for (T& r : ref) {
            want |= amp_math::non_finite(r);
            if (inv != 1.0f) r = amp_math::unscale(r, static_cast<opmath_t<T>>(inv));
          }
          CHECK(found == want);
          require_same(x, ref, "gradient");
        }
      }
    }
  }
}
