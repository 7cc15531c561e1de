// The device conversion rules of kernels/cuda/convert.cuh, run on the host (the CUDA
// headers emulate the conversion instructions there), against the CPU storage types:
// every float pattern on a grid that includes each format's rounding ties, random
// patterns, and doubles. Needs no GPU; test_cuda_slice checks the real hardware.
#include <cstdio>
#include <cstring>
#include <random>

#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/cuda/convert.cuh>

namespace {

using namespace mixt;

long long g_checks = 0, g_failures = 0;

// True when a and b hold the same value: the same bits, or both NaN.
template <class T>
bool same(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return b != b;
    return std::memcmp(&a, &b, sizeof a) == 0;
  } else {
    const float fa = static_cast<float>(a), fb = static_cast<float>(b);
    if (fa != fa) return fb != fb && a.x == b.x;  // NaN patterns must match the CPU's too
    return a.x == b.x;
  }
}

// Checks the device rule for From -> To on value v against the CPU's convert<To>.
template <class To, class From>
void check(From v) {
  ++g_checks;
  const To want = convert<To>(v);
  const To got = cuda::fp_convert<To>(v);
  if (same(got, want)) return;
  if (++g_failures <= 20) {
    std::printf("FAIL: %s value %.10g: device %.10g, cpu %.10g\n", __PRETTY_FUNCTION__, static_cast<double>(v),
                static_cast<double>(static_cast<float>(got)), static_cast<double>(static_cast<float>(want)));
  }
}

// Every narrowing and widening conversion of one float value.
void check_float(float f) {
  check<Half>(f);
  check<BFloat16>(f);
  check<Float8_e4m3fn>(f);
  check<Float8_e5m2>(f);
  check<double>(f);
  check<float>(Half(f));
  check<Float8_e4m3fn>(Half(f));
  check<Float8_e5m2>(BFloat16(f));
  check<Half>(Float8_e5m2(f));
  check<BFloat16>(Float8_e4m3fn(f));
  check<float>(Float8_e4m3fn(f));
  check<double>(Float8_e5m2(f));
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

int main() {
  // The top 20 bits exhaustively; the low 12 at the ties and their neighbours of every
  // format (fp8 rounds at bit 19, float16 at bit 12, bfloat16 at bit 15).
  const uint32_t lows[] = {0x000, 0x001, 0x7ff, 0x800, 0x801, 0xfff};
  for (uint32_t hi = 0; hi < (1u << 20); ++hi)
    for (uint32_t lo : lows) check_float(from_bits((hi << 12) | lo));
  std::mt19937 rng(1234);
  for (int i = 0; i < 2000000; ++i) check_float(from_bits(static_cast<uint32_t>(rng())));
  // Doubles narrow through float.
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int i = 0; i < 200000; ++i) {
    const double d = normal(rng) * std::ldexp(1.0, static_cast<int>(i % 80) - 40);
    check<Half>(d);
    check<BFloat16>(d);
    check<Float8_e4m3fn>(d);
    check<Float8_e5m2>(d);
    check<float>(d);
  }
  const double edges[] = {65519.999, 65520.0, 464.0000001, 463.99999, 61439.9999, 61440.0, 1e300, -1e300, 1e-300};
  for (double d : edges) {
    check<Half>(d);
    check<Float8_e4m3fn>(d);
    check<Float8_e5m2>(d);
    check<float>(d);
  }
  std::printf("test_cuda_convert: %lld checks, %lld failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
