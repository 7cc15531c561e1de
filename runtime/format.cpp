// Printing tensors: nested brackets, at most a few edge items per dimension.
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

}  // namespace mixt
