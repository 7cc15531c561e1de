// Op cases of the nn ops (runtime/ops/nn.h): every floating dtype against
// the references of reference_nn.h, small inputs for the float64 gradient checks,
// and a `check` for the random cases (dropout, attention dropout).
//
// Tolerances (Note [Tolerances in ulps]): the kernels and composites compute the
// narrow floats in float32 (float64 in float64) and round the result once, so
// every case allows half an ulp of the result's dtype plus `work` roundings of
// the compute type at `magnitude`, the size of the terms those roundings hit.
#include <cmath>

#include "op_case_builder.h"
#include "reference_margin.h"
#include "reference_nn.h"

namespace mixt::testing {
namespace {

namespace nnf = nn::functional;
using Ins = std::vector<Tensor>;
using nnf::Reduction;
using ref::Reduce;
using ref::Vec;

// The values of input i, or none when the case has no input i.
Vec opt_values(const Refs& in, size_t i) { return i < in.size() ? in[i].v : Vec{}; }

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
  auto softmax_ref = [](int64_t dim, bool log) {
    return [=](const Refs& in, ScalarType) { return ref::softmax(in[0], dim, log); };
  };
  // x - m is rounded in float at the size |x - m| <= span, which exp turns into a relative error of
  // span ulps; then exp (one ulp) and the product with 1 / sum (the sum in double, its inverse
  // rounded): span + 3 roundings relative to the result.
  auto sm = [](double span) { return Tolerance{0.5, span + 3}; };
  b.add("softmax", OpId::softmax, F, F, inputs({{{3, 5}, -3, 3}}),
        run([](const Ins& in) { return nnf::softmax(in[0], 1); }))
      .with(softmax_ref(1, false), sm(6));
  b.add("softmax/dim0_3d", OpId::softmax, F, F, inputs({{{3, 2, 4}, -6, 6}}),
        run([](const Ins& in) { return nnf::softmax(in[0], 0); }))
      .with(softmax_ref(0, false), sm(12));
  // The input is first converted to float32 (rounding float64 inputs: a relative change of 2^-24
  // in x, up to 6 of them in exp(x - m) for |x - m| <= 6).
  b.add("softmax/dtype", OpId::softmax, A, F, inputs({{{3, 5}, -3, 3}}),
        run([](const Ins& in) { return nnf::softmax(in[0], -1, kFloat32); }), kFloat32Out)
      .with(softmax_ref(-1, false), sm(12));
  // x - m - log(sum): the roundings are at the size of |x - m| + log(n) <= 6 + 2.
  b.add("log_softmax", OpId::log_softmax, F, F, inputs({{{3, 5}, -3, 3}}),
        run([](const Ins& in) { return nnf::log_softmax(in[0], -1); }))
      .with(softmax_ref(-1, true), {0.5, 3, 8});
  b.add("log_softmax/dim1_3d", OpId::log_softmax, F, F, inputs({{{2, 4, 3}, -8, 8}}),
        run([](const Ins& in) { return nnf::log_softmax(in[0], 1); }))
      .with(softmax_ref(1, true), {0.5, 3, 18});
}

void add_norm_cases(Builder& b) {
  // layer_norm and rms_norm: statistics and the affine map in double, one rounding (compute float64).
  const Tolerance in_double{0.5, 8, 4, kFloat64};
  b.add("layer_norm", OpId::layer_norm, F, F, inputs({{{2, 3, 4}, -2, 3}, {{3, 4}, 0.5, 1.5}, {{3, 4}, -1, 1}}),
        run([](const Ins& in) {
          return nnf::layer_norm(in[0], {3, 4}, in[1], in[2], 1e-3);
        }))
      .with([](const Refs& in, ScalarType) { return ref::layer_norm(in[0], 12, in[1].v, in[2].v, 1e-3); }, in_double);
  b.add("layer_norm/plain", OpId::layer_norm, F, F, inputs({{{3, 5}, -2, 2}}),
        run([](const Ins& in) { return nnf::layer_norm(in[0], {5}); }))
      .with([](const Refs& in, ScalarType) { return ref::layer_norm(in[0], 5, {}, {}, 1e-5); }, in_double);
  b.add("rms_norm", OpId::rms_norm, F, F, inputs({{{3, 5}, -2, 2}, {{5}, 0.5, 1.5}}),
        run([](const Ins& in) { return nnf::rms_norm(in[0], {5}, in[1], 1e-4); }))
      .with([](const Refs& in, ScalarType) { return ref::rms_norm(in[0], 5, in[1].v, 1e-4); }, in_double);
  // The default eps is the dtype's machine epsilon (torch.finfo(dtype).eps).
  b.add("rms_norm/default_eps", OpId::rms_norm, F, F, inputs({{{2, 2, 3}, -4, 4}}), run([](const Ins& in) {
          return nnf::rms_norm(in[0], {2, 3});
        }))
      .with([](const Refs& in, ScalarType dt) { return ref::rms_norm(in[0], 6, {}, epsilon_of(dt)); }, in_double);
  // group_norm: layer_norm in float32 (float64), then * w and + b: three roundings at |y w| + |b| <= 5.
  b.add("group_norm", OpId::group_norm, F, kNoCuda, inputs({{{2, 4, 3}, -2, 2}, {{4}, 0.5, 1.5}, {{4}, -1, 1}}),
        run([](const Ins& in) { return nnf::group_norm(in[0], 2, in[1], in[2], 1e-3); }))
      .with([](const Refs& in, ScalarType) { return ref::group_norm(in[0], 2, in[1].v, in[2].v, 1e-3); }, {0.5, 4, 5});
  // batch_norm: x - mean, var + eps, rsqrt (two roundings), the product, * w, + b: seven roundings at
  // |x - mean| rsqrt(var + eps) |w| + |b| <= 2.5 * 1.5 * 1.5 + 1.
  const Tolerance bn{0.5, 7, 7};
  b.add("batch_norm/eval", OpId::batch_norm, F, kNoCuda,
        inputs({{{3, 4, 2}, -2, 2}, {{4}, -0.5, 0.5}, {{4}, 0.5, 2}, {{4}, 0.5, 1.5}, {{4}, -1, 1}}),
        run([](const Ins& in) { return nnf::batch_norm(in[0], in[1], in[2], in[3], in[4], false); }))
      .with([](const Refs& in, ScalarType) {
        return ref::batch_norm(in[0], in[1].v, in[2].v, in[3].v, in[4].v, false, 1e-5);
      }, bn);
  // Training: the batch statistics come from mean and var (double, rounded once), then as above.
  b.add("batch_norm/train", OpId::batch_norm, F, kNoCuda, inputs({{{4, 3, 2}, -2, 2}, {{3}, 0.5, 1.5}, {{3}, -1, 1}}),
        run([](const Ins& in) {
          // The running statistics live on the input's device (a mixed-device call is refused).
          const TensorOptions o{.dtype = in[0].dtype(), .device = in[0].device()};
          return nnf::batch_norm(in[0], zeros({3}, o), ones({3}, o), in[1], in[2], true, 0.1, 1e-3);
        }))
      .with([](const Refs& in, ScalarType) { return ref::batch_norm(in[0], {}, {}, in[1].v, in[2].v, true, 1e-3); },
            {0.5, 9, 9});
}

// ---- the fused backward ops (Note [Fused backward ops]) ----

const OutRule kAccumulateOut = [](ScalarType dt) { return accumulate_type(dt); };

void add_softmax_backward_cases(Builder& b) {
  // y * (g - k) with k = sum(g y) in double rounded to the compute type (at |k| <= 5), then the
  // difference and the product: three roundings at |y| (|g| + |k|) <= 6.
  b.add("softmax_backward", OpId::softmax_backward, F, F, inputs({{{3, 5}, -1, 1}, {{3, 5}, 0, 1}}),
        run([](const Ins& in) { return nnf::softmax_backward(in[0], in[1], 1); }))
      .with([](const Refs& in, ScalarType) { return ref::softmax_backward(in[0], in[1], 1, false); }, {0.5, 3, 6});
  // Along an outer dim (the one-thread-per-line path on CUDA): |k| <= 3.
  b.add("softmax_backward/dim0_3d", OpId::softmax_backward, F, F, inputs({{{3, 2, 4}, -1, 1}, {{3, 2, 4}, 0, 1}}),
        run([](const Ins& in) { return nnf::softmax_backward(in[0], in[1], 0); }))
      .with([](const Refs& in, ScalarType) { return ref::softmax_backward(in[0], in[1], 0, false); }, {0.5, 3, 4});
  // g - exp(y) k with y <= 0 and k = sum(g) (|k| <= 5): k, exp (one libm ulp), the product and
  // the difference: four roundings at |g| + |k| <= 6.
  b.add("log_softmax_backward", OpId::log_softmax_backward, F, F, inputs({{{3, 5}, -1, 1}, {{3, 5}, -3, 0}}),
        run([](const Ins& in) { return nnf::log_softmax_backward(in[0], in[1], -1); }))
      .with([](const Refs& in, ScalarType) { return ref::softmax_backward(in[0], in[1], -1, true); }, {0.5, 4, 6});
  b.add("log_softmax_backward/dim1_3d", OpId::log_softmax_backward, F, F, inputs({{{2, 4, 3}, -1, 1}, {{2, 4, 3}, -3, 0}}),
        run([](const Ins& in) { return nnf::log_softmax_backward(in[0], in[1], 1); }))
      .with([](const Refs& in, ScalarType) { return ref::softmax_backward(in[0], in[1], 1, true); }, {0.5, 4, 5});
}

void add_activation_backward_cases(Builder& b) {
  auto times = [](std::function<double(double)> derivative) {
    return [derivative](const Refs& in, ScalarType) {
      return ref::zip(in[0], in[1], [&](double g, double x) { return g * derivative(x); });
    };
  };
  // Within 6 roundings of the compute type at |g| (|Phi| + |x phi|) <= 2 (1 + 0.25) (Note [Fused
  // backward ops]: the bound is in ulps of the terms, which cancel near x = -0.75).
  b.add("gelu_backward", OpId::gelu_backward, F, F, inputs({{{3, 5}, -2, 2}, {{3, 5}, -4, 4}}),
        run([](const Ins& in) { return nnf::gelu_backward(in[0], in[1]); }))
      .with(times([](double x) { return ref::gelu_derivative(x, false); }), {0.5, 6, 2.5});
  // The tanh form adds 4 |2z| roundings (|2z| <= 6.7 for |x| <= 3: z's rounding, through exp(2z)).
  b.add("gelu_backward/tanh", OpId::gelu_backward, F, F, inputs({{{3, 5}, -2, 2}, {{3, 5}, -3, 3}}),
        run([](const Ins& in) { return nnf::gelu_backward(in[0], in[1], "tanh"); }))
      .with(times([](double x) { return ref::gelu_derivative(x, true); }), {0.5, 33, 2.5});
  // s (1 + x (1 - s)): terms up to 1 + 0.3, times |g| <= 2.
  b.add("silu_backward", OpId::silu_backward, F, F, inputs({{{3, 5}, -2, 2}, {{3, 5}, -6, 6}}),
        run([](const Ins& in) { return nnf::silu_backward(in[0], in[1]); }))
      .with(times(ref::silu_derivative), {0.5, 6, 2.6});
}

// cross_entropy_rows and its backward (Note [Fused cross-entropy]). The class weight and
// grad_loss are fixed inputs (float64 values exact in float32) given in the logits'
// accumulate type; the weight is not a data operand (the op refuses a weight that requires
// grad), nor are the backward's lse and grad_loss.
const std::vector<double> kClassWeight{0.5, 1.5, 1, 2, 0.75};

void add_cross_entropy_rows_cases(Builder& b) {
  const Tensor t = index_tensor({2, -100, 4, 1}, {4});
  const Tensor w = from_vector(kClassWeight, {5});
  auto acc = [](const Tensor& v, ScalarType dt) { return v.to(accumulate_type(dt)); };
  // The loss in double from log(s) and the gaps (sums of terms that do not cancel), with
  // exp(x - m) in the work type: |x - m| <= 6 plus 4 roundings at w (|lse| + 6) <= 2 * 8.
  b.add("cross_entropy_rows", OpId::cross_entropy_rows, F, F, inputs({{{4, 5}, -3, 3}}, {t}),
        run([](const Ins& in) { return nnf::cross_entropy_rows(in[0], in[1]).loss; }), kAccumulateOut)
      .with([](const Refs& in, ScalarType) { return ref::cross_entropy(in[0], in[1], {}, -100, Reduce::None, 0); },
            {0.5, 10, 16});
  b.add("cross_entropy_rows/weight_smoothing_int32", OpId::cross_entropy_rows, F, F,
        inputs({{{4, 5}, -3, 3}}, {t.to(kInt32), w}),
        [acc](const Ins& in, ScalarType dt, Device) {
          return nnf::cross_entropy_rows(in[0], in[1], acc(in[2], dt), -100, 0.2).loss;
        },
        kAccumulateOut)
      .with([](const Refs& in, ScalarType) { return ref::cross_entropy(in[0], in[1], in[2].v, -100, Reduce::None, 0.2); },
            {0.5, 10, 16});
  // lse is not differentiable (it comes back detached): no data operand for the gradient check.
  const auto plain = inputs({{{4, 5}, -3, 3}}, {t});
  b.add("cross_entropy_rows/lse", OpId::cross_entropy_rows, F, F,
        [plain](ScalarType dt) {
          CaseInputs ci = plain(dt);
          ci.data = 0;
          return ci;
        },
        run([](const Ins& in) { return nnf::cross_entropy_rows(in[0], in[1]).lse; }), kAccumulateOut)
      .with([](const Refs& in, ScalarType) { return ref::logsumexp_rows(in[0]); }, {0.5, 10, 8});
  // grad_loss, logits, target, lse (from the stored logits in double, rounded to the
  // accumulate type), weight.
  auto backward_inputs = [t, w, acc](bool weighted) {
    return [=](ScalarType dt) {
      CaseInputs ci;
      ci.data = 0b10;
      const Tensor x = data(dt, {4, 5}, -3, 3, 41);
      const ref::Ref lse = ref::logsumexp_rows({{4, 5}, x.to(kFloat64).to_vector<double>()});
      ci.in = {acc(data(kFloat64, {4}, -2, 2, 40), dt), x, t, acc(from_vector(lse.v, {4}), dt)};
      if (weighted) ci.in.push_back(acc(w, dt));
      return ci;
    };
  };
  // g (A p - a): lse's rounding and x - lse (|.| <= 8 + 6) move p by that many roundings, at
  // |g| (A p + a) <= 2 (2 + 2).
  b.add("cross_entropy_rows_backward", OpId::cross_entropy_rows_backward, F, F, backward_inputs(false),
        run([](const Ins& in) { return nnf::cross_entropy_rows_backward(in[0], in[1], in[2], in[3]); }))
      .with([](const Refs& in, ScalarType) { return ref::cross_entropy_rows_grad(in[0], in[1], in[2], {}, -100, 0); },
            {0.5, 24, 8});
  b.add("cross_entropy_rows_backward/weight_smoothing", OpId::cross_entropy_rows_backward, F, F, backward_inputs(true),
        run([](const Ins& in) {
          return nnf::cross_entropy_rows_backward(in[0], in[1], in[2], in[3], in[4], -100, 0.2);
        }))
      .with([](const Refs& in, ScalarType) {
        return ref::cross_entropy_rows_grad(in[0], in[1], in[2], in[4].v, -100, 0.2);
      }, {0.5, 24, 8});
}

constexpr double kNormEps = 1e-5;

// grad_y and x (data in dt) over `normalized` trailing dims, the statistics of x as layer_norm
// (or rms_norm) stores them (computed here in double from x's stored values, rounded to dt's
// accumulate type), then the weight (data) when `weight`.
std::function<CaseInputs(ScalarType)> norm_backward_inputs(Shape x_shape, int k, bool rms, bool weight) {
  return [=](ScalarType dt) {
    CaseInputs ci;
    ci.data = 3;
    ci.in.push_back(data(dt, x_shape, -1, 1, 40));
    const Tensor x = data(dt, x_shape, -2, 2, 41);
    ci.in.push_back(x);
    Shape stats, normalized;
    for (int d = 0; d < x_shape.size(); ++d) (d < x_shape.size() - k ? stats : normalized).push_back(x_shape[d]);
    const int64_t cols = normalized.numel(), rows = stats.numel();
    const std::vector<double> xv = x.to(kFloat64).to_vector<double>();
    std::vector<double> mean(static_cast<size_t>(rows)), rstd(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      double m = 0, v = 0;
      for (int64_t j = 0; j < cols && !rms; ++j) m += xv[static_cast<size_t>(r * cols + j)] / static_cast<double>(cols);
      for (int64_t j = 0; j < cols; ++j) {
        const double d = xv[static_cast<size_t>(r * cols + j)] - m;
        v += d * d / static_cast<double>(cols);
      }
      mean[static_cast<size_t>(r)] = m;
      rstd[static_cast<size_t>(r)] = 1 / std::sqrt(v + kNormEps);
    }
    const ScalarType st = accumulate_type(dt);
    if (!rms) ci.in.push_back(from_vector(mean, stats).to(st));
    ci.in.push_back(from_vector(rstd, stats).to(st));
    if (weight) {
      ci.data |= 1u << ci.in.size();
      ci.in.push_back(data(dt, normalized, 0.5, 1.5, 44));
    }
    return ci;
  };
}

void add_norm_backward_cases(Builder& b) {
  // grad_x = rstd (gw - xhat mean(gw xhat) - mean(gw)) in double from statistics stored in float32
  // (float64 for float64): their rounding moves the result by a few float32 ulps of the terms
  // rstd |gw| + rstd |xhat| |mean(gw xhat)| <= 2 * (1.5 + 5 * 7.5) ~ 80; |xhat| <= 5 (|x - mean| <= 3,
  // rstd <= 1.6 for these inputs).
  const Tolerance input_tol{0.5, 6, 80};
  // The column sums in double, rounded to the accumulate type (half an ulp of it); the statistics'
  // rounding moves each of the `rows` terms |g xhat| <= 5 by a float32 ulp or two.
  auto column_tol = [](double rows) { return Tolerance{0.5, 3, 5 * rows}; };
  using NG = nnf::NormGradsWanted;
  auto layer = [](int which, const Shape& normalized, bool weight) {
    return [=](const Ins& in) {
      const nnf::NormGrads r = nnf::layer_norm_backward(in[0], in[1], normalized, in[2], in[3],
                                                        weight ? in[4] : Tensor(), NG{which == 0, which == 1, which == 2});
      return which == 0 ? r.input : which == 1 ? r.weight : r.bias;
    };
  };
  auto rms = [](int which, const Shape& normalized, bool weight) {
    return [=](const Ins& in) {
      const nnf::NormGrads r =
          nnf::rms_norm_backward(in[0], in[1], normalized, in[2], weight ? in[3] : Tensor(), NG{which == 0, which == 1});
      return which == 0 ? r.input : r.weight;
    };
  };
  // The reference of output `which`; the weight and bias gradients have the normalized shape.
  auto norm_ref = [](ref::Sizes normalized, bool rms_norm, bool weight, int which) {
    return [=](const Refs& in, ScalarType) {
      int64_t cols = 1;
      for (int64_t s : normalized) cols *= s;
      const ref::Ref r = ref::norm_backward(in[0], in[1], cols, weight ? in[rms_norm ? 3 : 4].v : ref::Vec{},
                                            kNormEps, rms_norm, which);
      return which == 0 ? r : ref::reshape(r, normalized);
    };
  };
  b.add("layer_norm_backward", OpId::layer_norm_backward, F, F, norm_backward_inputs({2, 3, 4}, 2, false, true),
        run(layer(0, {3, 4}, true)))
      .with(norm_ref({3, 4}, false, true, 0), input_tol);
  b.add("layer_norm_backward/plain", OpId::layer_norm_backward, F, F, norm_backward_inputs({3, 5}, 1, false, false),
        run(layer(0, {5}, false)))
      .with(norm_ref({5}, false, false, 0), input_tol);
  b.add("layer_norm_backward/weight", OpId::layer_norm_backward, F, F, norm_backward_inputs({2, 3, 4}, 2, false, true),
        run(layer(1, {3, 4}, true)), kAccumulateOut)
      .with(norm_ref({3, 4}, false, true, 1), column_tol(2));
  b.add("layer_norm_backward/bias", OpId::layer_norm_backward, F, F, norm_backward_inputs({2, 3, 4}, 2, false, true),
        run(layer(2, {3, 4}, true)), kAccumulateOut)
      .with(norm_ref({3, 4}, false, true, 2), {0.5, 0});
  // 70 rows: three chunks of the column sums' plan (backward_math::column_chunks).
  b.add("layer_norm_backward/weight_chunks", OpId::layer_norm_backward, F, F,
        norm_backward_inputs({70, 3}, 1, false, false), run(layer(1, {3}, false)), kAccumulateOut)
      .with(norm_ref({3}, false, false, 1), column_tol(70));
  b.add("rms_norm_backward", OpId::rms_norm_backward, F, F, norm_backward_inputs({3, 5}, 1, true, true),
        run(rms(0, {5}, true)))
      .with(norm_ref({5}, true, true, 0), input_tol);
  b.add("rms_norm_backward/weight", OpId::rms_norm_backward, F, F, norm_backward_inputs({2, 2, 3}, 2, true, true),
        run(rms(1, {2, 3}, true)), kAccumulateOut)
      .with(norm_ref({2, 3}, true, true, 1), column_tol(2));
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
    // Within 5 standard errors of p: sqrt(p (1 - p) / n).
    const double n = static_cast<double>(v.size()), frac = static_cast<double>(zeros_seen) / n;
    if (std::abs(frac - p) > 5 * std::sqrt(p * (1 - p) / n)) throw Error("dropout", "zero fraction " + std::to_string(frac));
  };
}

