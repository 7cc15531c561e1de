// Casts between float32 and float16 / bfloat16 through the vector conversions (kernels/cpu/copy.cpp),
// and float16 / bfloat16 GEMMs through widened operands with the parameter cache
// (kernels/cpu/gemm_widening.h, Note [GEMM widening cache]).
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <omp.h>

#include <mixt/kernels/cpu/gemm_widening.h>
#include <mixt/kernels/cpu/vec/isa.h>
#include <mixt/mixt.h>

using namespace mixt;
namespace F = mixt::nn::functional;
using mixt::autograd::NoGradGuard;

namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// Special values, their neighbours and the rounding boundaries of both narrow types, then random bit patterns.
std::vector<float> cast_inputs(size_t n) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), from_bits(0x7f800001u),
                          from_bits(0xffc12345u), std::numeric_limits<float>::denorm_min(), 1e-40f, -1e-40f,
                          65504.0f, 65519.99f, 65520.0f, -65520.0f, 6.1e-5f, 5.96e-8f, 2.98e-8f, 2.99e-8f,
                          3.3895314e38f, std::numeric_limits<float>::max(), 1.0f + 0x1p-8f, 1.0f + 0x1p-11f,
                          1.0f + 3 * 0x1p-9f, from_bits(0x3f808000u), from_bits(0x3f818000u), from_bits(0x3f807fffu)};
  std::mt19937 gen(23);
  while (v.size() < n) v.push_back(from_bits(static_cast<uint32_t>(gen())));
  v.resize(n);
  return v;
}

const uint16_t* bits16(const Tensor& t) { return static_cast<const uint16_t*>(t.data_ptr()); }

// The bits `t` (float32 values `x`) cast to `dtype` must have: the scalar conversion's.
void check_narrowing(const Tensor& cast, const std::vector<float>& x) {
  REQUIRE(cast.is_contiguous());
  const uint16_t* got = bits16(cast);
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t want = cast.dtype() == kBFloat16 ? BFloat16(x[i]).x : Half(x[i]).x;
    if (got[i] != want) FAIL_CHECK("element " << i << " of " << x.size() << ": " << got[i] << " != " << want);
  }
}

}  // namespace

TEST_CASE("casts float32 -> bfloat16 / float16 give the scalar conversion's bits, every length and layout") {
  const auto isa = GENERATE(cpu::vec::Isa::Scalar, cpu::vec::Isa::Sse4, cpu::vec::Isa::Avx2, cpu::vec::Isa::Avx512);
  if (!cpu::vec::isa_supported(isa)) return;
  cpu::vec::set_isa_for_testing(isa);
  for (const ScalarType dtype : {kBFloat16, kFloat16}) {
    INFO(cpu::vec::isa_name(isa) << " " << dtype);
    for (const size_t n : {size_t{1}, size_t{7}, size_t{17}, size_t{26}, size_t{1000}, size_t{(1 << 17) + 5}}) {
      const std::vector<float> x = cast_inputs(n);
      const Tensor src = from_vector(x, {static_cast<int64_t>(n)});
      check_narrowing(src.to(dtype), x);  // `to`
      Tensor dst = empty({static_cast<int64_t>(n)}, {.dtype = dtype});
      dst.copy_(src);  // copy_ into a preallocated tensor
      check_narrowing(dst, x);
    }
    // Strided sources (the scalar loop) and a transposed one agree with the scalar bits too.
    const std::vector<float> x = cast_inputs(2 * 301 * 7);
    const Tensor m = from_vector(x, {602, 7});
    const Tensor every_other = m.slice(0, 0, 602, 2);
    const Tensor t = m.t();
    for (const Tensor& src : {every_other, t}) {
      const Tensor ref = src.contiguous();
      const float* rx = static_cast<const float*>(ref.data_ptr());
      check_narrowing(src.to(dtype).contiguous(), std::vector<float>(rx, rx + ref.numel()));
    }
  }
  cpu::vec::set_isa_for_testing(std::nullopt);
}

