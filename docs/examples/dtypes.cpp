// The narrow floating types: rounding, fp8 saturation, and type promotion. It checks
// the values it prints and exits with 1 when one is wrong.
#include <cmath>
#include <iostream>
#include <limits>

#include <mixt/mixt.h>

#include "example_support.h"

using namespace mixt;

int main() {
  Tensor v = from_vector(std::vector<float>{0.1f, 1.0f, 300.0f, 448.0f, 500.0f, 60000.0f, 70000.0f});
  // Round to nearest even in each format; e4m3fn saturates at ±448; e5m2 overflows to
  // Inf from 61440; float16 from 65520.
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<ScalarType, std::vector<double>>> expected = {
      {kFloat16, {0.0999755859375, 1, 300, 448, 500, 60000, inf}},
      {kBFloat16, {0.10009765625, 1, 300, 448, 500, 59904, 70144}},
      {kFloat8_e4m3fn, {0.1015625, 1, 288, 448, 448, 448, 448}},
      {kFloat8_e5m2, {0.09375, 1, 320, 448, 512, 57344, inf}},
  };
  for (const auto& [t, want] : expected) {
    std::cout << t << ": " << v.to(t).to(kFloat32) << "\n";
    example::require(v.to(t).to_vector<double>() == want, std::string(dtype_name(t)) + " rounding");
  }
  std::cout << "promote(float16, bfloat16) = " << promote_types(kFloat16, kBFloat16) << "\n";
  example::require(promote_types(kFloat16, kBFloat16) == kFloat32, "float16 and bfloat16 promote to float32");
  const ScalarType mixed = result_type({zeros({2}, {.dtype = kInt32}), wrapped_scalar(2.5)});
  std::cout << "int32 tensor + 2.5 -> " << mixed << "\n";
  example::require(mixed == kFloat32, "an int32 tensor and a float scalar give float32");
  // Every value type prints with << and formats with fmt, alike.
  const std::string line = fmt::format("{} on {} shaped {}, {:.3f} in bfloat16", kBFloat16, Device::cuda(1),
                                       Shape{2, 3}, BFloat16(0.1f));
  std::cout << line << "\n";
  example::require(line == "bfloat16 on cuda:1 shaped [2, 3], 0.100 in bfloat16", "fmt formats mixt's values");
  bool raised = false;
  try {
    promote_types(kFloat8_e4m3fn, kFloat32);
  } catch (const Error& e) {
    std::cout << "error: " << e.what() << "\n";
    raised = true;
  }
  example::require(raised, "fp8 does not promote implicitly");
  return 0;
}