void add_dropout_cases(Builder& b) {
  b.add("dropout/eval", OpId::dropout, F, kNoCuda, inputs({{{3, 4}, -2, 2}}),
        run([](const Ins& in) { return nnf::dropout(in[0], 0.5, false); }))
      .with([](const Refs& in, ScalarType) { return in[0]; }, kExact);
  // An input of ones (a constant spec): kept values are exactly 1 / (1 - p) in the dtype. A fixed seed.
  b.add("dropout/train", OpId::dropout, F, kNoCuda, inputs({{{2000}, 1, 1}}), run([](const Ins& in) {
          Generator g(1234);
          return nnf::dropout(in[0], 0.25, true, &g);
        }))
      .check = dropout_check(0.25);
}

// Reduction as the reference's enum.
Reduce as_reduce(Reduction r) { return r == Reduction::None ? Reduce::None : r == Reduction::Mean ? Reduce::Mean : Reduce::Sum; }

void add_class_loss_cases(Builder& b) {
  const Tensor t4 = index_tensor({2, 0, 4, 1}, {4});
  // log_softmax in float32 (float64), then picked, weighted and summed (sums in double, rounded):
  // roundings at the size of the log-probabilities, |x - m| + log(C) <= 6 + 2, times the weights.
  b.add("cross_entropy", OpId::cross_entropy, F, kNoCuda, inputs({{{4, 5}, -3, 3}}, {t4}),
        run([](const Ins& in) { return nnf::cross_entropy(in[0], in[1]); }))
      .with([](const Refs& in, ScalarType) { return ref::cross_entropy(in[0], in[1], {}, -100, Reduce::Mean, 0); },
            {0.5, 4, 8});
  b.add("cross_entropy/weight_ignore_smoothing", OpId::cross_entropy, F, kNoCuda,
        inputs({{{4, 5}, -3, 3}, {{5}, 0.5, 2}}, {index_tensor({2, -1, 4, 1}, {4}).to(kInt32)}),
        run([](const Ins& in) { return nnf::cross_entropy(in[0], in[2], in[1], -1, Reduction::Mean, 0.2); }))
      .with([](const Refs& in, ScalarType) { return ref::cross_entropy(in[0], in[2], in[1].v, -1, Reduce::Mean, 0.2); },
            {0.5, 8, 16});
  b.add("cross_entropy/probs", OpId::cross_entropy, F, kNoCuda, inputs({{{3, 4}, -3, 3}, {{3, 4}, 0, 1}}),
        run([](const Ins& in) { return nnf::cross_entropy(in[0], in[1], {}, -100, Reduction::Sum, 0.1); }))
      .with([](const Refs& in, ScalarType) { return ref::cross_entropy_probs(in[0], in[1], {}, Reduce::Sum, 0.1); },
            {0.5, 6, 96});  // 12 terms |t logp| <= 8
  b.add("cross_entropy/spatial_none", OpId::cross_entropy, F, kNoCuda,
        inputs({{{2, 3, 2}, -3, 3}}, {index_tensor({0, 2, 1, 1}, {2, 2})}),
        run([](const Ins& in) { return nnf::cross_entropy(in[0], in[1], {}, -100, Reduction::None); }))
      .with([](const Refs& in, ScalarType) { return ref::cross_entropy(in[0], in[1], {}, -100, Reduce::None, 0); },
            {0.5, 4, 8});
  b.add("cross_entropy/unbatched", OpId::cross_entropy, F, kNoCuda,
        inputs({{{5}, -3, 3}}, {index_tensor({3}, {1}).view(Shape{})}),
        run([](const Ins& in) { return nnf::cross_entropy(in[0], in[1]); }))
      .with([](const Refs& in, ScalarType) { return ref::cross_entropy(in[0], in[1], {}, -100, Reduce::Mean, 0); },
            {0.5, 4, 8});
  // -input[t], summed (and divided): exact up to the rounding of a sum of 4 terms <= 3 (weighted: <= 6).
  b.add("nll_loss", OpId::nll_loss, F, kNoCuda, inputs({{{4, 5}, -3, -0.1}}, {t4}),
        run([](const Ins& in) { return nnf::nll_loss(in[0], in[1]); }))
      .with([](const Refs& in, ScalarType) { return ref::cross_entropy(in[0], in[1], {}, -100, Reduce::Mean, 0, true); },
            {0.5, 3, 3});
  b.add("nll_loss/weight_sum", OpId::nll_loss, F, kNoCuda, inputs({{{4, 5}, -3, -0.1}, {{5}, 0.5, 2}}, {t4}),
        run([](const Ins& in) { return nnf::nll_loss(in[0], in[2], in[1], 0, Reduction::Sum); }))
      .with([](const Refs& in, ScalarType) { return ref::cross_entropy(in[0], in[2], in[1].v, 0, Reduce::Sum, 0, true); },
            {0.5, 5, 24});
}

