#include "reference_linalg.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace mixt::testing::ref {

Ref contract(const std::vector<Ref>& operands, const std::vector<std::string>& terms, const std::string& out) {
  if (operands.size() != terms.size()) throw std::invalid_argument("contract: one term per operand");
  std::map<char, int64_t> size;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (terms[i].size() != operands[i].sizes.size()) throw std::invalid_argument("contract: term rank " + terms[i]);
    for (size_t d = 0; d < terms[i].size(); ++d) {
      int64_t& s = size[terms[i][d]];
      s = std::max(s, operands[i].sizes[d]);
    }
  }
  std::string labels;  // out's labels first, then the summed ones
  for (char l : out) labels += l;
  for (const auto& [l, s] : size)
    if (out.find(l) == std::string::npos) labels += l;
  Sizes all, out_sizes;
  for (char l : labels) all.push_back(size.at(l));
  for (char l : out) out_sizes.push_back(size.at(l));
  Ref r{out_sizes, Vec(static_cast<size_t>(numel_of(out_sizes)), 0.0)};
  for_each_index(all, [&](int64_t, const Sizes& at) {
    double p = 1;
    for (size_t i = 0; i < operands.size(); ++i) {
      Sizes idx;
      for (size_t d = 0; d < terms[i].size(); ++d) {
        const int64_t v = at[labels.find(terms[i][d])];
        idx.push_back(operands[i].sizes[d] == 1 ? 0 : v);
      }
      p *= operands[i].v[static_cast<size_t>(ravel(idx, operands[i].sizes))];
    }
    r.v[static_cast<size_t>(ravel(Sizes(at.begin(), at.begin() + static_cast<int64_t>(out.size())), out_sizes))] += p;
  });
  return r;
}

Ref scale_add(const Ref& bias, const Ref& product, double beta, double alpha) {
  const Ref b = expand(bias, product.sizes);
  Ref r = product;
  for (size_t i = 0; i < r.v.size(); ++i) r.v[i] = alpha * product.v[i] + (beta == 0 ? 0.0 : beta * b.v[i]);
  return r;
}

}  // namespace mixt::testing::ref
