// Op cases of the linear-algebra composites: each against ref::contract, the labelled sum of
// products in double (reference_linalg.h). Operands lie in [-2, 2] (products up to 4), or in
// [-1, 1] for the chains of several products; narrow floats accumulate in float32 and round once.
#include "op_case_builder.h"
#include "reference_linalg.h"

namespace mixt::testing {
namespace {

namespace fn = mixt::nn::functional;
constexpr uint32_t G = dtypes::kStandardFloat;  // the CUDA GEMM engine's dtypes

// Data operands of these shapes in [lo, hi].
std::function<CaseInputs(ScalarType)> operands(std::vector<Shape> shapes, double lo = -2, double hi = 2) {
  return [=](ScalarType dt) {
    CaseInputs in;
    for (size_t i = 0; i < shapes.size(); ++i) {
      in.in.push_back(data(dt, shapes[i], lo, hi, 40 + static_cast<uint32_t>(i)));
      in.data |= 1u << i;
    }
    return in;
  };
}

// A sum of k products of values up to `each`: k roundings at the size of that sum.
Tolerance sum_of(int64_t k, double each = 4) {
  return {0.5, static_cast<double>(k), each * static_cast<double>(k)};
}

void add_einsum_cases(Builder& b) {
  struct Spec {
    const char* label;
    const char* equation;
    std::vector<Shape> shapes;
    std::vector<std::string> terms;  // the reference's labels (ellipsis written out)
    std::string out;
    int64_t k;                       // products summed per result value
    double each = 4;                 // the size of each product
  };
  const std::vector<Spec> specs = {
      {"einsum/matmul", "ij,jk->ik", {{3, 4}, {4, 5}}, {"ij", "jk"}, "ik", 4},
      {"einsum/batched", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, {"bij", "bjk"}, "bik", 4},
      {"einsum/diagonal", "ii->i", {{4, 4}}, {"ii"}, "i", 1, 2},
      {"einsum/trace", "ii", {{4, 4}}, {"ii"}, "", 4, 2},
      {"einsum/permute", "ijk->kji", {{2, 3, 4}}, {"ijk"}, "kji", 1, 2},
      {"einsum/sum", "ij->", {{3, 4}}, {"ij"}, "", 12, 2},
      {"einsum/outer", "i,j->ij", {{3}, {4}}, {"i", "j"}, "ij", 1},
      {"einsum/row_dots", "ij,ij->i", {{3, 4}, {3, 4}}, {"ij", "ij"}, "i", 4},
      {"einsum/implicit_upper_first", "bA,Cb", {{4, 3}, {2, 4}}, {"bA", "Cb"}, "AC", 4},
      {"einsum/ellipsis_broadcast", "...ij,...jk", {{2, 1, 3, 4}, {3, 4, 2}}, {"abij", "bjk"}, "abik", 4},
      {"einsum/ellipsis_summed", "...ij->j", {{2, 3, 4}}, {"aij"}, "j", 6, 2},
      {"einsum/bilinear_form", "bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}, {"bn", "anm", "bm"}, "ba", 15, 8},
      {"einsum/chain", "ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}, {"ij", "jk", "kl"}, "il", 12, 8},
  };
  for (const Spec& s : specs) {
    const bool chain = s.shapes.size() > 2;
    b.add(s.label, OpId::einsum, N, G, operands(s.shapes, chain ? -1 : -2, chain ? 1 : 2),
          [eq = std::string(s.equation)](const std::vector<Tensor>& in, ScalarType, Device) { return einsum(eq, in); })
        .with([s](const Refs& in, ScalarType) { return ref::contract(in, s.terms, s.out); },
              sum_of(2 * s.k, chain ? 1 : s.each));
  }
}

}  // namespace

void add_linalg_cases(Builder& b) {
  using ref::contract;
  b.add("addmv", OpId::addmv, N, G, operands({{3}, {3, 8}, {8}}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return addmv(in[0], in[1], in[2], 3, 2); })
      .with([](const Refs& in, ScalarType) { return ref::scale_add(in[0], contract({in[1], in[2]}, {"ij", "j"}, "i"), 3, 2); },
            {0.5, 10, 70});
  b.add("addmv/beta_0_broadcast", OpId::addmv, N, G, operands({{1}, {3, 8}, {8}}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return addmv(in[0], in[1], in[2], 0, 1); })
      .with([](const Refs& in, ScalarType) { return ref::scale_add(in[0], contract({in[1], in[2]}, {"ij", "j"}, "i"), 0, 1); },
            sum_of(9));
  b.add("addr", OpId::addr, N, G, operands({{3, 4}, {3}, {4}}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return addr(in[0], in[1], in[2], 2, -1); })
      .with([](const Refs& in, ScalarType) { return ref::scale_add(in[0], contract({in[1], in[2]}, {"i", "j"}, "ij"), 2, -1); },
            {0.5, 2, 8});
  b.add("addbmm", OpId::addbmm, N, G, operands({{4}, {2, 3, 5}, {2, 5, 4}}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return addbmm(in[0], in[1], in[2], 1, 2); })
      .with([](const Refs& in, ScalarType) {
              return ref::scale_add(in[0], contract({in[1], in[2]}, {"bij", "bjk"}, "ik"), 1, 2);
            },
            {0.5, 12, 82});
  auto addmm_act = [](bool gelu) {
    return [gelu](const Refs& in, ScalarType) {
      const ref::Ref r = ref::scale_add(in[0], contract({in[1], in[2]}, {"ij", "jk"}, "ik"), 1, 1);
      return ref::map(r, [gelu](double x) { return gelu ? 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))) : std::max(x, 0.0); });
    };
  };
  b.add("addmm_activation/relu", OpId::addmm_activation, N, G, operands({{4}, {3, 6}, {6, 4}}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return addmm_activation(in[0], in[1], in[2]); })
      .with(addmm_act(false), {0.5, 8, 26});
  // gelu after the float32 sum: the sum's error, then gelu's (slope up to 1.13) and one libm ulp.
  b.add("addmm_activation/gelu", OpId::addmm_activation, F, G, operands({{4}, {3, 6}, {6, 4}}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return addmm_activation(in[0], in[1], in[2], 1, 1, true); })
      .with(addmm_act(true), {0.5, 12, 30});
  b.add("vdot", OpId::vdot, N, G, operands({{8}, {8}}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return vdot(in[0], in[1]); })
      .with([](const Refs& in, ScalarType) { return contract(in, {"i", "i"}, ""); }, sum_of(8));
  b.add("linalg_vecdot/broadcast", OpId::linalg_vecdot, F, G, operands({{2, 3, 5}, {3, 5}}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return linalg_vecdot(in[0], in[1]); })
      .with([](const Refs& in, ScalarType) { return contract(in, {"abk", "bk"}, "ab"); }, sum_of(5));
  b.add("linalg_vecdot/dim", OpId::linalg_vecdot, F, G, operands({{4, 3}, {4, 1}}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return linalg_vecdot(in[0], in[1], 0); })
      .with([](const Refs& in, ScalarType) { return contract(in, {"kb", "kc"}, "b"); }, sum_of(4));
  // Chains: values in [-1, 1]; a result value sums at most 4 * 6 * 2 products of four factors.
  b.add("chain_matmul", OpId::chain_matmul, N, G, operands({{3, 4}, {4, 6}, {6, 2}, {2, 5}}, -1, 1),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return chain_matmul(in); })
      .with([](const Refs& in, ScalarType) { return contract(in, {"ab", "bc", "cd", "de"}, "ae"); }, sum_of(60, 1));
  b.add("linalg_multi_dot/vector_ends", OpId::linalg_multi_dot, N, G, operands({{4}, {4, 6}, {6, 2}, {2}}, -1, 1),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return linalg_multi_dot(in); })
      .with([](const Refs& in, ScalarType) { return contract(in, {"b", "bc", "cd", "d"}, ""); }, sum_of(60, 1));
  b.add("linalg_multi_dot/matrices", OpId::linalg_multi_dot, N, G, operands({{5, 2}, {2, 6}, {6, 3}}, -1, 1),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return linalg_multi_dot(in); })
      .with([](const Refs& in, ScalarType) { return contract(in, {"ab", "bc", "cd"}, "ad"); }, sum_of(24, 1));
  b.add("tensordot/dims_lists", OpId::tensordot, N, G, operands({{2, 3, 4}, {4, 3, 5}}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return tensordot(in[0], in[1], {1, 2}, {1, 0}); })
      .with([](const Refs& in, ScalarType) { return contract(in, {"xyz", "zyw"}, "xw"); }, sum_of(12));
  b.add("tensordot/int_dims", OpId::tensordot, N, G, operands({{2, 3, 4}, {4, 5}}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return tensordot(in[0], in[1], 1); })
      .with([](const Refs& in, ScalarType) { return contract(in, {"xyz", "zw"}, "xyw"); }, sum_of(4));
  // bilinear: 4 * 5 products of three factors (up to 8) per value, plus the bias.
  b.add("bilinear", OpId::bilinear, N, G, operands({{2, 3, 4}, {2, 3, 5}, {6, 4, 5}, {6}}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return fn::bilinear(in[0], in[1], in[2], in[3]); })
      .with([](const Refs& in, ScalarType) {
              return ref::scale_add(in[3], contract({in[0], in[1], in[2]}, {"abi", "abj", "oij"}, "abo"), 1, 1);
            },
            sum_of(42, 8));
  add_einsum_cases(b);
}

}  // namespace mixt::testing