void add_pair_loss_cases(Builder& b) {
  using Pair = Tensor (*)(const Tensor&, const Tensor&, Reduction);
  const std::pair<Pair, const char*> pairs[] = {{nnf::mse_loss, "mse_loss"}, {nnf::l1_loss, "l1_loss"}};
  for (auto [f, name] : pairs) {
    const OpId op = find_op(name);
    const std::string kind = std::string(name) == "mse_loss" ? "mse" : "l1";
    // The difference, its square (or |.|), then a mean of 12 terms <= 36 (l1: <= 6).
    const double term = kind == "mse" ? 36 : 6;
    b.binary(name, op, F, kNoCuda, -3, 3, -3, 3, [f](const Tensor& x, const Tensor& y) {
       return f(x, y, Reduction::Mean);
     }).with([kind](const Refs& in, ScalarType) { return ref::pair_loss(kind, in[0], in[1], Reduce::Mean); },
             {0.5, 4, term});
    b.binary(std::string(name) + "/none", op, F, kNoCuda, -3, 3, -3, 3, [f](const Tensor& x, const Tensor& y) {
       return f(x, y, Reduction::None);
     }).with([kind](const Refs& in, ScalarType) { return ref::pair_loss(kind, in[0], in[1], Reduce::None); },
             {0.5, 3});
  }
  // Per element: |d|, d * d * 0.5 / beta or |d| - beta / 2, then the sum of 12 terms <= 4.
  b.binary("smooth_l1_loss", OpId::smooth_l1_loss, F, kNoCuda, -2, 2, -2, 2, [](const Tensor& x, const Tensor& y) {
     return nnf::smooth_l1_loss(x, y, Reduction::Sum, 0.7);
   }).with([](const Refs& in, ScalarType) { return ref::pair_loss("smooth_l1", in[0], in[1], Reduce::Sum, 0.7); },
           {0.5, 6, 48});
  b.binary("huber_loss", OpId::huber_loss, F, kNoCuda, -2, 2, -2, 2, [](const Tensor& x, const Tensor& y) {
     return nnf::huber_loss(x, y, Reduction::None, 1.3);
   }).with([](const Refs& in, ScalarType) { return ref::pair_loss("huber", in[0], in[1], Reduce::None, 1.3); },
           {0.5, 4, 6});  // delta * (|d| - delta / 2) cancels: roundings at delta |d| <= 5.2
  // Logs clamped at -100 (here >= -3), a weighted mean of 12 terms <= 2 * 3.
  b.add("binary_cross_entropy", OpId::binary_cross_entropy, F, kNoCuda,
        inputs({{{3, 4}, 0.05, 0.95}, {{3, 4}, 0, 1}, {{4}, 0.5, 2}}),
        run([](const Ins& in) { return nnf::binary_cross_entropy(in[0], in[1], in[2]); }))
      .with([](const Refs& in, ScalarType) { return ref::binary_cross_entropy(in[0], in[1], &in[2], Reduce::Mean); },
            {0.5, 8, 6});
  // (1 - y) x + (1 + (pw - 1) y) softplus(-x), times w: the two terms cancel, roundings at
  // w (|x| + pw softplus(-x)) <= 2 * (4 + 3 * 4.02).
  b.add("binary_cross_entropy_with_logits", OpId::binary_cross_entropy_with_logits, F, kNoCuda,
        inputs({{{3, 4}, -4, 4}, {{3, 4}, 0, 1}, {{4}, 0.5, 2}, {{4}, 0.5, 3}}), run([](const Ins& in) {
          return nnf::binary_cross_entropy_with_logits(in[0], in[1], in[2], in[3], Reduction::None);
        }))
      .with([](const Refs& in, ScalarType) { return ref::bce_with_logits(in[0], in[1], &in[2], &in[3], Reduce::None); },
            {0.5, 8, 33});
  // t (log t - x): a sum of 12 terms <= 1 * (3 + 3).
  b.add("kl_div", OpId::kl_div, F, kNoCuda, inputs({{{3, 4}, -3, -0.1}, {{3, 4}, 0.05, 1}}),
        run([](const Ins& in) { return nnf::kl_div(in[0], in[1], Reduction::Sum); }))
      .with([](const Refs& in, ScalarType) { return ref::kl_div(in[0], in[1], Reduce::Sum, false); }, {0.5, 6, 72});
  // exp(t) (t - x): t - x cancels, roundings at |t| + |x| <= 6.
  b.add("kl_div/log_target", OpId::kl_div, F, kNoCuda, inputs({{{3, 4}, -3, -0.1}, {{3, 4}, -3, -0.1}}),
        run([](const Ins& in) { return nnf::kl_div(in[0], in[1], Reduction::None, true); }))
      .with([](const Refs& in, ScalarType) { return ref::kl_div(in[0], in[1], Reduce::None, true); }, {0.5, 3, 6});
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
  // The norms (double), two quotients, the products and their sum: roundings at the size 1 of the
  // normalized terms' sum.
  b.add("cosine_similarity", OpId::cosine_similarity, A, kNoCuda, inputs({{{3, 4}, -3, 3}, {{4}, -3, 3}}),
        run([](const Ins& in) { return nnf::cosine_similarity(in[0], in[1], 1); }), kFloatPromote)
      .with([](const Refs& in, ScalarType) { return ref::cosine_similarity(in[0], in[1], 1, 1e-8); }, {0.5, 8, 1});
  // Scores (4 products <= 1, scaled), softmax, then 5 products with |v| <= 2: roundings at the size 2
  // of the output's terms, about 12 of them.
  const Tolerance att{0.5, 12, 2};
  const double scale = 0.5;  // 1 / sqrt(E), E = 4
  b.add("scaled_dot_product_attention", OpId::scaled_dot_product_attention, F, kNoCuda, inputs({q, k, v}),
        run([](const Ins& in) { return nnf::scaled_dot_product_attention(in[0], in[1], in[2]); }))
      .with([=](const Refs& in, ScalarType) { return ref::attention(in[0], in[1], in[2], scale, nullptr, nullptr, false); },
            att);
  b.add("scaled_dot_product_attention/bool_mask", OpId::scaled_dot_product_attention, F, kNoCuda,
        inputs({q, k, v}, {keep}),
        run([](const Ins& in) { return nnf::scaled_dot_product_attention(in[0], in[1], in[2], in[3]); }))
      .with([=](const Refs& in, ScalarType) { return ref::attention(in[0], in[1], in[2], scale, &in[3], nullptr, false); },
            att);
  b.add("scaled_dot_product_attention/float_mask_scale", OpId::scaled_dot_product_attention, F, kNoCuda,
        inputs({q, k, v, {{3, 5}, -1, 1}}), run([](const Ins& in) {
          return nnf::scaled_dot_product_attention(in[0], in[1], in[2], in[3], 0.0, false, 0.7);
        }))
      .with([](const Refs& in, ScalarType) { return ref::attention(in[0], in[1], in[2], 0.7, nullptr, &in[3], false); },
            att);
  b.add("scaled_dot_product_attention/causal", OpId::scaled_dot_product_attention, F, kNoCuda, inputs({q, k, v}),
        run([](const Ins& in) { return nnf::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true); }))
      .with([=](const Refs& in, ScalarType) { return ref::attention(in[0], in[1], in[2], scale, nullptr, nullptr, true); },
            att);
  // With values of one, an output is the dropped-out probability mass: in [0, 1 / (1 - p)], not all 1.
  b.add("scaled_dot_product_attention/dropout", OpId::scaled_dot_product_attention, F, kNoCuda,
        inputs({{{4, 6, 4}, -1, 1}, {{4, 6, 4}, -1, 1}, {{4, 6, 1}, 1, 1}}), run([](const Ins& in) {
          Generator g(4321);
          return nnf::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.5, false, std::nullopt, &g);
        }))
      .check = attention_dropout_check;
}