TEST_CASE("casts bfloat16 / float16 -> float32 give the scalar widening's bits for every code, contiguous or not") {
  const auto isa = GENERATE(cpu::vec::Isa::Scalar, cpu::vec::Isa::Avx2, cpu::vec::Isa::Avx512);
  if (!cpu::vec::isa_supported(isa)) return;
  cpu::vec::set_isa_for_testing(isa);
  for (const ScalarType dtype : {kBFloat16, kFloat16}) {
    std::vector<Half> halves;
    std::vector<BFloat16> bfloats;
    for (uint32_t h = 0; h < 65536; ++h) {  // every 16-bit pattern once
      halves.push_back(Half::from_bits(static_cast<uint16_t>(h)));
      bfloats.push_back(BFloat16::from_bits(static_cast<uint16_t>(h)));
    }
    const Tensor codes = dtype == kBFloat16 ? from_vector(bfloats, {65536}) : from_vector(halves, {65536});
    for (const Tensor& src : {codes, codes.slice(0, 1, 65536, 3)}) {
      const Tensor wide = src.to(kFloat32);
      const Tensor bits = src.contiguous();
      REQUIRE(wide.numel() == bits.numel());
      const uint32_t* got = static_cast<const uint32_t*>(wide.data_ptr());
      for (int64_t i = 0; i < wide.numel(); ++i) {
        const uint16_t h = bits16(bits)[i];
        const float f = dtype == kBFloat16 ? static_cast<float>(BFloat16::from_bits(h)) : static_cast<float>(Half::from_bits(h));
        uint32_t want;
        std::memcpy(&want, &f, sizeof want);
        if (got[i] != want) FAIL_CHECK(dtype << " code " << h << ": " << got[i] << " != " << want);
      }
    }
  }
  cpu::vec::set_isa_for_testing(std::nullopt);
}

namespace {

// mm of narrow operands as the widened-then-sgemm reference computes it: float32 product, one rounding.
Tensor reference_mm(const Tensor& a, const Tensor& b) { return mm(a.to(kFloat32), b.to(kFloat32)).to(a.dtype()); }

bool same_bits(const Tensor& x, const Tensor& y) {
  return x.sizes() == y.sizes() && x.dtype() == y.dtype() &&
         std::memcmp(x.contiguous().data_ptr(), y.contiguous().data_ptr(), static_cast<size_t>(x.nbytes())) == 0;
}

}  // namespace

TEST_CASE("float16 / bfloat16 mm, addmm, linear equal the widened float32 product rounded once") {
  for (const ScalarType dtype : {kBFloat16, kFloat16}) {
    for (const int64_t n : {int64_t{1}, int64_t{37}, int64_t{300}}) {
      INFO(dtype << " n " << n);
      const Tensor a = randn({n, 129}).to(dtype), b = randn({129, 65}).to(dtype);
      CHECK(same_bits(mm(a, b), reference_mm(a, b)));
      CHECK(same_bits(mm(a, b.t().contiguous().t()), reference_mm(a, b)));  // transposed operand
      const Tensor bias = randn({65}).to(dtype);
      CHECK(same_bits(addmm(bias, a, b, 0.5, 2.0),
                      addmm(bias.to(kFloat32), a.to(kFloat32), b.to(kFloat32), 0.5, 2.0).to(dtype)));
      const Tensor w = randn({65, 129}).to(dtype);
      CHECK(same_bits(F::linear(a, w), reference_mm(a, w.t())));
    }
  }
}

