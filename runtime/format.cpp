// Printing mixt's values with operator<< (their fmt formatters are in formatters.h):
// tensors in nested brackets, at most a few edge items per dimension.
#include <ostream>

#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

constexpr int64_t kEdgeItems = 3;
constexpr int64_t kSummarizeAbove = 1000;

void print_rec(std::string& out, const std::vector<double>& v, const Shape& sizes, int dim, int64_t offset,
               int64_t stride_elems, bool summarize, bool is_int, bool is_bool) {
  if (dim == sizes.size()) {
    const double x = v[static_cast<size_t>(offset)];
    if (is_bool) out += x != 0 ? "true" : "false";
    else if (is_int) out += fmt::format("{}", static_cast<int64_t>(x));
    else out += fmt::format("{:.4g}", x);
    return;
  }
  const int64_t n = sizes[dim];
  const int64_t inner = stride_elems / (n ? n : 1);
  out += '[';
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      out += "..., ";
      i = n - kEdgeItems;
    }
    print_rec(out, v, sizes, dim + 1, offset + i * inner, inner, summarize, is_int, is_bool);
    if (i + 1 < n) out += dim + 1 == sizes.size() ? ", " : ",\n" + std::string(static_cast<size_t>(dim + 8), ' ');
  }
  out += ']';
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  if (is_meta()) return fmt::format("tensor(..., dtype={}, device=meta, shape={})", dtype(), sizes());
  const std::vector<double> values = to_vector<double>();
  std::string body;
  print_rec(body, values, sizes(), 0, 0, numel(), numel() > kSummarizeAbove, is_integral(dtype()),
            dtype() == kBool);
  return fmt::format("tensor({}, dtype={}, device={}{})", body, dtype(), device(),
                     dim() == 0 ? "" : fmt::format(", shape={}", sizes()));
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

std::ostream& operator<<(std::ostream& os, const TensorOptions& o) {
  return os << "TensorOptions(dtype=" << (o.dtype == ScalarType::Undefined ? "default" : dtype_name(o.dtype))
            << ", device=" << (o.device ? o.device->str() : "default")
            << ", requires_grad=" << (o.requires_grad ? "true" : "false") << ")";
}
std::ostream& operator<<(std::ostream& os, Half x) { return os << static_cast<float>(x); }
std::ostream& operator<<(std::ostream& os, BFloat16 x) { return os << static_cast<float>(x); }
std::ostream& operator<<(std::ostream& os, Float8_e4m3fn x) { return os << static_cast<float>(x); }
std::ostream& operator<<(std::ostream& os, Float8_e5m2 x) { return os << static_cast<float>(x); }
std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << dtype_name(t); }
std::ostream& operator<<(std::ostream& os, DeviceType t) { return os << device_type_name(t); }
std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }
std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }
std::ostream& operator<<(std::ostream& os, const Scalar& s) { return os << s.str(); }

}  // namespace mixt
