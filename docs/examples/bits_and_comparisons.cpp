// Bit-cast views and comparisons: reading a tensor's bytes as another dtype, and
// comparing tensors elementwise (operators) or whole (equal). It checks what it
// prints and exits with 1 when a value is wrong.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <mixt/mixt.h>

#include "example_support.h"

int main() {
  using namespace mixt;
  using example::require;

  // ---- view(dtype): the same bytes, another dtype (no copy, no conversion) ----
  const Tensor x = from_vector(std::vector<float>{1.0f, -2.0f, 0.5f});
  const Tensor bits = x.view(kInt32);  // same element size: same shape
  std::printf("float32 1.0 has the bits 0x%08x\n", static_cast<unsigned>(bits.to_vector<int32_t>()[0]));
  require(bits.to_vector<int32_t>()[0] == 0x3f800000 && bits.shares_storage(x), "float32 bits");
  const Tensor bytes = x.view(kUInt8);  // smaller elements: the last dim grows, [3] -> [12]
  require(bytes.sizes() == Shape{12} && bytes.to_vector<int>()[3] == 0x3f, "float32 bytes (little-endian)");
  // Larger elements: eight float8 values travel as two int64 words, and come back unchanged.
  const Tensor q = from_vector(std::vector<float>{0.5f, 1, 2, 448, -3, 0, 0.25f, 7}).to(kFloat8_e4m3fn);
  const Tensor words = q.view(kInt64);  // [8] -> [1]
  require(words.sizes() == Shape{1}, "eight bytes make one int64");
  require(equal(words.view(kFloat8_e4m3fn), q), "the round trip gives back the float8 values");
  // Refused when the bytes do not regroup: three float32 are not whole float64s.
  std::string why;
  try {
    x.view(kFloat64);
  } catch (const Error& e) {
    why = e.what();
  }
  std::printf("x.view(kFloat64): %s\n", why.c_str());
  require(!why.empty(), "an odd last dimension cannot be viewed as float64");

  // ---- comparisons: operators give bool tensors, equal() gives a bool ----
  const Tensor t = arange(6).view({2, 3});
  const Tensor big = t > 2;  // bool [2, 3]
  require(big.dtype() == kBool && big.sum().item<int64_t>() == 3, "t > 2");
  // (from_vector makes CPU tensors; equal() compares tensors of one device)
  require(equal(where(t >= 4, t, zeros_like(t)), from_vector(std::vector<int64_t>{0, 0, 0, 0, 4, 5}, {2, 3}).to(t.device())),
          "where(t >= 4, t, 0)");
  require(all(1 <= t + 1).item<bool>() && any(t == 5).item<bool>(), "a scalar on either side");
  // equal: same shape and values; dtypes may differ (compared after promotion, as eq does).
  require(equal(t, t.to(kFloat32)), "int64 and float32 tensors of the same values are equal");
  require(!equal(t, t.view({6})), "shapes must match: equal() does not broadcast");
  std::printf("t > 2:\n%s\n", big.str().c_str());
  return 0;
}
