// Op cases of the nn ops (runtime/nn/functional.h): every floating dtype against
// the float64 reference, small inputs for the float64 gradient checks, and a
// `check` for the random cases (dropout, attention dropout).
#include <cmath>

#include "op_case_builder.h"

namespace mixt::testing {
namespace {

namespace nnf = nn::functional;
using Ins = std::vector<Tensor>;
using nnf::Reduction;

// One data input: shape and value range.
struct Spec {
  Shape shape;
  double lo, hi;
};

// Data inputs from `specs` (seeded by position; lo == hi gives a constant) followed by `fixed` non-data inputs
// (targets, masks).
std::function<CaseInputs(ScalarType)> inputs(std::vector<Spec> specs, Ins fixed = {}) {
  return [specs, fixed](ScalarType dt) {
    CaseInputs ci;
    uint32_t seed = 40;
    for (const Spec& s : specs) {
      ci.data |= 1u << ci.in.size();
      ci.in.push_back(data(dt, s.shape, s.lo, s.hi, seed++));
    }
    for (const Tensor& t : fixed) ci.in.push_back(t);
    return ci;
  };
}

// A run that ignores the tested dtype and device.
Run run(std::function<Tensor(const Ins&)> f) {
  return [f](const Ins& in, ScalarType, Device) { return f(in); };
}

void add_softmax_cases(Builder& b) {
  b.add("softmax", OpId::softmax, F, kNoCuda, inputs({{{3, 5}, -3, 3}}),
        run([](const Ins& in) { return nnf::softmax(in[0], 1); }));
  b.add("softmax/dim0_3d", OpId::softmax, F, kNoCuda, inputs({{{3, 2, 4}, -6, 6}}),
        run([](const Ins& in) { return nnf::softmax(in[0], 0); }));
  b.add("softmax/dtype", OpId::softmax, A, kNoCuda, inputs({{{3, 5}, -3, 3}}),
        run([](const Ins& in) { return nnf::softmax(in[0], -1, kFloat32); }), kFloat32Out);
  b.add("log_softmax", OpId::log_softmax, F, kNoCuda, inputs({{{3, 5}, -3, 3}}),
        run([](const Ins& in) { return nnf::log_softmax(in[0], -1); }))
      .magnitude = 3;
  b.add("log_softmax/dim1_3d", OpId::log_softmax, F, kNoCuda, inputs({{{2, 4, 3}, -8, 8}}),
        run([](const Ins& in) { return nnf::log_softmax(in[0], 1); }))
      .magnitude = 8;
}

void add_norm_cases(Builder& b) {
  b.add("layer_norm", OpId::layer_norm, F, kNoCuda, inputs({{{2, 3, 4}, -2, 3}, {{3, 4}, 0.5, 1.5}, {{3, 4}, -1, 1}}),
        run([](const Ins& in) {
          return nnf::layer_norm(in[0], {3, 4}, in[1], in[2], 1e-3);
        }))
      .magnitude = 2;
  b.add("layer_norm/plain", OpId::layer_norm, F, kNoCuda, inputs({{{3, 5}, -2, 2}}),
        run([](const Ins& in) { return nnf::layer_norm(in[0], {5}); }))
      .magnitude = 2;
  b.add("rms_norm", OpId::rms_norm, F, kNoCuda, inputs({{{3, 5}, -2, 2}, {{5}, 0.5, 1.5}}),
        run([](const Ins& in) { return nnf::rms_norm(in[0], {5}, in[1], 1e-4); }))
      .magnitude = 2;
  b.add("rms_norm/default_eps", OpId::rms_norm, F, kNoCuda, inputs({{{2, 2, 3}, -4, 4}}), run([](const Ins& in) {
          return nnf::rms_norm(in[0], {2, 3});
        }))
      .magnitude = 2;
  b.add("group_norm", OpId::group_norm, F, kNoCuda, inputs({{{2, 4, 3}, -2, 2}, {{4}, 0.5, 1.5}, {{4}, -1, 1}}),
        run([](const Ins& in) { return nnf::group_norm(in[0], 2, in[1], in[2], 1e-3); }))
      .magnitude = 2;
  b.add("batch_norm/eval", OpId::batch_norm, F, kNoCuda,
        inputs({{{3, 4, 2}, -2, 2}, {{4}, -0.5, 0.5}, {{4}, 0.5, 2}, {{4}, 0.5, 1.5}, {{4}, -1, 1}}),
        run([](const Ins& in) { return nnf::batch_norm(in[0], in[1], in[2], in[3], in[4], false); }))
      .magnitude = 2;
  b.add("batch_norm/train", OpId::batch_norm, F, kNoCuda, inputs({{{4, 3, 2}, -2, 2}, {{3}, 0.5, 1.5}, {{3}, -1, 1}}),
        run([](const Ins& in) {
          const TensorOptions o{.dtype = in[0].dtype()};
          return nnf::batch_norm(in[0], zeros({3}, o), ones({3}, o), in[1], in[2], true, 0.1, 1e-3);
        }))
      .magnitude = 2;
}

// Every element is 0 or 1 / (1 - p) and about a fraction p is 0 (for an input of ones).
std::function<void(const Tensor&, ScalarType)> dropout_check(double p) {
  return [p](const Tensor& r, ScalarType dt) {
    const std::vector<double> v = r.to(kFloat64).to_vector<double>();
    const double kept = full({1}, 1 / (1 - p), {.dtype = dt}).item<double>();
    int64_t zeros_seen = 0;
    for (double x : v) {
      if (x == 0)
        ++zeros_seen;
      else if (std::abs(x - kept) > 1e-6 * kept)
        throw Error("dropout", "unexpected value " + std::to_string(x));
    }
    const double frac = static_cast<double>(zeros_seen) / static_cast<double>(v.size());
    if (std::abs(frac - p) > 0.05) throw Error("dropout", "zero fraction " + std::to_string(frac));
  };
}

void add_dropout_cases(Builder& b) {
  b.add("dropout/eval", OpId::dropout, F, kNoCuda, inputs({{{3, 4}, -2, 2}}),
        run([](const Ins& in) { return nnf::dropout(in[0], 0.5, false); }));
  // An input of ones (a constant spec): kept values are exactly 1 / (1 - p) in the dtype.
  b.add("dropout/train", OpId::dropout, F, kNoCuda, inputs({{{2000}, 1, 1}}),
        run([](const Ins& in) { return nnf::dropout(in[0], 0.25, true); }))
      .check = dropout_check(0.25);
}

void add_class_loss_cases(Builder& b) {
  const Tensor t4 = index_tensor({2, 0, 4, 1}, {4});
  b.add("cross_entropy", OpId::cross_entropy, F, kNoCuda, inputs({{{4, 5}, -3, 3}}, {t4}),
        run([](const Ins& in) { return nnf::cross_entropy(in[0], in[1]); }))
      .magnitude = 2;
  b.add("cross_entropy/weight_ignore_smoothing", OpId::cross_entropy, F, kNoCuda,
        inputs({{{4, 5}, -3, 3}, {{5}, 0.5, 2}}, {index_tensor({2, -1, 4, 1}, {4}).to(kInt32)}),
        run([](const Ins& in) { return nnf::cross_entropy(in[0], in[2], in[1], -1, Reduction::Mean, 0.2); }))
      .magnitude = 2;
  b.add("cross_entropy/probs", OpId::cross_entropy, F, kNoCuda, inputs({{{3, 4}, -3, 3}, {{3, 4}, 0, 1}}),
        run([](const Ins& in) { return nnf::cross_entropy(in[0], in[1], {}, -100, Reduction::Sum, 0.1); }))
      .magnitude = 8;
  b.add("cross_entropy/spatial_none", OpId::cross_entropy, F, kNoCuda,
        inputs({{{2, 3, 2}, -3, 3}}, {index_tensor({0, 2, 1, 1}, {2, 2})}),
        run([](const Ins& in) { return nnf::cross_entropy(in[0], in[1], {}, -100, Reduction::None); }))
      .magnitude = 2;
  b.add("cross_entropy/unbatched", OpId::cross_entropy, F, kNoCuda,
        inputs({{{5}, -3, 3}}, {index_tensor({3}, {1}).view(Shape{})}),
        run([](const Ins& in) { return nnf::cross_entropy(in[0], in[1]); }))
      .magnitude = 2;
  b.add("nll_loss", OpId::nll_loss, F, kNoCuda, inputs({{{4, 5}, -3, -0.1}}, {t4}),
        run([](const Ins& in) { return nnf::nll_loss(in[0], in[1]); }))
      .magnitude = 2;
  b.add("nll_loss/weight_sum", OpId::nll_loss, F, kNoCuda, inputs({{{4, 5}, -3, -0.1}, {{5}, 0.5, 2}}, {t4}),
        run([](const Ins& in) { return nnf::nll_loss(in[0], in[2], in[1], 0, Reduction::Sum); }))
      .magnitude = 8;
}

void add_pair_loss_cases(Builder& b) {
  using Pair = Tensor (*)(const Tensor&, const Tensor&, Reduction);
  const std::pair<Pair, const char*> pairs[] = {{nnf::mse_loss, "mse_loss"}, {nnf::l1_loss, "l1_loss"}};
  for (auto [f, name] : pairs) {
    const OpId op = find_op(name);
    b.binary(name, op, F, kNoCuda, -3, 3, -3, 3, [f](const Tensor& x, const Tensor& y) {
       return f(x, y, Reduction::Mean);
     }).magnitude = 4;
    b.binary(std::string(name) + "/none", op, F, kNoCuda, -3, 3, -3, 3, [f](const Tensor& x, const Tensor& y) {
       return f(x, y, Reduction::None);
     }).magnitude = 4;
  }
  b.binary("smooth_l1_loss", OpId::smooth_l1_loss, F, kNoCuda, -2, 2, -2, 2, [](const Tensor& x, const Tensor& y) {
     return nnf::smooth_l1_loss(x, y, Reduction::Sum, 0.7);
   }).magnitude = 8;
  b.binary("huber_loss", OpId::huber_loss, F, kNoCuda, -2, 2, -2, 2, [](const Tensor& x, const Tensor& y) {
     return nnf::huber_loss(x, y, Reduction::None, 1.3);
   }).magnitude = 2;
  b.add("binary_cross_entropy", OpId::binary_cross_entropy, F, kNoCuda,
        inputs({{{3, 4}, 0.05, 0.95}, {{3, 4}, 0, 1}, {{4}, 0.5, 2}}),
        run([](const Ins& in) { return nnf::binary_cross_entropy(in[0], in[1], in[2]); }))
      .magnitude = 2;
  b.add("binary_cross_entropy_with_logits", OpId::binary_cross_entropy_with_logits, F, kNoCuda,
        inputs({{{3, 4}, -4, 4}, {{3, 4}, 0, 1}, {{4}, 0.5, 2}, {{4}, 0.5, 3}}), run([](const Ins& in) {
          return nnf::binary_cross_entropy_with_logits(in[0], in[1], in[2], in[3], Reduction::None);
        }))
      .magnitude = 2;
  b.add("kl_div", OpId::kl_div, F, kNoCuda, inputs({{{3, 4}, -3, -0.1}, {{3, 4}, 0.05, 1}}),
        run([](const Ins& in) { return nnf::kl_div(in[0], in[1], Reduction::Sum); }))
      .magnitude = 4;
  b.add("kl_div/log_target", OpId::kl_div, F, kNoCuda, inputs({{{3, 4}, -3, -0.1}, {{3, 4}, -3, -0.1}}),
        run([](const Ins& in) { return nnf::kl_div(in[0], in[1], Reduction::None, true); }))
      .magnitude = 2;
}

void attention_dropout_check(const Tensor& r, ScalarType) {
  const std::vector<double> v = r.to(kFloat64).to_vector<double>();
  int64_t not_one = 0;
  for (double x : v) {
    if (!(x >= 0 && x <= 2.01)) throw Error("sdpa", "value out of range: " + std::to_string(x));
    not_one += std::abs(x - 1) > 0.02;
  }
  if (not_one < static_cast<int64_t>(v.size()) / 2) throw Error("sdpa", "dropout left most rows unchanged");
}

void add_attention_cases(Builder& b) {
  const Spec q{{2, 3, 4}, -1, 1}, k{{2, 5, 4}, -1, 1}, v{{2, 5, 3}, -2, 2};
  const Tensor keep = from_vector(std::vector<uint8_t>{1, 0, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1}, {3, 5}).to(kBool);
  b.add("cosine_similarity", OpId::cosine_similarity, A, kNoCuda, inputs({{{3, 4}, -3, 3}, {{4}, -3, 3}}),
        run([](const Ins& in) { return nnf::cosine_similarity(in[0], in[1], 1); }), kFloatPromote);
  b.add("scaled_dot_product_attention", OpId::scaled_dot_product_attention, F, kNoCuda, inputs({q, k, v}),
        run([](const Ins& in) { return nnf::scaled_dot_product_attention(in[0], in[1], in[2]); }))
      .magnitude = 2;
  b.add("scaled_dot_product_attention/bool_mask", OpId::scaled_dot_product_attention, F, kNoCuda,
        inputs({q, k, v}, {keep}),
        run([](const Ins& in) { return nnf::scaled_dot_product_attention(in[0], in[1], in[2], in[3]); }))
      .magnitude = 2;
  b.add("scaled_dot_product_attention/float_mask_scale", OpId::scaled_dot_product_attention, F, kNoCuda,
        inputs({q, k, v, {{3, 5}, -1, 1}}), run([](const Ins& in) {
          return nnf::scaled_dot_product_attention(in[0], in[1], in[2], in[3], 0.0, false, 0.7);
        }))
      .magnitude = 2;
  b.add("scaled_dot_product_attention/causal", OpId::scaled_dot_product_attention, F, kNoCuda, inputs({q, k, v}),
        run([](const Ins& in) { return nnf::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true); }))
      .magnitude = 2;
  // With values of one, an output is the dropped-out probability mass: in [0, 1 / (1 - p)], not all 1.
  b.add("scaled_dot_product_attention/dropout", OpId::scaled_dot_product_attention, F, kNoCuda,
        inputs({{{4, 6, 4}, -1, 1}, {{4, 6, 4}, -1, 1}, {{4, 6, 1}, 1, 1}}),
        run([](const Ins& in) { return nnf::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.5); }))
      .check = attention_dropout_check;
}

