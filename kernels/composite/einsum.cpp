// einsum: the equation parsed and checked (every malformed equation raises naming it), each
// operand's repeated labels taken as a diagonal (as_strided), labels no later operand or the
// output needs summed early, and the operands contracted left to right, each pair as one bmm
// of [batch, free, summed] @ [batch, summed, free] (docs/ops.md, "Linear algebra").
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/composite/products.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

constexpr int kLetters = 52;   // 'A'..'Z' are labels 0..25, 'a'..'z' 26..51: the implicit output's order
constexpr int kEllipsis = -1;  // "..." in a term

int label_of(char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return 26 + (ch - 'a');
  return -2;
}
char letter_of(int label) { return static_cast<char>(label < 26 ? 'A' + label : 'a' + (label - 26)); }

// The equation's terms: one per operand, and the output's when it is explicit.
struct Equation {
  std::vector<std::vector<int>> inputs;  // labels and kEllipsis, in order
  std::vector<int> output;
  bool explicit_output = false;
};

Equation parse(const OpCall& c, std::string_view eq) {
  Equation e;
  e.inputs.emplace_back();
  std::vector<int>* term = &e.inputs.back();
  for (size_t i = 0; i < eq.size(); ++i) {
    const char ch = eq[i];
    if (ch == ' ') continue;
    if (ch == ',') {
      MIXT_CHECK_OP(!e.explicit_output, c, "equation \"{}\": a ',' after \"->\" (the output is one term)", eq);
      term = &e.inputs.emplace_back();
    } else if (ch == '-') {
      MIXT_CHECK_OP(i + 1 < eq.size() && eq[i + 1] == '>', c, "equation \"{}\": a '-' not followed by '>'", eq);
      MIXT_CHECK_OP(!e.explicit_output, c, "equation \"{}\": more than one \"->\"", eq);
      e.explicit_output = true;
      term = &e.output;
      ++i;
    } else if (ch == '.') {
      MIXT_CHECK_OP(eq.substr(i, 3) == "...", c, "equation \"{}\": a '.' that is not part of \"...\"", eq);
      MIXT_CHECK_OP(std::find(term->begin(), term->end(), kEllipsis) == term->end(), c,
                    "equation \"{}\": more than one \"...\" in a term", eq);
      term->push_back(kEllipsis);
      i += 2;
    } else {
      const int l = label_of(ch);
      MIXT_CHECK_OP(l >= 0, c, "equation \"{}\": invalid character '{}' (labels are the letters a-z and A-Z)", eq,
                    std::string(1, ch));
      term->push_back(l);
    }
  }
  return e;
}

// One operand with one dim per distinct id (labels shifted past the ellipsis ids 0..E-1).
struct Operand {
  Tensor t;
  std::vector<int> ids;
};

// Sums the dims of `x` whose ids `drop` says to, in `work`.
Operand sum_out(Operand x, const std::vector<bool>& drop, ScalarType work) {
  Shape dims;
  std::vector<int> kept;
  for (size_t d = 0; d < x.ids.size(); ++d) {
    if (drop[x.ids[d]]) dims.push_back(static_cast<int64_t>(d));
    else kept.push_back(x.ids[d]);
  }
  if (dims.empty()) return x;
  return {sum(x.t, dims, false, work), kept};
}

// Sizes of `x` for `ids` (1 where x has no such dim).
int64_t size_of(const Operand& x, int id) {
  const auto it = std::find(x.ids.begin(), x.ids.end(), id);
  return it == x.ids.end() ? 1 : x.t.size(it - x.ids.begin());
}

// x's dims in the order `ids`, each expanded to `sizes`, folded into groups of `groups` dims.
Tensor arrange(const Operand& x, const std::vector<int>& ids, const std::vector<int64_t>& sizes,
               std::initializer_list<size_t> groups) {
  Shape order, expanded;
  for (size_t k = 0; k < ids.size(); ++k) {
    order.push_back(std::find(x.ids.begin(), x.ids.end(), ids[k]) - x.ids.begin());
    expanded.push_back(sizes[k]);
  }
  const Tensor t = x.t.permute(order).expand(expanded);
  Shape folded;
  size_t at = 0;
  for (size_t g : groups) {
    int64_t n = 1;
    for (size_t k = 0; k < g; ++k) n *= sizes[at++];
    folded.push_back(n);
  }
  return t.reshape(folded);
}

