#include <mixt/kernels/common/op_checks.h>

#include <cmath>
#include <limits>

#include <mixt/dispatcher/op_check.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt {
namespace {

// The integers every dtype holds exactly: [lo, hi].
void exact_integer_range(ScalarType dtype, double* lo, double* hi) {
  switch (dtype) {
    case kBool: *lo = 0, *hi = 1; return;
    case kUInt8: *lo = 0, *hi = 255; return;
    case kInt8: *lo = -128, *hi = 127; return;
    case kInt32: *lo = std::numeric_limits<int32_t>::min(), *hi = std::numeric_limits<int32_t>::max(); return;
    case kInt64:
      *lo = static_cast<double>(std::numeric_limits<int64_t>::min());
      *hi = static_cast<double>(std::numeric_limits<int64_t>::max());
      return;
    default: break;
  }
  int digits = 3;  // float8_e5m2
  switch (dtype) {
    case kFloat64: digits = 53; break;
    case kFloat32: digits = 24; break;
    case kFloat16: digits = 11; break;
    case kBFloat16: digits = 8; break;
    case kFloat8_e4m3fn: digits = 4; break;
    default: break;
  }
  *hi = std::ldexp(1.0, digits), *lo = -*hi;
}

}  // namespace

void check_random_fill(const OpCall& c, const Tensor& self) {
  MIXT_CHECK_OP(is_floating(self.dtype()), c, "not implemented for dtype {}", self.dtype());
}

void check_random_range(const OpCall& c, int64_t low, int64_t high, ScalarType dtype) {
  MIXT_CHECK_OP(low < high, c, "expects from < to, got from={} >= to={}", low, high);
  double lo = 0, hi = 0;
  exact_integer_range(dtype, &lo, &hi);
  // Compared in double: int64's own bounds are exact powers of two there.
  MIXT_CHECK_OP(static_cast<double>(low) >= lo && static_cast<double>(high - 1) <= hi, c,
                "expects from and to - 1 within [{}, {}] for dtype {}, got from={} to={}", lo, hi, dtype, low, high);
}

void check_round_decimals(const OpCall& c, ScalarType dtype, int64_t decimals) {
  MIXT_CHECK_OP(decimals == 0 || !is_integral(dtype), c, "rounding an integer tensor to {} decimals is not supported",
                decimals);
  MIXT_CHECK_OP(decimals >= -308 && decimals <= 308, c, "decimals must be in [-308, 308], got {}", decimals);
}

void check_unscale_gradient(const OpCall& c, size_t i, const Tensor& g) {
  MIXT_CHECK_OP(dtypes::contains(dtypes::kStandardFloat, g.dtype()), c,
                "gradient {} is {}: unscaling takes float16, bfloat16, float32 and float64", i, g.dtype());
}

void check_step_parameter(const OpCall& c, size_t i, const Tensor& p, Device device) {
  MIXT_CHECK_OP(p.device() == device && dtypes::contains(dtypes::kStandardFloat, p.dtype()) && p.is_contiguous(), c,
                "parameter {} is {}: fused steps take contiguous float16/bfloat16/float32/float64 {} tensors", i,
                p.describe(), device.type() == DeviceType::CPU ? "CPU" : device.str());
}

}  // namespace mixt