// Products split over the threads by rows take the fused region of Note [Fused widening]
// (widen, multiply, round, per thread); smaller ones, and one thread, the separate passes.
// Both must give the widened float32 product's bits, rounded once.
TEST_CASE("float16 / bfloat16 products in the fused widening region have the unfused bits") {
  const int saved_threads = omp_get_max_threads();
  for (const ScalarType dtype : {kBFloat16, kFloat16}) {
    for (const int64_t n : {int64_t{64}, int64_t{515}}) {
      INFO(dtype << " n " << n);
      const Tensor a = randn({n, 257}).to(dtype), b = randn({257, 301}).to(dtype);
      const Tensor w = randn({301, 257}).to(dtype).set_requires_grad(true);  // a cached parameter, transposed by linear
#if defined(__SANITIZE_THREAD__)
      // ThreadSanitizer cannot see libgomp's barriers (Note [ThreadSanitizer job]): one thread.
      for (const int threads : {1}) {
#else
      for (const int threads : {2, 1, 2}) {
#endif
        INFO(threads << " threads");
        omp_set_num_threads(threads);
        // The references on as many threads: OpenBLAS's bits depend on how the rows are split.
        const Tensor want = reference_mm(a, b), want_linear = reference_mm(a, w.detach().t());
        const Tensor want_f32 = mm(a.to(kFloat32), b.to(kFloat32));
        CHECK(same_bits(mm(a, b), want));
        CHECK(same_bits(mm(a, b, kFloat32), want_f32));  // accumulates in the output, nothing to round
        NoGradGuard no_grad;
        CHECK(same_bits(F::linear(a, w), want_linear));
        CHECK(same_bits(F::linear(a, w), want_linear));  // the parameter's cached copy
      }
    }
  }
  omp_set_num_threads(saved_threads);
}

TEST_CASE("the widening cache serves a parameter's copy until the parameter changes") {
  gemm::clear_widening_cache();
  gemm::set_widening_cache_limit(gemm::kDefaultWideningCacheBytes);
  gemm::reset_widening_cache_stats();
  CHECK_THROWS_AS(gemm::set_widening_cache_limit(-1), Error);
  Tensor w = randn({64, 96}).to(kBFloat16);
  w.requires_grad_();
  const Tensor x = randn({8, 96}).to(kBFloat16);
  NoGradGuard no_grad;
  const Tensor y1 = F::linear(x, w);
  CHECK(gemm::widening_cache_stats().misses == 1);
  CHECK(gemm::widening_cache_stats().entries == 1);
  CHECK(same_bits(F::linear(x, w), y1));
  CHECK(gemm::widening_cache_stats().hits == 1);
  CHECK(same_bits(mm(x, w.t()), y1));  // a view made outside the op is no parameter: widened anew
  CHECK(gemm::widening_cache_stats().hits == 1);
  SECTION("an in-place change is seen at once") {
    w.mul_(2.0);
    const Tensor y2 = F::linear(x, w);
    CHECK(same_bits(y2, reference_mm(x, w.detach().t())));
    CHECK_FALSE(same_bits(y2, y1));
    CHECK(gemm::widening_cache_stats().entries == 1);  // the stale copy was dropped
    w.detach().narrow(0, 3, 1).fill_(0.5);  // through a view of it
    CHECK(same_bits(F::linear(x, w), reference_mm(x, w.detach().t())));
  }
  SECTION("activations are never cached, and a cleared or disabled cache holds nothing") {
    const Tensor v = randn({96, 16}).to(kBFloat16);
    (void)mm(x, v);
    CHECK(gemm::widening_cache_stats().entries == 1);
    gemm::clear_widening_cache();
    CHECK(gemm::widening_cache_stats().entries == 0);
    CHECK(gemm::widening_cache_stats().bytes == 0);
    gemm::set_widening_cache_limit(0);
    CHECK(same_bits(F::linear(x, w), y1));
    CHECK(gemm::widening_cache_stats().entries == 0);
    gemm::set_widening_cache_limit(96 * 64 * 4);  // one copy fits, the next evicts it
    Tensor w2 = randn({64, 96}).to(kBFloat16);
    w2.requires_grad_();
    (void)F::linear(x, w);
    (void)F::linear(x, w2);
    CHECK(gemm::widening_cache_stats().entries == 1);
    CHECK(gemm::widening_cache_stats().bytes == 96 * 64 * 4);
  }
  gemm::set_widening_cache_limit(gemm::kDefaultWideningCacheBytes);
  gemm::clear_widening_cache();
}

TEST_CASE("the widening cache is shared safely by threads multiplying the same parameters") {
  gemm::clear_widening_cache();
  std::vector<Tensor> ws;
  for (int i = 0; i < 3; ++i) {
    ws.push_back(randn({32, 48}).to(kBFloat16));
    ws.back().requires_grad_();
  }
  const Tensor x = randn({4, 48}).to(kBFloat16);
  std::vector<Tensor> want;
  for (const Tensor& w : ws) want.push_back(reference_mm(x, w.detach().t()));
  std::atomic<int> wrong{0};
  auto worker = [&](int seed) {
    NoGradGuard no_grad;
    for (int r = 0; r < 200; ++r) {
      const size_t i = static_cast<size_t>(r + seed) % ws.size();
      if (!same_bits(F::linear(x, ws[i]), want[i])) ++wrong;
      if (seed == 0 && r % 17 == 0) gemm::clear_widening_cache();
      if (seed == 1 && r % 23 == 0) gemm::set_widening_cache_limit(r % 2 ? 32 * 48 * 4 : gemm::kDefaultWideningCacheBytes);
    }
  };
  std::thread t0(worker, 0), t1(worker, 1), t2(worker, 2);
  t0.join();
  t1.join();
  t2.join();
  CHECK(wrong.load() == 0);
  CHECK(gemm::widening_cache_stats().hits > 0);
  gemm::set_widening_cache_limit(gemm::kDefaultWideningCacheBytes);
  gemm::clear_widening_cache();
}