// a and b contracted: ids both have and nothing later needs are summed (`later`: uses after this pair).
Operand contract(const Operand& a, const Operand& b, const std::vector<int>& later, ScalarType work) {
  std::vector<int> batch, summed, free_a, free_b;
  for (int id : a.ids) {
    const bool in_b = std::find(b.ids.begin(), b.ids.end(), id) != b.ids.end();
    (in_b ? (later[id] > 0 ? batch : summed) : free_a).push_back(id);
  }
  for (int id : b.ids)
    if (std::find(a.ids.begin(), a.ids.end(), id) == a.ids.end()) free_b.push_back(id);
  auto sizes = [&](const std::vector<int>& ids) {
    std::vector<int64_t> s;
    for (int id : ids) s.push_back(std::max(size_of(a, id), size_of(b, id)));
    return s;
  };
  auto join = [](std::vector<int> x, const std::vector<int>& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  const std::vector<int> ids_a = join(join(batch, free_a), summed), ids_b = join(join(batch, summed), free_b);
  const Tensor lhs = arrange(a, ids_a, sizes(ids_a), {batch.size(), free_a.size(), summed.size()});
  const Tensor rhs = arrange(b, ids_b, sizes(ids_b), {batch.size(), summed.size(), free_b.size()});
  Shape out;
  const std::vector<int> ids = join(join(batch, free_a), free_b);
  for (int64_t s : sizes(ids)) out.push_back(s);
  return {composite::product_in(lhs, rhs, work, true).view(out), ids};
}

}  // namespace