void add_conv_cases(Builder& b) {
  using ref::ConvGeom;
  // im2col (exact), a float32 (float64) product over C / groups * K taps with |x| <= 2, |w| <= 1,
  // then the bias: one rounding per tap at the size of the sum of |products| (2 per tap) + 1.
  auto conv_tol = [](double taps) { return Tolerance{0.5, taps + 1, 2 * taps + 1}; };
  // 1-D cases as 2-D ones of height 1.
  auto as_2d = [](const ref::Ref& r) {
    ref::Sizes s = r.sizes;
    s.insert(s.end() - 1, 1);
    return ref::reshape(r, s);
  };
  auto drop_h = [](ref::Ref r) {
    r.sizes.erase(r.sizes.end() - 2);
    return r;
  };
  b.add("conv1d", OpId::conv1d, F, kNoCuda, inputs({{{2, 4, 7}, -2, 2}, {{6, 2, 3}, -1, 1}, {{6}, -1, 1}}),
        run([](const Ins& in) { return nnf::conv1d(in[0], in[1], in[2], 2, 1, 1, 2); }))
      .with([=](const Refs& in, ScalarType) {
        return drop_h(ref::conv2d(as_2d(in[0]), as_2d(in[1]), in[2].v, ConvGeom{.sw = 2, .pw = 1, .groups = 2}));
      }, conv_tol(6));
  b.add("conv1d/dilated_unbatched", OpId::conv1d, F, kNoCuda, inputs({{{3, 8}, -2, 2}, {{2, 3, 2}, -1, 1}}),
        run([](const Ins& in) { return nnf::conv1d(in[0], in[1], {}, 1, 0, 3); }))
      .with([=](const Refs& in, ScalarType) {
        const ref::Ref x = ref::unsqueeze(in[0], 0);
        ref::Ref y = drop_h(ref::conv2d(as_2d(x), as_2d(in[1]), {}, ConvGeom{.dw = 3}));
        y.sizes.erase(y.sizes.begin());
        return y;
      }, conv_tol(6));
  b.add("conv2d", OpId::conv2d, F, kNoCuda, inputs({{{2, 2, 5, 5}, -2, 2}, {{3, 2, 3, 3}, -1, 1}, {{3}, -1, 1}}),
        run([](const Ins& in) {
          return nnf::conv2d(in[0], in[1], in[2], {1, 2}, {1, 0});
        }))
      .with([](const Refs& in, ScalarType) {
        return ref::conv2d(in[0], in[1], in[2].v, ConvGeom{.sh = 1, .sw = 2, .ph = 1, .pw = 0});
      }, conv_tol(18));
  b.add("conv2d/groups_dilation", OpId::conv2d, F, kNoCuda, inputs({{{1, 4, 6, 5}, -2, 2}, {{2, 2, 2, 2}, -1, 1}}),
        run([](const Ins& in) {
          return nnf::conv2d(in[0], in[1], {}, {2, 1}, {1, 1}, {2, 2}, 2);
        }))
      .with([](const Refs& in, ScalarType) {
        return ref::conv2d(in[0], in[1], {}, ConvGeom{.sh = 2, .sw = 1, .ph = 1, .pw = 1, .dh = 2, .dw = 2, .groups = 2});
      }, conv_tol(8));
  b.add("im2col", OpId::im2col, F, F, inputs({{{2, 3, 5, 4}, -3, 3}}), run([](const Ins& in) {
          return nnf::im2col(in[0], {2, 3}, {2, 1}, {1, 1}, {1, 2});
        }))
      .with([](const Refs& in, ScalarType) {
        return ref::im2col(in[0], 2, 3, ConvGeom{.sh = 2, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 2});
      }, kExact);
  b.add("im2col/1d", OpId::im2col, F, kNoCuda, inputs({{{2, 2, 9}, -3, 3}}),
        run([](const Ins& in) { return nnf::im2col(in[0], {3}, {2}, {1}, {2}); }))
      .with([=](const Refs& in, ScalarType) { return ref::im2col(as_2d(in[0]), 1, 3, ConvGeom{.sw = 2, .pw = 1, .dw = 2}); },
            kExact);
  // kernel {2, 3}, stride {2, 1}, padding {1, 1}, dilation {1, 2} on 5 x 4: 3 x 2 blocks. Overlaps are
  // summed in double and rounded once (at most 6 terms <= 3).
  const Tolerance overlap{0.5, 6, 18, kFloat64};
  b.add("col2im", OpId::col2im, F, F, inputs({{{2, 12, 6}, -3, 3}}), run([](const Ins& in) {
          return nnf::col2im(in[0], {5, 4}, {2, 3}, {2, 1}, {1, 1}, {1, 2});
        }))
      .with([](const Refs& in, ScalarType) {
        return ref::col2im(in[0], 5, 4, 2, 3, ConvGeom{.sh = 2, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 2});
      }, overlap);
  b.add("col2im/1d", OpId::col2im, F, kNoCuda, inputs({{{1, 6, 4}, -3, 3}}),
        run([](const Ins& in) { return nnf::col2im(in[0], {7}, {3}, {2}, {1}, {1}); }))
      .with([=](const Refs& in, ScalarType) {
        return drop_h(ref::col2im(in[0], 1, 7, 1, 3, ConvGeom{.sw = 2, .pw = 1}));
      }, overlap);
}

