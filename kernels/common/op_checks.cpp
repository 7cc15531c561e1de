#include <mixt/kernels/common/op_checks.h>

#include <cmath>
#include <limits>

#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

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

void check_hardtanh_bounds(const OpCall& c) {
  const auto& a = c.attrs.get<attrs::Hardtanh>();
  const ScalarType dt = c.in[0].dtype();
  MIXT_CHECK_OP(dt != kBool, c, "bool inputs are not supported");
  MIXT_CHECK_OP(dt != kUInt8 || (saturate_to_int64(a.min_val) >= 0 && saturate_to_int64(a.max_val) >= 0), c,
                "uint8 inputs take nonnegative limits only, got min_val={} max_val={}", a.min_val, a.max_val);
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

OutputMeta where_result(const OpCall& c) {
  for (int i = 0; i < 3; ++i) MIXT_CHECK_OP(c.in[i].defined(), c, "input {} is undefined", i);
  MIXT_CHECK_OP(c.in[0].dtype() == kBool, c, "the condition must be a bool tensor, got {}", c.in[0].dtype());
  ScalarType dtype = ScalarType::Undefined;
  try {
    dtype = result_type({c.in[1], c.in[2]});
  } catch (const Error& err) {
    MIXT_FAIL_OP(c, "{}", err.message());
  }
  const Shape shape =
      broadcast_shapes(broadcast_shapes(c.in[0].sizes(), c.in[1].sizes(), "where"), c.in[2].sizes(), "where");
  return {shape, dtype};
}

Shape normalization_stats_shape(const OpCall& c, const Shape& normalized, int n_params) {
  const Tensor& x = c.in[0];
  MIXT_CHECK_OP(is_floating(x.dtype()), c, "expected a floating input, got {}", x.dtype());
  const int k = normalized.size();
  MIXT_CHECK_OP(k >= 1, c, "normalized_shape must have at least one dimension");
  bool trailing = k <= x.dim();
  for (int i = 0; trailing && i < k; ++i) trailing = x.size(x.dim() - k + i) == normalized[i];
  MIXT_CHECK_OP(trailing, c, "normalized_shape {} does not match the trailing dims of the input of shape {}",
                normalized, x.sizes());
  static const char* const what[] = {"weight", "bias"};
  for (int i = 1; i <= n_params && i < c.n_in; ++i) {
    const Tensor& p = c.in[i];
    if (!p.defined()) continue;
    MIXT_CHECK_OP(is_floating(p.dtype()), c, "expected a floating {}, got {}", what[i - 1], p.dtype());
    MIXT_CHECK_OP(p.sizes() == normalized, c, "expected a {} of shape {} (normalized_shape), got {}", what[i - 1],
                  normalized, p.sizes());
  }
  Shape stats;
  for (int d = 0; d < x.dim() - k; ++d) stats.push_back(x.size(d));
  return stats;
}

namespace {
// A fused backward op's two inputs: grad_output and `second` (the forward's output or input),
// both present, of one floating dtype, shape and device.
void check_gradient_pair(const OpCall& c, const char* second) {
  const Tensor &g = c.in[0], &t = c.in[1];
  MIXT_CHECK_OP(g.defined() && t.defined(), c, "grad_output and {} are required", second);
  MIXT_CHECK_OP(is_floating(t.dtype()) && g.dtype() == t.dtype() && g.sizes() == t.sizes() && g.device() == t.device(),
                c, "expected grad_output and {} of one floating dtype, shape and device, got {} and {}", second,
                g.describe(), t.describe());
}
}  // namespace

int64_t check_softmax_backward(const OpCall& c) {
  check_gradient_pair(c, "output");
  return wrap_dim(c.attrs.get<attrs::Dim>().dim, c.in[1].dim(), op_name(c.op).data());
}

void check_activation_backward(const OpCall& c) { check_gradient_pair(c, "self"); }

CrossEntropyRowsPlan plan_cross_entropy_rows(const OpCall& c) {
  CrossEntropyRowsPlan p;
  const bool backward = c.op == OpId::cross_entropy_rows_backward;
  if (backward) p.grad = 0, p.logits = 1, p.target = 2, p.lse = 3;
  const int weight_at = backward ? 4 : 2;
  if (weight_at < c.n_in && c.in[weight_at].defined()) p.weight = weight_at;
  for (int i = 0; i < weight_at; ++i) MIXT_CHECK_OP(c.in[i].defined(), c, "input {} is undefined", i);
  const Tensor &x = c.in[p.logits], &t = c.in[p.target];
  MIXT_CHECK_OP(is_floating(x.dtype()) && x.dim() == 2 && x.size(1) >= 1, c,
                "expected floating logits [N, C] with C >= 1, got {}", x.describe());
  p.rows = x.size(0), p.classes = x.size(1);
  p.logits_dtype = x.dtype(), p.acc_dtype = accumulate_type(x.dtype());
  MIXT_CHECK_OP((t.dtype() == kInt64 || t.dtype() == kInt32) && t.dim() == 1 && t.size(0) == p.rows, c,
                "expected an int64 or int32 target [{}] for logits {}, got {}", p.rows, x.describe(), t.describe());
  const auto per_row = [&](int i, const char* name) {
    const Tensor& v = c.in[i];
    MIXT_CHECK_OP(v.dtype() == p.acc_dtype && v.dim() == 1 && v.size(0) == p.rows, c,
                  "expected {} [{}] of dtype {} for logits {}, got {}", name, p.rows, p.acc_dtype, x.describe(),
                  v.describe());
  };
  if (backward) per_row(p.grad, "grad_loss"), per_row(p.lse, "lse");
  if (p.weight >= 0) {
    const Tensor& w = c.in[p.weight];
    MIXT_CHECK_OP(w.dtype() == p.acc_dtype && w.dim() == 1 && w.size(0) == p.classes, c,
                  "expected a weight [{}] of dtype {} for logits {}, got {}", p.classes, p.acc_dtype, x.describe(),
                  w.describe());
  }
  for (int i = 0; i < c.n_in; ++i)
    MIXT_CHECK_OP(!c.in[i].defined() || c.in[i].device() == x.device(), c, "expected every input on {}, got {}",
                  x.device(), c.in[i].describe());
  const double s = c.attrs.get<attrs::CrossEntropy>().label_smoothing;
  MIXT_CHECK_OP(s >= 0.0 && s <= 1.0, c, "label_smoothing must be between 0.0 and 1.0, got {}", s);
  return p;
}

NormBackwardPlan plan_norm_backward(const OpCall& c) {
  NormBackwardPlan p;
  p.layer = c.op == OpId::layer_norm_backward;
  const int n_stats = p.layer ? 2 : 1, first_stat = 2;
  for (int i = 0; i < first_stat + n_stats; ++i) MIXT_CHECK_OP(c.in[i].defined(), c, "input {} is undefined", i);
  const Tensor &g = c.in[0], &x = c.in[1];
  MIXT_CHECK_OP(is_floating(x.dtype()) && g.dtype() == x.dtype() && g.sizes() == x.sizes() && g.device() == x.device(),
                c, "expected grad_y and x of one floating dtype, shape and device, got {} and {}", g.describe(),
                x.describe());
  const auto& a = c.attrs.get<attrs::NormBackward>();
  const Shape& normalized = a.normalized_shape;
  const int k = normalized.size();
  MIXT_CHECK_OP(k >= 1, c, "normalized_shape must have at least one dimension");
  bool trailing = k <= x.dim();
  for (int i = 0; trailing && i < k; ++i) trailing = x.size(x.dim() - k + i) == normalized[i];
  MIXT_CHECK_OP(trailing, c, "normalized_shape {} does not match the trailing dims of x of shape {}", normalized,
                x.sizes());
  for (int d = 0; d < x.dim() - k; ++d) p.stat_sizes.push_back(x.size(d));
  p.stat_dtype = accumulate_type(x.dtype());
  static const char* const stat_names[] = {"mean", "rstd"};
  for (int i = 0; i < n_stats; ++i) {
    const Tensor& s = c.in[first_stat + i];
    MIXT_CHECK_OP(s.sizes() == p.stat_sizes && s.dtype() == p.stat_dtype && s.device() == x.device(), c,
                  "expected {} as {}{} on {} (x's leading dims in its accumulate type), got {}",
                  stat_names[p.layer ? i : 1], p.stat_dtype, p.stat_sizes, x.device(), s.describe());
  }
  const int w = first_stat + n_stats;
  if (w < c.n_in && c.in[w].defined()) {
    const Tensor& weight = c.in[w];
    MIXT_CHECK_OP(is_floating(weight.dtype()) && weight.sizes() == normalized && weight.device() == x.device(), c,
                  "expected a floating weight of shape {} (normalized_shape) on {}, got {}", normalized, x.device(),
                  weight.describe());
    p.weight = w;
  }
  p.input_grad = a.input_grad;
  p.weight_grad = a.weight_grad;
  p.bias_grad = p.layer && a.bias_grad;
  p.cols = normalized.numel();
  p.rows = p.stat_sizes.numel();
  return p;
}

}  // namespace mixt