void add_conv_cases(Builder& b) {
  b.add("conv1d", OpId::conv1d, F, kNoCuda, inputs({{{2, 4, 7}, -2, 2}, {{6, 2, 3}, -1, 1}, {{6}, -1, 1}}),
        run([](const Ins& in) { return nnf::conv1d(in[0], in[1], in[2], 2, 1, 1, 2); }))
      .magnitude = 4;
  b.add("conv1d/dilated_unbatched", OpId::conv1d, F, kNoCuda, inputs({{{3, 8}, -2, 2}, {{2, 3, 2}, -1, 1}}),
        run([](const Ins& in) { return nnf::conv1d(in[0], in[1], {}, 1, 0, 3); }))
      .magnitude = 4;
  b.add("conv2d", OpId::conv2d, F, kNoCuda, inputs({{{2, 2, 5, 5}, -2, 2}, {{3, 2, 3, 3}, -1, 1}, {{3}, -1, 1}}),
        run([](const Ins& in) {
          return nnf::conv2d(in[0], in[1], in[2], {1, 2}, {1, 0});
        }))
      .magnitude = 4;
  b.add("conv2d/groups_dilation", OpId::conv2d, F, kNoCuda, inputs({{{1, 4, 6, 5}, -2, 2}, {{2, 2, 2, 2}, -1, 1}}),
        run([](const Ins& in) {
          return nnf::conv2d(in[0], in[1], {}, {2, 1}, {1, 1}, {2, 2}, 2);
        }))
      .magnitude = 4;
  b.add("im2col", OpId::im2col, F, kNoCuda, inputs({{{2, 3, 5, 4}, -3, 3}}), run([](const Ins& in) {
          return nnf::im2col(in[0], {2, 3}, {2, 1}, {1, 1}, {1, 2});
        }));
  b.add("im2col/1d", OpId::im2col, F, kNoCuda, inputs({{{2, 2, 9}, -3, 3}}),
        run([](const Ins& in) { return nnf::im2col(in[0], {3}, {2}, {1}, {2}); }));
  // kernel {2, 3}, stride {2, 1}, padding {1, 1}, dilation {1, 2} on 5 x 4: 3 x 2 blocks.
  b.add("col2im", OpId::col2im, F, kNoCuda, inputs({{{2, 12, 6}, -3, 3}}), run([](const Ins& in) {
          return nnf::col2im(in[0], {5, 4}, {2, 3}, {2, 1}, {1, 1}, {1, 2});
        }))
      .magnitude = 3;
  b.add("col2im/1d", OpId::col2im, F, kNoCuda, inputs({{{1, 6, 4}, -3, 3}}),
        run([](const Ins& in) { return nnf::col2im(in[0], {7}, {3}, {2}, {1}, {1}); }))
      .magnitude = 3;
}

}  // namespace

void add_nn_cases(Builder& b) {
  add_softmax_cases(b);
  add_norm_cases(b);
  add_dropout_cases(b);
  add_class_loss_cases(b);
  add_pair_loss_cases(b);
  add_attention_cases(b);
  add_conv_cases(b);
}

}  // namespace mixt::testing
