// Tensor helpers of the CUDA test programs (own main, no Catch2): the dtypes they sweep,
// seeded random inputs made on the CPU, and the bitwise comparison with the CPU's result
// (counted by gpu_checks.h's expect()).
#pragma once

#include <cstring>
#include <string>

#include <mixt/mixt.h>

#include "gpu_checks.h"

namespace mixt::testing {

inline const ScalarType kAll[] = {kBool,    kUInt8,   kInt8,    kInt32,         kInt64,      kFloat16,
                                  kBFloat16, kFloat32, kFloat64, kFloat8_e4m3fn, kFloat8_e5m2};

inline std::string name(ScalarType t) { return std::string(dtype_name(t)); }

// Values of `dt` in [lo, hi] (integers: whole numbers; bool: random), on the CPU.
inline Tensor values(ScalarType dt, const Shape& shape, double lo, double hi, uint64_t seed) {
  Generator gen(seed);
  if (dt == kBool) return randint(0, 2, shape, {}, &gen).to(kBool);
  if (!is_floating(dt)) return randint(static_cast<int64_t>(lo), static_cast<int64_t>(hi) + 1, shape, {}, &gen).to(dt);
  return add(mul(rand(shape, {.dtype = kFloat64}, &gen), hi - lo), lo).to(dt);
}

// The same dtype, shape and bytes (both brought to the CPU, contiguous).
inline void expect_same_bits(const Tensor& got_any, const Tensor& want_any, const std::string& what) {
  const Tensor got = got_any.cpu().contiguous(), want = want_any.contiguous();
  if (got.dtype() != want.dtype() || got.sizes() != want.sizes()) {
    expect(false, what + ": got " + got.describe() + ", expected " + want.describe());
    return;
  }
  const int64_t es = want.element_size();
  const auto* g = static_cast<const unsigned char*>(got.data_ptr());
  const auto* w = static_cast<const unsigned char*>(want.data_ptr());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i)
    if (std::memcmp(g + i * es, w + i * es, static_cast<size_t>(es)) != 0 && bad++ == 0) first = i;
  expect(bad == 0, what + ": " + std::to_string(bad) + " elements differ from the CPU's, the first at " +
                       std::to_string(first));
}

}  // namespace mixt::testing