void einsum_kernel(OpCall& c, DispatchKeySet) {
  const std::string_view text = c.attrs.get<attrs::Einsum>().equation.text;
  const Equation e = parse(c, text);
  const size_t n = c.list.size();
  MIXT_CHECK_OP(n >= 1, c, "expected at least one operand");
  MIXT_CHECK_OP(e.inputs.size() == n, c, "equation \"{}\" has {} input terms for {} operands", text,
                e.inputs.size(), n);
  const Tensor& first = c.list[0];
  MIXT_CHECK_OP(first.dtype() != kBool, c, "not implemented for bool operands");
  // Dims under the ellipsis: E, the most any operand has (they broadcast, aligned right).
  std::vector<int64_t> under(n, 0);
  int64_t ell = 0;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& t = c.list[i];
    MIXT_CHECK_OP(t.dtype() == first.dtype() && t.device() == first.device(), c,
                  "operands must share one dtype and device, but operand {} is {} on {} and operand 0 {} on {}", i,
                  t.dtype(), t.device(), first.dtype(), first.device());
    const auto& term = e.inputs[i];
    const bool has_ell = std::find(term.begin(), term.end(), kEllipsis) != term.end();
    const int64_t letters = static_cast<int64_t>(term.size()) - (has_ell ? 1 : 0);
    MIXT_CHECK_OP(has_ell ? t.dim() >= letters : t.dim() == letters, c,
                  "equation \"{}\": term {} has {} labels{} for operand {} of shape {}", text, i, letters,
                  has_ell ? " and \"...\"" : "", i, t.sizes());
    under[i] = t.dim() - letters;
    ell = std::max(ell, under[i]);
  }
  const int ids = static_cast<int>(ell) + kLetters;
  auto id_of = [&](int label) { return static_cast<int>(ell) + label; };
  // Each operand's dim ids; the sizes of each id must agree (or be 1: it broadcasts).
  std::vector<std::vector<int>> dim_ids(n);
  std::vector<int> count(ids, 0);  // occurrences of each label across the inputs (the implicit output)
  std::vector<int64_t> size(ids, 1);
  for (size_t i = 0; i < n; ++i) {
    for (int l : e.inputs[i]) {
      if (l != kEllipsis) {
        dim_ids[i].push_back(id_of(l));
        ++count[id_of(l)];
        continue;
      }
      for (int64_t q = 0; q < under[i]; ++q) dim_ids[i].push_back(static_cast<int>(ell - under[i] + q));
    }
    for (size_t d = 0; d < dim_ids[i].size(); ++d) {
      const int id = dim_ids[i][d];
      const int64_t s = c.list[i].size(static_cast<int64_t>(d));
      MIXT_CHECK_OP(s == size[id] || s == 1 || size[id] == 1, c,
                    "equation \"{}\": {} has size {} in operand {} (shape {}) and size {} elsewhere", text,
                    id < ell ? std::string("a dim under \"...\"") : "label '" + std::string(1, letter_of(id - ell)) + "'",
                    s, i, c.list[i].sizes(), size[id]);
      size[id] = std::max(size[id], s);
    }
  }
  // The output's ids.
  std::vector<int> out;
  if (e.explicit_output) {
    for (int l : e.output) {
      if (l == kEllipsis) {
        for (int q = 0; q < ell; ++q) out.push_back(q);
        continue;
      }
      MIXT_CHECK_OP(count[id_of(l)] > 0, c, "equation \"{}\": output label '{}' is in no input term", text,
                    std::string(1, letter_of(l)));
      MIXT_CHECK_OP(std::find(out.begin(), out.end(), id_of(l)) == out.end(), c,
                    "equation \"{}\": output label '{}' appears more than once", text, std::string(1, letter_of(l)));
      out.push_back(id_of(l));
    }
  } else {
    for (int q = 0; q < ell; ++q) out.push_back(q);
    for (int l = 0; l < kLetters; ++l)
      if (count[id_of(l)] == 1) out.push_back(id_of(l));
  }
  // How many of the operands not yet contracted, and the output, use each id.
  std::vector<int> uses(ids, 0);
  for (int id : out) uses[id] = 1;
  std::vector<Operand> ops(n);
  for (size_t i = 0; i < n; ++i) {
    // Repeated ids: one dim whose stride is the sum of theirs (the diagonal), sizes equal.
    const Tensor& t = c.list[i];
    Shape sizes, strides;
    for (size_t d = 0; d < dim_ids[i].size(); ++d) {
      const int id = dim_ids[i][d];
      const auto seen = std::find(ops[i].ids.begin(), ops[i].ids.end(), id);
      if (seen == ops[i].ids.end()) {
        ops[i].ids.push_back(id);
        sizes.push_back(t.size(static_cast<int64_t>(d)));
        strides.push_back(t.stride(static_cast<int64_t>(d)));
        continue;
      }
      const int64_t k = seen - ops[i].ids.begin();
      MIXT_CHECK_OP(sizes[k] == t.size(static_cast<int64_t>(d)), c,
                    "equation \"{}\": label '{}' is repeated in operand {} (shape {}) over dims of different sizes",
                    text, std::string(1, letter_of(id - static_cast<int>(ell))), i, t.sizes());
      strides[k] += t.stride(static_cast<int64_t>(d));
    }
    ops[i].t = ops[i].ids.size() == dim_ids[i].size() ? t : as_strided(t, sizes, strides);
    for (int id : ops[i].ids) ++uses[id];
  }
  // Left to right: drop what only this operand has and nothing later needs, then contract.
  auto release = [&](const Operand& x) {
    for (int id : x.ids) --uses[id];
  };
  auto unused = [&](const Operand* other) {
    std::vector<bool> drop(ids, false);
    for (int id = 0; id < ids; ++id)
      drop[id] = uses[id] == 0 && (!other || std::find(other->ids.begin(), other->ids.end(), id) == other->ids.end());
    return drop;
  };
  release(ops[0]);
  // Narrow floats accumulate in float32 from step to step and round once at the end.
  const ScalarType work = composite::chain_work_dtype(first.dtype());
  Operand acc = sum_out(ops[0], unused(nullptr), work);
  for (size_t i = 1; i < n; ++i) {
    release(ops[i]);
    const Operand next = sum_out(ops[i], unused(&acc), work);
    acc = contract(acc, next, uses, work);
  }
  // The output's order; ids of size 1 the operands broadcast stay 1, as PyTorch's.
  Shape order;
  for (int id : out) order.push_back(std::find(acc.ids.begin(), acc.ids.end(), id) - acc.ids.begin());
  Tensor r = acc.t.permute(order);
  const ScalarType result = c.attrs.dtype == ScalarType::Undefined ? first.dtype() : c.attrs.dtype;
  if (r.dtype() != result) r = r.to(result);
  // A lone operand that nothing summed is still a view of the input: the result is a new tensor.
  const bool view_of_input = n == 1 && acc.ids.size() == ops[0].ids.size();
  c.out[0] = view_of_input ? r.clone() : r;
}

}  // namespace mixt