// The margin, embedding and Poisson losses (kernels/composite/losses.cpp). Per-element terms take a few
// float32 (float64) roundings at their size; sums and means accumulate in double and round once.
void add_margin_loss_cases(Builder& b) {
  // exp(x) - t x: exp (one ulp) and two roundings at <= 16.
  b.add("poisson_nll_loss", OpId::poisson_nll_loss, F, kNoCuda, inputs({{{3, 4}, -2, 2}, {{3, 4}, 0, 4}}),
        run([](const Ins& in) { return nnf::poisson_nll_loss(in[0], in[1], true, false, 1e-8, Reduction::None); }))
      .with([](const Refs& in, ScalarType) { return ref::poisson_nll_loss(in[0], in[1], true, false, 1e-8, Reduce::None); },
            {0.5, 3, 16});
  // x - t log(x + eps) and Stirling's term where t > 1: about 8 roundings at <= 16 in each of 12 terms.
  b.add("poisson_nll_loss/full_sum", OpId::poisson_nll_loss, F, kNoCuda, inputs({{{3, 4}, 0.5, 3}, {{3, 4}, 0, 4}}),
        run([](const Ins& in) { return nnf::poisson_nll_loss(in[0], in[1], false, true, 1e-8, Reduction::Sum); }))
      .with([](const Refs& in, ScalarType) { return ref::poisson_nll_loss(in[0], in[1], false, true, 1e-8, Reduce::Sum); },
            {0.5, 8, 192});
  // Products of |x| <= 2 summed over 5 columns, the norms' product (<= 400), its root, the quotient: cos off by
  // about a dozen roundings of its size 1, then 1 - cos or cos - margin.
  const Tensor pm = index_tensor({1, -1, 1, -1}, {4});
  b.add("cosine_embedding_loss", OpId::cosine_embedding_loss, F, kNoCuda, inputs({{{4, 5}, -2, 2}, {{4, 5}, -2, 2}}, {pm}),
        run([](const Ins& in) { return nnf::cosine_embedding_loss(in[0], in[1], in[2], -0.2); }))
      .with([](const Refs& in, ScalarType) { return ref::cosine_embedding_loss(in[0], in[1], in[2], -0.2, Reduce::Mean); },
            {0.5, 16, 2});
  b.add("cosine_embedding_loss/single", OpId::cosine_embedding_loss, F, kNoCuda,
        inputs({{{5}, -2, 2}, {{5}, -2, 2}}, {index_tensor({1}, {1}).view(Shape{})}),
        run([](const Ins& in) { return nnf::cosine_embedding_loss(in[0], in[1], in[2], 0.0, Reduction::None); }))
      .with([](const Refs& in, ScalarType) { return ref::cosine_embedding_loss(in[0], in[1], in[2], 0.0, Reduce::None); },
            {0.5, 16, 2});
  // margin - x and a sum: two roundings at <= 5 in each of 12 terms (a target 0 keeps both terms).
  b.add("hinge_embedding_loss", OpId::hinge_embedding_loss, F, kNoCuda,
        inputs({{{3, 4}, -2, 2}}, {index_tensor({1, -1, -1, 1, 0, 1, -1, -1, 1, 1, -1, 1}, {3, 4})}),
        run([](const Ins& in) { return nnf::hinge_embedding_loss(in[0], in[1], 1.5, Reduction::Sum); }))
      .with([](const Refs& in, ScalarType) { return ref::hinge_embedding_loss(in[0], in[1], 1.5, Reduce::Sum); },
            {0.5, 2, 60});
  // x1 - x2, times -t, plus margin: three roundings at <= 5, a mean of 12.
  b.add("margin_ranking_loss", OpId::margin_ranking_loss, F, kNoCuda,
        inputs({{{3, 4}, -2, 2}, {{3, 4}, -2, 2}, {{3, 4}, -1, 1}}),
        run([](const Ins& in) { return nnf::margin_ranking_loss(in[0], in[1], in[2], 0.3); }))
      .with([](const Refs& in, ScalarType) { return ref::margin_ranking_loss(in[0], in[1], in[2], 0.3, Reduce::Mean); },
            {0.5, 4, 5});
  // a - b + eps (two roundings at <= 3 in each of 5 coordinates), the norm (one rounding at <= 7), the
  // difference of two distances and the margin.
  const Tolerance triplet{0.5, 24, 8};
  b.add("triplet_margin_loss", OpId::triplet_margin_loss, F, kNoCuda,
        inputs({{{3, 5}, -1.5, 1.5}, {{3, 5}, -1.5, 1.5}, {{3, 5}, -1.5, 1.5}}),
        run([](const Ins& in) { return nnf::triplet_margin_loss(in[0], in[1], in[2], 1.0); }))
      .with([](const Refs& in, ScalarType) {
        return ref::triplet_margin_loss(in[0], in[1], in[2], 1.0, 2.0, 1e-6, false, Reduce::Mean);
      }, triplet);
  b.add("triplet_margin_loss/swap_p1", OpId::triplet_margin_loss, F, kNoCuda,
        inputs({{{3, 5}, -1.5, 1.5}, {{3, 5}, -1.5, 1.5}, {{3, 5}, -1.5, 1.5}}), run([](const Ins& in) {
          return nnf::triplet_margin_loss(in[0], in[1], in[2], 2.0, 1.0, 1e-6, true, Reduction::None);
        }))
      .with([](const Refs& in, ScalarType) {
        return ref::triplet_margin_loss(in[0], in[1], in[2], 2.0, 1.0, 1e-6, true, Reduce::None);
      }, triplet);
  // Per sample up to 8 hinges 1 - x[y] + x[i] (two roundings at <= 4), summed, / C. Row 2 repeats a class, row 3
  // lists every class (no hinge is left).
  const Tensor labels = index_tensor({3, 0, -1, 1, 2, 2, -1, 0, 0, 1, 2, 3}, {3, 4});
  b.add("multilabel_margin_loss", OpId::multilabel_margin_loss, F, kNoCuda, inputs({{{3, 4}, -1.5, 1.5}}, {labels}),
        run([](const Ins& in) { return nnf::multilabel_margin_loss(in[0], in[1], Reduction::None); }))
      .with([](const Refs& in, ScalarType) { return ref::multilabel_margin_loss(in[0], in[1], Reduce::None); },
            {0.5, 6, 8});
  b.add("multilabel_margin_loss/single", OpId::multilabel_margin_loss, F, kNoCuda,
        inputs({{{4}, -1.5, 1.5}}, {index_tensor({2, -1, 0, 0}, {4})}),
        run([](const Ins& in) { return nnf::multilabel_margin_loss(in[0], in[1]); }))
      .with([](const Refs& in, ScalarType) { return ref::multilabel_margin_loss(in[0], in[1], Reduce::Mean); },
            {0.5, 6, 8});
  // t x (one rounding at <= 3), softplus (a few ulps at <= 3.1), a mean of 12.
  b.add("soft_margin_loss", OpId::soft_margin_loss, F, kNoCuda, inputs({{{3, 4}, -3, 3}, {{3, 4}, -1, 1}}),
        run([](const Ins& in) { return nnf::soft_margin_loss(in[0], in[1]); }))
      .with([](const Refs& in, ScalarType) { return ref::soft_margin_loss(in[0], in[1], Reduce::Mean); }, {0.5, 4, 4});
  // x[i] - x[y] + margin (two roundings at <= 4), / C, a mean of 4.
  const Tensor classes = index_tensor({0, 3, 4, 1}, {4});
  b.add("multi_margin_loss", OpId::multi_margin_loss, F, kNoCuda, inputs({{{4, 5}, -1.5, 1.5}}, {classes}),
        run([](const Ins& in) { return nnf::multi_margin_loss(in[0], in[1]); }))
      .with([](const Refs& in, ScalarType) { return ref::multi_margin_loss(in[0], in[1], 1, 1.0, {}, Reduce::Mean); },
            {0.5, 4, 4});
  // Squared hinges (<= 14) times weights (<= 2): four roundings at <= 28 in each of 16 terms, / 5, summed.
  b.add("multi_margin_loss/p2_weight_sum", OpId::multi_margin_loss, F, kNoCuda,
        inputs({{{4, 5}, -1.5, 1.5}, {{5}, 0.5, 2}}, {classes}),
        run([](const Ins& in) { return nnf::multi_margin_loss(in[0], in[2], 2, 0.7, in[1], Reduction::Sum); }))
      .with([](const Refs& in, ScalarType) { return ref::multi_margin_loss(in[0], in[2], 2, 0.7, in[1].v, Reduce::Sum); },
            {0.5, 6, 100});
}

