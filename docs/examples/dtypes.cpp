// The narrow floating types: rounding, fp8 saturation, and type promotion.
#include <iostream>

#include <mixt/mixt.h>

using namespace mixt;

int main() {
  Tensor v = from_vector(std::vector<float>{0.1f, 1.0f, 300.0f, 448.0f, 500.0f, 60000.0f, 70000.0f});
  for (ScalarType t : {kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2}) {
    std::cout << dtype_name(t) << ": " << v.to(t).to(kFloat32) << "\n";
  }
  // e4m3fn saturates at ±448; e5m2 overflows to Inf past 61440; f16 past 65520.
  std::cout << "promote(float16, bfloat16) = " << dtype_name(promote_types(kFloat16, kBFloat16)) << "\n";
  std::cout << "int32 tensor + 2.5 -> "
            << dtype_name(result_type({zeros({2}, {.dtype = kInt32}), wrapped_scalar(2.5)})) << "\n";
  try {
    promote_types(kFloat8_e4m3fn, kFloat32);
  } catch (const Error& e) {
    std::cout << "error: " << e.what() << "\n";
  }
  return 0;
}
