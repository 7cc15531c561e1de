// The CUDA cast rule of every dtype pair (cuda::fp_convert: kernels/common/convert.h
// with the conversion instructions of kernels/cuda/convert.cuh), run on the host (the CUDA
// headers emulate the instructions there), against the CPU's convert<To>: every value of
// the 8- and 16-bit sources, random patterns and edge values of the 32- and 64-bit ones.
// Needs no GPU (built when CUDA is enabled; no Catch2, like tests/cuda/test_cuda_convert.cu).
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/cuda/convert.cuh>

namespace {

using namespace mixt;

long long g_checks = 0, g_failures = 0;

template <class T>
uint64_t bits(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}

template <class T>
bool nan_value(T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) return v != v;
  return false;
}

// From -> To on every pattern, device rule against the CPU's.
template <class To, class From>
void check_pair(const std::vector<uint64_t>& patterns) {
  for (uint64_t p : patterns) {
    From v;
    std::memcpy(static_cast<void*>(&v), &p, sizeof v);
    ++g_checks;
    const To want = convert<To>(v), got = cuda::fp_convert<To>(v);
    if (bits(want) == bits(got) || (nan_value(want) && nan_value(got))) continue;
    if (++g_failures <= 20)
      std::printf("FAIL: %s -> %s, source bits 0x%llx: device 0x%llx, cpu 0x%llx\n", dtype_name(dtype_of<From>).data(),
                  dtype_name(dtype_of<To>).data(), static_cast<unsigned long long>(p),
                  static_cast<unsigned long long>(bits(got)), static_cast<unsigned long long>(bits(want)));
  }
}

// Calls f(T{}) for dtype t's storage type T (no library needed, unlike visit_dtype).
template <class F>
void with_type(ScalarType t, F&& f) {
  switch (t) {
#define MIXT_CASE(e, cpp, n, c, a) \
  case ScalarType::e: f(cpp{}); break;
    MIXT_FORALL_DTYPES(MIXT_CASE)
#undef MIXT_CASE
    default: break;
  }
}

}  // namespace

int main() {
  std::mt19937_64 rng(2024);
  for (int f = 0; f < kNumDtypes; ++f) {
    const auto from = static_cast<ScalarType>(f);
    const int64_t size = element_size(from);
    std::vector<uint64_t> patterns;
    if (from == kBool) {
      patterns = {0, 1};
    } else if (size <= 2) {
      for (uint64_t b = 0; b < (uint64_t{1} << (8 * size)); ++b) patterns.push_back(b);
    } else {
      for (int i = 0; i < 300000; ++i) patterns.push_back(size == 4 ? rng() & 0xffffffffu : rng());
      const double edges[] = {0.0, -0.0, 0.5, 2.5, -2.5, 255.5, 65504.0, 65519.999, 65520.0, 448.0, 464.0,
                              463.99999, 57344.0, 61439.9999, 61440.0, 3.4e38, 1e300, -1e300, 1e-300, 1e-45,
                              9.3e18, -9.3e18, std::numeric_limits<double>::infinity(),
                              std::numeric_limits<double>::quiet_NaN()};
      const int64_t ints[] = {0, 1, -1, 255, 256, -129, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN,
                              (int64_t{1} << 24) + 1, 65519, 65520, 2049, 449, 61441};
      for (double d : edges) {
        if (from == kFloat32) patterns.push_back(bits(static_cast<float>(d)));
        if (from == kFloat64) patterns.push_back(bits(d));
      }
      for (int64_t v : ints) {
        if (from == kInt32) patterns.push_back(bits(static_cast<int32_t>(v)));
        if (from == kInt64) patterns.push_back(bits(v));
      }
    }
    for (int t = 0; t < kNumDtypes; ++t) {
      with_type(from, [&](auto from_value) {
        with_type(static_cast<ScalarType>(t), [&](auto to_value) {
          check_pair<decltype(to_value), decltype(from_value)>(patterns);
        });
      });
    }
  }
  std::printf("test_cuda_cast_rules: %lld checks, %lld failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