// The distances and the cross product (runtime/ops/ops.h; kernels/composite/distance.cpp): each difference is
// rounded once at its size, the norm accumulates in double and rounds once.
void add_distance_cases(Builder& b) {
  // 12 differences off by half an ulp at <= 4: the 2-norm moves by at most their norm.
  b.binary("dist", OpId::dist, F, kNoCuda, -2, 2, -2, 2, [](const Tensor& x, const Tensor& y) { return x.dist(y); })
      .with([](const Refs& in, ScalarType) { return ref::dist(in[0], in[1], 2.0); }, {0.5, 4, 8});
  b.binary("dist/inf", OpId::dist, F, kNoCuda, -2, 2, -2, 2,
           [](const Tensor& x, const Tensor& y) { return x.dist(y, INFINITY); })
      .with([](const Refs& in, ScalarType) { return ref::dist(in[0], in[1], INFINITY); }, {0.5, 1, 4});
  b.add("cdist", OpId::cdist, F, kNoCuda, inputs({{{2, 3, 4}, -2, 2}, {{1, 5, 4}, -2, 2}}),
        run([](const Ins& in) { return cdist(in[0], in[1]); }))
      .with([](const Refs& in, ScalarType) { return ref::cdist(in[0], in[1], 2.0); }, {0.5, 4, 8});
  b.add("cdist/p1", OpId::cdist, F, kNoCuda, inputs({{{3, 4}, -2, 2}, {{2, 4}, -2, 2}}),
        run([](const Ins& in) { return cdist(in[0], in[1], 1.0); }))
      .with([](const Refs& in, ScalarType) { return ref::cdist(in[0], in[1], 1.0); }, {0.5, 4, 16});
  b.add("pdist", OpId::pdist, F, kNoCuda, inputs({{{4, 3}, -2, 2}}), run([](const Ins& in) { return pdist(in[0]); }))
      .with([](const Refs& in, ScalarType) { return ref::pdist(in[0], 2.0); }, {0.5, 4, 8});
  b.add("pdist/p1.5", OpId::pdist, F, kNoCuda, inputs({{{4, 3}, -2, 2}}),
        run([](const Ins& in) { return pdist(in[0], 1.5); }))
      .with([](const Refs& in, ScalarType) { return ref::pdist(in[0], 1.5); }, {0.5, 6, 12});
  // The norm, + 1e-7, the quotient and the product: four roundings relative to the result.
  b.add("renorm", OpId::renorm, F, kNoCuda, inputs({{{3, 4}, -2, 2}}),
        run([](const Ins& in) { return renorm(in[0], 2.0, 0, 2.0); }))
      .with([](const Refs& in, ScalarType) { return ref::renorm(in[0], 2.0, 0, 2.0); }, {0.5, 4});
  b.add("renorm/p1_dim1", OpId::renorm, F, kNoCuda, inputs({{{2, 3, 2}, -2, 2}}),
        run([](const Ins& in) { return renorm(in[0], 1.0, -2, 4.0); }))
      .with([](const Refs& in, ScalarType) { return ref::renorm(in[0], 1.0, -2, 4.0); }, {0.5, 4});
  // Two products (<= 9) and their difference: integers exact (wrapping as the dtype does).
  auto cross_ref = [](int64_t dim) {
    return [dim](const Refs& in, ScalarType dt) {
      ref::Ref r = ref::cross(in[0], in[1], dim);
      if (!is_floating(dt))
        for (double& v : r.v) v = stored(dt, v);
      return r;
    };
  };
  b.add("cross", OpId::cross, N, kNoCuda, inputs({{{2, 3}, -3, 3}, {{2, 3}, -3, 3}}),
        run([](const Ins& in) { return cross(in[0], in[1]); }))
      .with(cross_ref(-1), {0.5, 3, 18});
  b.add("cross/broadcast_dim0", OpId::cross, N, kNoCuda, inputs({{{3, 4}, -3, 3}, {{3, 1}, -3, 3}}),
        run([](const Ins& in) { return cross(in[0], in[1], 0); }))
      .with(cross_ref(0), {0.5, 3, 18});
}

}  // namespace

void add_nn_cases(Builder& b) {
  add_softmax_cases(b);
  add_norm_cases(b);
  add_softmax_backward_cases(b);
  add_activation_backward_cases(b);
  add_cross_entropy_rows_cases(b);
  add_norm_backward_cases(b);
  add_dropout_cases(b);
  add_class_loss_cases(b);
  add_pair_loss_cases(b);
  add_attention_cases(b);
  add_conv_cases(b);
  add_margin_loss_cases(b);
  add_distance_cases(b);
}

}  // namespace mixt::testing
