// The op-case table and its runner. See op_cases.h.
#include "op_case_builder.h"
#include "op_support_summary.h"

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>

namespace mixt::testing {
namespace {

namespace fn = mixt::nn::functional;  // (F is the floating dtype set here)

// Mean and standard deviation of round(X) in `dt` for X with density `pdf` on [lo, hi]
// (numerical integration; `high`, when finite, is never returned: a value rounding up
// to it steps down to the next value below, as uniform_ does).
struct Moments {
  double mean, sd;
};
Moments quantized_moments(ScalarType dt, const std::function<double(double)>& pdf, double lo, double hi,
                          double high = INFINITY) {
  const int n = 400000;
  const double h = (hi - lo) / n;
  double m0 = 0, m1 = 0, m2 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = lo + (i + 0.5) * h, w = pdf(x) * h;
    double r = stored(dt, x);
    if (r >= high) r = high - ulp_of(dt, std::nextafter(high, -INFINITY));  // the dtype's value below high
    m0 += w, m1 += w * r, m2 += w * r * r;
  }
  const double mean = m1 / m0;
  return {mean, std::sqrt(m2 / m0 - mean * mean)};
}

// A check of `n` random draws: every value in [lo, hi], and the sample mean and standard
// deviation within 5 standard errors of the expected ones (Moments). `kurtosis` sets the
// standard error of the standard deviation, sd * sqrt((kurtosis - 1) / (4 n)).
std::function<void(const Tensor&, ScalarType)> random_check(const char* op, double lo, double hi, Moments want,
                                                            double kurtosis) {
  return [=](const Tensor& r, ScalarType) {
    const std::vector<double> v = r.to(Device::cpu(), kFloat64).to_vector<double>();
    const double n = static_cast<double>(v.size());
    double s = 0, ss = 0, mn = INFINITY, mx = -INFINITY;
    for (double x : v) s += x, mn = std::min(mn, x), mx = std::max(mx, x);
    const double mean = s / n;
    for (double x : v) ss += (x - mean) * (x - mean);
    const double sd = std::sqrt(ss / (n - 1));
    if (!(mn >= lo && mx <= hi)) throw Error(op, "values outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    if (std::abs(mean - want.mean) > 5 * want.sd / std::sqrt(n))
      throw Error(op, "mean " + std::to_string(mean) + ", expected " + std::to_string(want.mean));
    if (std::abs(sd - want.sd) > 5 * want.sd * std::sqrt((kurtosis - 1) / (4 * n)))
      throw Error(op, "standard deviation " + std::to_string(sd) + ", expected " + std::to_string(want.sd));
  };
}

// The fixed seed of the random cases (their numbers do not depend on the tests run before).
constexpr uint64_t kSeed = 20240607;

void add_creation_cases(Builder& b) {
  b.add("empty", OpId::empty, A, A, [](ScalarType) { return CaseInputs{}; },
        [](const std::vector<Tensor>&, ScalarType dt, Device dev) { return empty({2, 3}, {.dtype = dt, .device = dev}); });
  b.cases.back().check = [](const Tensor& r, ScalarType) {
    if (r.sizes() != Shape{2, 3}) throw Error("empty", "wrong shape " + r.sizes().str());
  };
  b.add("full", OpId::full, A, A, [](ScalarType) { return CaseInputs{}; },
        [](const std::vector<Tensor>&, ScalarType dt, Device dev) {
          return full({2, 3}, dt == kBool ? 1 : 3, {.dtype = dt, .device = dev});
        })
      .with([](const Refs&, ScalarType dt) { return ref::full({2, 3}, dt == kBool ? 1 : 3); }, kExact);
  // Computed in double and rounded once (e5m2 rounds 11 to 12, half an ulp away).
  b.add("arange", OpId::arange, N, N, [](ScalarType) { return CaseInputs{}; },
        [](const std::vector<Tensor>&, ScalarType dt, Device dev) {
          return arange(1, 12, 2, {.dtype = dt, .device = dev});
        })
      .with([](const Refs&, ScalarType) { return ref::arange(1, 12, 2); }, kExact);
  // Integer dtypes truncate the double values toward zero.
  b.add("linspace", OpId::linspace, N, N, [](ScalarType) { return CaseInputs{}; },
        [](const std::vector<Tensor>&, ScalarType dt, Device dev) {
          return linspace(-2, 2, 9, {.dtype = dt, .device = dev});
        })
      .with([](const Refs&, ScalarType dt) { return ref::map(ref::linspace(-2, 2, 9), [dt](double v) { return stored(dt, v); }); },
            kExact);
  b.add("eye", OpId::eye, A, A, [](ScalarType) { return CaseInputs{}; },
        [](const std::vector<Tensor>&, ScalarType dt, Device dev) { return eye(3, 4, {.dtype = dt, .device = dev}); })
      .with([](const Refs&, ScalarType) { return ref::eye(3, 4); }, kExact);
  b.unary_("fill_", OpId::fill_, A, A, -2, 2, [](Tensor& t) { fill_(t, t.dtype() == kBool ? 1 : 2); })
      .with([](const Refs& in, ScalarType dt) { return ref::full(in[0].sizes, dt == kBool ? 1 : 2); }, kExact);
  // Random ops: a fixed seed, 4000 draws, moments of the distribution as the dtype rounds it.
  auto draws = [](ScalarType dt) { return CaseInputs{{zeros({4000}, {.dtype = dt})}, 0b1}; };
  auto uniform_pdf = [](double x) { return x >= -1 && x < 3 ? 0.25 : 0.0; };
  b.unary_("uniform_", OpId::uniform_, F, F, 0, 0, [](Tensor& t) {
     Generator g(kSeed);
     uniform_(t, -1.0, 3.0, &g);
   }).make = draws;
  b.cases.back().check = [uniform_pdf](const Tensor& r, ScalarType dt) {
    random_check("uniform_", -1.0, 3.0, quantized_moments(dt, uniform_pdf, -1.0, 3.0, 3.0), 1.8)(r, dt);
  };
  b.unary_("normal_", OpId::normal_, F, F, 0, 0, [](Tensor& t) {
     Generator g(kSeed);
     normal_(t, 2.0, 0.5, &g);
   }).make = draws;
  b.cases.back().check = [](const Tensor& r, ScalarType dt) {
    auto pdf = [](double x) { return std::exp(-2 * (x - 2) * (x - 2)); };  // N(2, 0.5), unnormalized
    random_check("normal_", -INFINITY, INFINITY, quantized_moments(dt, pdf, -1, 5), 3.0)(r, dt);
  };
  b.unary_("random_", OpId::random_, N, N, 0, 0, [](Tensor& t) {
     Generator g(kSeed);
     random_(t, 0, 8, &g);
   }).make = draws;
  // The integers 0..7, equally likely: mean 3.5, variance (8^2 - 1) / 12; excess kurtosis -1.24.
  b.cases.back().check = random_check("random_", 0, 7, {3.5, std::sqrt(63.0 / 12)}, 1.76);
}

void add_view_and_movement_cases(Builder& b) {
  b.unary("view", OpId::view, A, A, -3, 3, [](const Tensor& t) { return t.view({5, 3}); })
      .with([](const Refs& in, ScalarType) { return ref::reshape(in[0], {5, 3}); }, kExact);
  b.unary("permute", OpId::permute, A, A, -3, 3, [](const Tensor& t) { return t.permute({1, 0}); })
      .with([](const Refs& in, ScalarType) { return ref::permute(in[0], {1, 0}); }, kExact);
  b.unary("slice", OpId::slice, A, A, -3, 3, [](const Tensor& t) { return t.slice(1, 1, 5, 2); })
      .with([](const Refs& in, ScalarType) { return ref::slice(in[0], 1, 1, 5, 2); }, kExact);
  b.unary("select", OpId::select, A, A, -3, 3, [](const Tensor& t) { return t.select(1, -2); })
      .with([](const Refs& in, ScalarType) { return ref::select(in[0], 1, -2); }, kExact);
  b.unary("expand", OpId::expand, A, A, -3, 3, [](const Tensor& t) { return t.unsqueeze(0).expand({2, 3, 5}); })
      .with([](const Refs& in, ScalarType) { return ref::expand(in[0], {2, 3, 5}); }, kExact);
  b.unary("squeeze", OpId::squeeze, A, A, -3, 3, [](const Tensor& t) { return t.view({3, 1, 5}).squeeze(); })
      .with([](const Refs& in, ScalarType) { return in[0]; }, kExact);
  b.unary("unsqueeze", OpId::unsqueeze, A, A, -3, 3, [](const Tensor& t) { return t.unsqueeze(1); })
      .with([](const Refs& in, ScalarType) { return ref::unsqueeze(in[0], 1); }, kExact);
  b.unary("as_strided", OpId::as_strided, A, A, -3, 3, [](const Tensor& t) { return as_strided(t, {2, 3}, {2, 4}, 1); })
      .with([](const Refs& in, ScalarType) { return ref::as_strided(in[0], {2, 3}, {2, 4}, 1); }, kExact);
  // Bytes and back: the round trip is exact (bool stays bool: other bytes are not bools).
  b.unary("view_dtype/bytes round trip", OpId::view_dtype, A, A, -3, 3, [](const Tensor& t) {
     return t.view(t.dtype() == kBool ? kBool : kUInt8).view(t.dtype());
   }).with([](const Refs& in, ScalarType) { return in[0]; }, kExact);

  b.unary("clone", OpId::clone, A, A, -3, 3, [](const Tensor& t) { return t.t().clone(); })
      .with([](const Refs& in, ScalarType) { return ref::transpose(in[0], 0, 1); }, kExact);
  b.binary("copy_/broadcast", OpId::copy_, A, A, -3, 3, -3, 3, [](const Tensor& a, const Tensor& c) {
     Tensor d = a.clone();
     return copy_(d, c);
   }).with([](const Refs& in, ScalarType) { return ref::expand(in[1], in[0].sizes); }, kExact);
  // Rounds float64 inputs to float32 once; the other dtypes convert exactly.
  b.unary("to/float32", OpId::to, A, A, -3, 3, [](const Tensor& t) { return t.to(kFloat32); }, kFloat32Out)
      .with([](const Refs& in, ScalarType) { return in[0]; }, kExact);
  b.binary("cat", OpId::cat, A, A, -3, 3, -3, 3, [](const Tensor& a, const Tensor& c) { return cat({a, c.unsqueeze(0)}, 0); })
      .with([](const Refs& in, ScalarType) { return ref::cat({in[0], ref::unsqueeze(in[1], 0)}, 0); }, kExact);
  b.binary("stack", OpId::stack, A, A, -3, 3, -3, 3,
           [](const Tensor& a, const Tensor& c) { return stack({a.select(0, 1), c}, 1); })
      .with([](const Refs& in, ScalarType) { return ref::stack({ref::select(in[0], 0, 1), in[1]}, 1); }, kExact);
}

void add_index_cases(Builder& b) {
  b.add("index_select", OpId::index_select, A, A,
        [](ScalarType dt) { return CaseInputs{{data(dt, {4, 5}, -3, 3, 4), index_tensor({3, 0, 3}, {3})}, 0b01}; },
        [](const std::vector<Tensor>& in, ScalarType, Device) { return index_select(in[0], 1, in[1]); })
      .with([](const Refs& in, ScalarType) { return ref::index_select(in[0], 1, in[1]); }, kExact);
  b.add("gather", OpId::gather, A, A,
        [](ScalarType dt) {
          return CaseInputs{{data(dt, {3, 4}, -3, 3, 5), index_tensor({0, 3, 1, 1, 2, 0}, {3, 2})}, 0b01};
        },
        [](const std::vector<Tensor>& in, ScalarType, Device) { return gather(in[0], 1, in[1]); })
      .with([](const Refs& in, ScalarType) { return ref::gather(in[0], 1, in[1]); }, kExact);
  auto scatter_inputs = [](ScalarType dt) {
    return CaseInputs{{data(dt, {3, 4}, -3, 3, 6), index_tensor({2, 0, 1, 2, 0, 1, 0, 1}, {2, 4}),
                       data(dt, {2, 4}, -3, 3, 7)},
                      0b101};
  };
  auto scatter_ref = [](const Refs& in, ScalarType) { return ref::scatter(in[0], 0, in[1], in[2]); };
  b.add("scatter", OpId::scatter, A, A, scatter_inputs,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return scatter(in[0], 0, in[1], in[2]); })
      .with(scatter_ref, kExact);
  b.add("scatter/value", OpId::scatter, A, A, scatter_inputs,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return scatter(in[0], 0, in[1], Scalar(1)); })
      .with([](const Refs& in, ScalarType) { return ref::scatter(in[0], 0, in[1], ref::full(in[1].sizes, 1)); }, kExact);
  b.add("scatter_", OpId::scatter_, A, A, scatter_inputs, [](const std::vector<Tensor>& in, ScalarType, Device) {
     Tensor x = in[0].clone();
     return scatter_(x, 0, in[1], in[2]);
   }).with(scatter_ref, kExact);
  auto scatter_add_inputs = [](ScalarType dt) {
    return CaseInputs{{data(dt, {3, 4}, -3, 3, 6), index_tensor({2, 0, 2, 2, 2, 1, 0, 2}, {2, 4}),
                       data(dt, {2, 4}, -3, 3, 7)},
                      0b101};
  };
  // Each addition is rounded to the tensor's dtype, in index order (as PyTorch's CPU kernel): the
  // reference rounds the same way, so the result is exact.
  auto scatter_add_ref = [](const Refs& in, ScalarType dt) {
    return ref::scatter_add(in[0], 0, in[1], in[2], [dt](double v) { return stored(dt, v); });
  };
  b.add("scatter_add", OpId::scatter_add, A, A, scatter_add_inputs,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return scatter_add(in[0], 0, in[1], in[2]); })
      .with(scatter_add_ref, kExact);
  b.add("scatter_add_", OpId::scatter_add_, A, A, scatter_add_inputs,
        [](const std::vector<Tensor>& in, ScalarType, Device) {
          Tensor x = in[0].clone();
          return scatter_add_(x, 0, in[1], in[2]);
        })
      .with(scatter_add_ref, kExact);
  auto mask_inputs = [](ScalarType dt) {
    return CaseInputs{{data(dt, {3, 4}, -3, 3, 8), data(kBool, {4}, 0, 1, 9)}, 0b01};
  };
  auto mask_ref = [](const Refs& in, ScalarType) { return ref::masked_fill(in[0], in[1], 1); };
  b.add("masked_fill", OpId::masked_fill, A, A, mask_inputs,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return masked_fill(in[0], in[1], Scalar(1)); })
      .with(mask_ref, kExact);
  b.add("masked_fill_", OpId::masked_fill_, A, A, mask_inputs,
        [](const std::vector<Tensor>& in, ScalarType, Device) {
          Tensor x = in[0].clone();
          return masked_fill_(x, in[1], Scalar(1));
        })
      .with(mask_ref, kExact);
  b.add("where", OpId::where, A, A,
        [](ScalarType dt) {
          return CaseInputs{{data(kBool, {3, 1}, 0, 1, 10), data(dt, {3, 4}, -3, 3, 11), data(dt, {4}, -3, 3, 12)},
                            0b110};
        },
        [](const std::vector<Tensor>& in, ScalarType, Device) { return where(in[0], in[1], in[2]); })
      .with([](const Refs& in, ScalarType) { return ref::where(in[0], in[1], in[2]); }, kExact);
  b.add("embedding", OpId::embedding, A, A,
        [](ScalarType dt) {
          return CaseInputs{{data(dt, {5, 3}, -3, 3, 13), index_tensor({4, 0, 4, 2, 1, 1}, {2, 3})}, 0b01};
        },
        [](const std::vector<Tensor>& in, ScalarType, Device) { return fn::embedding(in[1], in[0]); })
      .with([](const Refs& in, ScalarType) { return ref::embedding(in[0], in[1]); }, kExact);
}

// frac, logit and the piecewise activations of nn::functional (the other unary ops: add_unary_cases).
void add_activation_cases(Builder& b) {
  // x - trunc(x) is exact in the compute type (Sterbenz), then rounded once.
  b.unary("frac", OpId::frac, F, F, -3, 3, [](const Tensor& t) { return frac(t); }).with(unary_ref("frac"), kExact);
  b.unary_("frac_", OpId::frac_, F, F, -3, 3, [](Tensor& t) { frac_(t); }).with(unary_ref("frac"), kExact);
  // log(x / (1 - x)): the roundings of 1 - x and of the quotient become absolute errors of the
  // log (its derivative is 1 / q), one ulp of the log on top: three, at magnitude 1.
  const Tolerance logit_tol{0.5, 3, 1};
  b.unary("logit", OpId::logit, A, A, 0.05, 0.95, [](const Tensor& t) { return logit(t); }, kFloatPromote)
      .with(unary_ref("logit"), logit_tol);
  b.unary("logit/eps", OpId::logit, A, A, -0.2, 1.2, [](const Tensor& t) { return logit(t, 0.1); }, kFloatPromote)
      .with([](const Refs& in, ScalarType) {
        return ref::map(in[0], [](double x) {
          const double z = std::min(std::max(x, 0.1), 0.9);
          return std::log(z / (1 - z));
        });
      }, logit_tol);
  b.unary_("logit_", OpId::logit_, F, F, 0.05, 0.95, [](Tensor& t) { logit_(t); }).with(unary_ref("logit"), logit_tol);
  // hardtanh clamps integer tensors too, with the bounds truncated (uint8 refuses negative bounds).
  const uint32_t signed_numeric = N & ~dtypes::bit(kUInt8);
  auto hardtanh_ref = [](const Refs& in, ScalarType dt) {
    const double lo = is_floating(dt) ? -1.5 : -1, hi = 2;
    return ref::map(in[0], [=](double x) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); });
  };
  b.unary("hardtanh", OpId::hardtanh, signed_numeric, signed_numeric, -3, 3,
          [](const Tensor& t) { return fn::hardtanh(t, -1.5, 2); })
      .with(hardtanh_ref, kExact);
  b.unary_("hardtanh_", OpId::hardtanh_, signed_numeric, signed_numeric, -3, 3, [](Tensor& t) { fn::hardtanh_(t, -1.5, 2); })
      .with(hardtanh_ref, kExact);
  // x + 3, its product with x, / 6: three roundings (hardsigmoid: two).
  const Tolerance three_ops{0.5, 3};
  b.unary("hardswish", OpId::hardswish, F, F, -5, 5, [](const Tensor& t) { return fn::hardswish(t); })
      .with(unary_ref("hardswish"), three_ops);
  b.unary_("hardswish_", OpId::hardswish_, F, F, -5, 5, [](Tensor& t) { fn::hardswish_(t); })
      .with(unary_ref("hardswish"), three_ops);
  b.unary("hardsigmoid", OpId::hardsigmoid, F, F, -5, 5, [](const Tensor& t) { return fn::hardsigmoid(t); })
      .with(unary_ref("hardsigmoid"), {0.5, 2});
  b.unary_("hardsigmoid_", OpId::hardsigmoid_, F, F, -5, 5, [](Tensor& t) { fn::hardsigmoid_(t); })
      .with(unary_ref("hardsigmoid"), {0.5, 2});
  // The slope rounded to the compute type, then the product.
  b.unary("leaky_relu", OpId::leaky_relu, F, F, -3, 3, [](const Tensor& t) { return fn::leaky_relu(t, 0.2); })
      .with([](const Refs& in, ScalarType) { return ref::map(in[0], [](double x) { return x > 0 ? x : 0.2 * x; }); },
            {0.5, 2});
  b.unary_("leaky_relu_", OpId::leaky_relu_, F, F, -3, 3, [](Tensor& t) { fn::leaky_relu_(t); })
      .with(unary_ref("leaky_relu"), {0.5, 2});
  // Roundings of input_scale, of input_scale x (expm1 amplifies a relative error of its argument
  // by at most 3 here), expm1's ulp, alpha scale and the product: six.
  b.unary("elu", OpId::elu, F, F, -3, 3, [](const Tensor& t) { return fn::elu(t, 1.5, 1.2, 0.8); })
      .with([](const Refs& in, ScalarType) { return ref::map(in[0], [](double x) { return ref::elu(x, 1.5, 1.2, 0.8); }); },
            {0.5, 6});
  b.unary_("elu_", OpId::elu_, F, F, -3, 3, [](Tensor& t) { fn::elu_(t); }).with(unary_ref("elu"), kOneOp);
  // The two constants rounded to the compute type, expm1 and the product.
  b.unary("selu", OpId::selu, F, F, -3, 3, [](const Tensor& t) { return fn::selu(t); }).with(unary_ref("selu"), {0.5, 4});
  b.unary_("selu_", OpId::selu_, F, F, -3, 3, [](Tensor& t) { fn::selu_(t); }).with(unary_ref("selu"), {0.5, 4});
  // exp, log1p, tanh and the product (tanh's argument error shrinks through its slope <= 1).
  b.unary("mish", OpId::mish, F, F, -4, 4, [](const Tensor& t) { return fn::mish(t); }).with(unary_ref("mish"), {0.5, 5});
  b.unary_("mish_", OpId::mish_, F, F, -4, 4, [](Tensor& t) { fn::mish_(t); }).with(unary_ref("mish"), {0.5, 5});
  // prelu: one product per negative element, correctly rounded (narrow floats multiply in float32
  // exactly, then round once).
  auto prelu_ref = [](const Refs& in, ScalarType) {
    ref::Ref out = in[0];
    const int64_t channels = in[0].sizes[1], inner = in[0].sizes[2];
    for (size_t i = 0; i < out.v.size(); ++i) {
      const double w = in[1].v.size() == 1 ? in[1].v[0] : in[1].v[(i / inner) % channels];
      if (!(out.v[i] > 0)) out.v[i] *= w;
    }
    return out;
  };
  for (int64_t weights : {3, 1}) {
    b.add(weights == 1 ? "prelu/one_weight" : "prelu", OpId::prelu, F, F,
          [weights](ScalarType dt) {
            return CaseInputs{{data(dt, {2, 3, 4}, -3, 3, 15), data(dt, {weights}, -1, 1, 16)}, 0b11};
          },
          [](const std::vector<Tensor>& in, ScalarType, Device) { return fn::prelu(in[0], in[1]); })
        .with(prelu_ref, kExact);
  }
}

void add_unary_cases(Builder& b) {
  struct UnarySpec {
    OpId op, op_;
    const char* name;
    Tensor (*f)(const Tensor&);
    Tensor& (*f_)(Tensor&);
    double lo, hi;
    bool float_only;  // integer inputs promote to float32; the in-place form is floating-only
    Tolerance tol;
  };
  // Tolerances: kExact where the result is an input value or one correctly rounded operation;
  // kOneOp for one libm function in float32 (below one ulp in glibc) rounded once to the dtype;
  // more `work` where the formula chains several float operations (each costs at most one ulp).
  const Tolerance two_ops{0.5, 2}, chain{0.5, 3};
  const UnarySpec unaries[] = {
      {OpId::neg, OpId::neg_, "neg", neg, neg_, -3, 3, false, kExact},
      {OpId::abs, OpId::abs_, "abs", abs, abs_, -3, 3, false, kExact},
      {OpId::sign, OpId::sign_, "sign", sign, sign_, -3, 3, false, kExact},
      {OpId::exp, OpId::exp_, "exp", exp, exp_, -3, 3, true, kOneOp},
      {OpId::expm1, OpId::expm1_, "expm1", expm1, expm1_, -2, 2, true, kOneOp},
      {OpId::log, OpId::log_, "log", log, log_, 0.1, 5, true, kOneOp},
      {OpId::log1p, OpId::log1p_, "log1p", log1p, log1p_, 0, 5, true, kOneOp},
      {OpId::log2, OpId::log2_, "log2", log2, log2_, 0.1, 5, true, kOneOp},
      {OpId::log10, OpId::log10_, "log10", log10, log10_, 0.1, 5, true, kOneOp},
      {OpId::sqrt, OpId::sqrt_, "sqrt", sqrt, sqrt_, 0, 5, true, kOneOp},
      {OpId::rsqrt, OpId::rsqrt_, "rsqrt", rsqrt, rsqrt_, 0.2, 5, true, two_ops},  // sqrt, then 1 / it
      {OpId::reciprocal, OpId::reciprocal_, "reciprocal", reciprocal, reciprocal_, 0.3, 4, true, kOneOp},
      {OpId::sin, OpId::sin_, "sin", sin, sin_, -3, 3, true, kOneOp},
      {OpId::cos, OpId::cos_, "cos", cos, cos_, -3, 3, true, kOneOp},
      {OpId::tan, OpId::tan_, "tan", tan, tan_, -1.2, 1.2, true, kOneOp},
      {OpId::tanh, OpId::tanh_, "tanh", tanh, tanh_, -3, 3, true, kOneOp},
      {OpId::sigmoid, OpId::sigmoid_, "sigmoid", sigmoid, sigmoid_, -4, 4, true, chain},  // exp, 1 +, 1 /
      {OpId::relu, OpId::relu_, "relu", relu, relu_, -3, 3, false, kExact},
      {OpId::silu, OpId::silu_, "silu", fn::silu, fn::silu_, -4, 4, true, chain},  // exp, 1 +, x /
      {OpId::erf, OpId::erf_, "erf", erf, erf_, -2, 2, true, kOneOp},
      // Newton's method in double, rounded to float32 (float64: the last step leaves a few ulps).
      {OpId::erfinv, OpId::erfinv_, "erfinv", erfinv, erfinv_, -0.9, 0.9, true, {0.5, 4}},
      {OpId::floor, OpId::floor_, "floor", floor, floor_, -3, 3, false, kExact},
      {OpId::ceil, OpId::ceil_, "ceil", ceil, ceil_, -3, 3, false, kExact},
      {OpId::trunc, OpId::trunc_, "trunc", trunc, trunc_, -3, 3, false, kExact},
      // glibc documents up to 2 ulps for its float and double inverse and hyperbolic functions.
      {OpId::acos, OpId::acos_, "acos", acos, acos_, -0.95, 0.95, true, two_ops},
      {OpId::asin, OpId::asin_, "asin", asin, asin_, -0.95, 0.95, true, two_ops},
      {OpId::sinh, OpId::sinh_, "sinh", sinh, sinh_, -3, 3, true, two_ops},
      {OpId::cosh, OpId::cosh_, "cosh", cosh, cosh_, -3, 3, true, two_ops},
      {OpId::asinh, OpId::asinh_, "asinh", asinh, asinh_, -3, 3, true, two_ops},
      {OpId::acosh, OpId::acosh_, "acosh", acosh, acosh_, 1.1, 4, true, two_ops},
      {OpId::atanh, OpId::atanh_, "atanh", atanh, atanh_, -0.9, 0.9, true, two_ops},
  };
  for (const UnarySpec& u : unaries) {
    // sign of a bool is the bool itself (PyTorch supports it); the other non-float ops refuse bool.
    const uint32_t dts = u.float_only || u.op == OpId::sign ? A : N;
    b.unary(u.name, u.op, dts, dts, u.lo, u.hi, u.f, u.float_only ? kFloatPromote : kSame).with(unary_ref(u.name), u.tol);
    auto f_ = u.f_;
    const uint32_t dts_ = u.float_only ? F : u.op == OpId::sign ? A : N;
    b.unary_(std::string(u.name) + "_", u.op_, dts_, dts_, u.lo, u.hi,
             [f_](Tensor& t) { f_(t); })
        .with(unary_ref(u.name), u.tol);
  }
  // gelu's 1 + erf(x / sqrt 2) cancels for negative x: its float roundings (of x / sqrt 2, erf, the sum
  // and two products) are at the size of |x| <= 4, not of the small result.
  const Tolerance gelu_tol{0.5, 5, 4};
  b.unary("gelu", OpId::gelu, A, A, -4, 4, [](const Tensor& t) { return fn::gelu(t); }, kFloatPromote)
      .with(unary_ref("gelu"), gelu_tol);
  b.unary("gelu/tanh", OpId::gelu, A, A, -4, 4, [](const Tensor& t) { return fn::gelu(t, "tanh"); }, kFloatPromote)
      .with(unary_ref("gelu_tanh"), {0.5, 8, 4});  // also x^3 and tanh's argument: three more roundings
  b.unary_("gelu_", OpId::gelu_, F, F, -4, 4, [](Tensor& t) { fn::gelu_(t); }).with(unary_ref("gelu"), gelu_tol);
  // log1p(exp(2 x)) / 2 (x unless 2 x > 5): three float operations.
  b.unary("softplus", OpId::softplus, A, A, -4, 4, [](const Tensor& t) { return fn::softplus(t, 2.0, 5.0); },
          kFloatPromote)
      .with([](const Refs& in, ScalarType) { return ref::map(in[0], [](double x) { return ref::softplus(x, 2, 5); }); },
            chain);
  b.unary_("softplus_", OpId::softplus_, F, F, -4, 4, [](Tensor& t) { fn::softplus_(t); })
      .with(unary_ref("softplus"), chain);
  b.unary("round", OpId::round, N, N, -3, 3, [](const Tensor& t) { return round(t); }).with(unary_ref("round"), kExact);
  // nearbyint(x * 10) / 10: the product and the quotient are rounded in float.
  b.unary("round/decimals", OpId::round, F, F, -3, 3, [](const Tensor& t) { return round(t, 1); })
      .with([](const Refs& in, ScalarType) { return ref::map(in[0], [](double x) { return std::nearbyint(x * 10) / 10; }); },
            two_ops);
  b.unary_("round_", OpId::round_, N, N, -3, 3, [](Tensor& t) { round_(t); }).with(unary_ref("round"), kExact);
  auto clamp_ref = [](double lo, double hi) {
    return [=](const Refs& in, ScalarType) {
      return ref::map(in[0], [=](double x) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); });
    };
  };
  b.unary("clamp", OpId::clamp, N, N, -3, 3, [](const Tensor& t) { return clamp(t, -1, 2); })
      .with(clamp_ref(-1, 2), kExact);
  b.unary("clamp/max_only", OpId::clamp, N, N, -3, 3, [](const Tensor& t) { return clamp_max(t, 1); })
      .with(clamp_ref(-INFINITY, 1), kExact);
  b.unary_("clamp_", OpId::clamp_, N, N, -3, 3, [](Tensor& t) { clamp_(t, -1, 2); }).with(clamp_ref(-1, 2), kExact);
  add_activation_cases(b);
  auto with_specials = [](ScalarType dt) {
    Tensor t = data(dt, {6}, -3, 3, 14);
    if (is_floating(dt)) {
      t = from_vector(std::vector<double>{1.5, -INFINITY, NAN, 0.0, INFINITY, -2.0}).to(dt);
    }
    return CaseInputs{{t}, 0b1};
  };
  for (auto [op, f] : {std::pair{OpId::isfinite, &isfinite}, {OpId::isnan, &isnan}, {OpId::isinf, &isinf}}) {
    b.add(std::string(op_name(op)), op, A, A, with_specials,
          [f](const std::vector<Tensor>& in, ScalarType, Device) { return f(in[0]); }, kBoolOut)
        .with(unary_ref(std::string(op_name(op))), kExact);
  }
  b.unary("logical_not", OpId::logical_not, A, A, -2, 2, [](const Tensor& t) { return logical_not(t); }, kBoolOut)
      .with(unary_ref("logical_not"), kExact);
}

void add_binary_cases(Builder& b) {
  using D = double;
  // alpha * b is rounded before the sum: one rounding at the operands' size (|a| + 2 |b| <= 9).
  const Tolerance alpha_tol{0.5, 1, 9};
  b.binary("add", OpId::add, A, A, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) { return add(x, y, 2); })
      .with(binary_ref([](D x, D y) { return x + 2 * y; }), alpha_tol);
  b.binary("add/scalar", OpId::add, A, A, -3, 3, -3, 3, [](const Tensor& x, const Tensor&) { return x + 1.5; },
           [](ScalarType dt) { return is_floating(dt) ? dt : kFloat32; })
      .with([](const Refs& in, ScalarType) { return ref::map(in[0], [](D x) { return x + 1.5; }); }, kExact);
  b.binary("add_", OpId::add_, A, A, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) {
     Tensor z = x.clone();
     return add_(z, y);
   }).with(binary_ref([](D x, D y) { return x + y; }), kExact);
  b.binary("sub", OpId::sub, N, N, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) { return sub(x, y); })
      .with(binary_ref([](D x, D y) { return x - y; }), kExact);
  b.binary("sub_", OpId::sub_, N, N, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) {
     Tensor z = x.clone();
     return sub_(z, y, 2);
   }).with(binary_ref([](D x, D y) { return x - 2 * y; }), alpha_tol);
  b.binary("mul", OpId::mul, A, A, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) { return mul(x, y); })
      .with(binary_ref([](D x, D y) { return x * y; }), kExact);
  b.binary("mul/scalar", OpId::mul, A, A, -3, 3, -3, 3, [](const Tensor& x, const Tensor&) { return x * 3; },
           [](ScalarType dt) { return dt == kBool ? kInt64 : dt; })
      .with([](const Refs& in, ScalarType) { return ref::map(in[0], [](D x) { return x * 3; }); }, kExact);
  b.binary("mul_", OpId::mul_, A, A, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) {
     Tensor z = x.clone();
     return mul_(z, y);
   }).with(binary_ref([](D x, D y) { return x * y; }), kExact);
  // Division is correctly rounded in float, then rounded again to a narrow dtype.
  b.binary("div", OpId::div, A, A, -3, 3, 0.5, 3, [](const Tensor& x, const Tensor& y) { return div(x, y); },
           kFloatPromote)
      .with(binary_ref([](D x, D y) { return x / y; }), kOneOp);
  b.binary("div/floor", OpId::div, N, N, -9, 9, 1, 4,
           [](const Tensor& x, const Tensor& y) { return div(x, y, "floor"); })
      .with(binary_ref(ref::div_floor), kExact);
  b.binary("div/trunc", OpId::div, N, N, -9, 9, 1, 4,
           [](const Tensor& x, const Tensor& y) { return div(x, y, "trunc"); })
      .with(binary_ref([](D x, D y) { return std::trunc(x / y); }), kExact);
  b.binary("div_", OpId::div_, F, F, -3, 3, 0.5, 3, [](const Tensor& x, const Tensor& y) {
     Tensor z = x.clone();
     return div_(z, y);
   }).with(binary_ref([](D x, D y) { return x / y; }), kOneOp);
  auto pow_ref = binary_ref([](D x, D y) { return std::pow(x, y); });
  b.binary("pow", OpId::pow, N, N, 0.5, 2, 0, 3, [](const Tensor& x, const Tensor& y) { return pow(x, y); })
      .with(pow_ref, kOneOp);
  b.binary("pow_", OpId::pow_, N, N, 0.5, 2, 0, 3, [](const Tensor& x, const Tensor& y) {
     Tensor z = x.clone();
     return pow_(z, y);
   }).with(pow_ref, kOneOp);
  // glibc's atan2f stays within two ulps.
  auto atan2_ref = binary_ref([](D x, D y) { return std::atan2(x, y); });
  b.binary("atan2", OpId::atan2, A, A, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) { return atan2(x, y); },
           kFloatPromote)
      .with(atan2_ref, {0.5, 2});
  b.binary("atan2_", OpId::atan2_, F, F, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) {
     Tensor z = x.clone();
     return atan2_(z, y);
   }).with(atan2_ref, {0.5, 2});
  b.binary("maximum", OpId::maximum, A, A, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) { return maximum(x, y); })
      .with(binary_ref([](D x, D y) { return std::max(x, y); }), kExact);
  b.binary("minimum", OpId::minimum, A, A, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) { return minimum(x, y); })
      .with(binary_ref([](D x, D y) { return std::min(x, y); }), kExact);
  using BinFn = Tensor (*)(const Tensor&, const Tensor&);
  const std::pair<OpId, BinFn> predicates[] = {{OpId::eq, &eq}, {OpId::ne, &ne}, {OpId::lt, &lt}, {OpId::le, &le},
                                               {OpId::gt, &gt}, {OpId::ge, &ge}, {OpId::logical_and, &logical_and},
                                               {OpId::logical_or, &logical_or}, {OpId::logical_xor, &logical_xor}};
  const std::function<bool(D, D)> truth[] = {
      [](D x, D y) { return x == y; },           [](D x, D y) { return x != y; },
      [](D x, D y) { return x < y; },            [](D x, D y) { return x <= y; },
      [](D x, D y) { return x > y; },            [](D x, D y) { return x >= y; },
      [](D x, D y) { return x != 0 && y != 0; }, [](D x, D y) { return x != 0 || y != 0; },
      [](D x, D y) { return (x != 0) != (y != 0); }};
  for (size_t i = 0; i < std::size(predicates); ++i) {
    const auto t = truth[i];
    b.binary(std::string(op_name(predicates[i].first)), predicates[i].first, A, A, -2, 2, -2, 2,
             predicates[i].second, kBoolOut)
        .with(binary_ref([t](D x, D y) { return t(x, y) ? 1.0 : 0.0; }), kExact);
  }

  // ---- ternary: a [3, 4] in [-3, 3], b [4] in [-3, 3], c [3, 1] in [0.5, 3] ----
  auto three = [](ScalarType dt) {
    return CaseInputs{{data(dt, {3, 4}, -3, 3, 15), data(dt, {4}, -3, 3, 16), data(dt, {3, 1}, 0.5, 3, 17)}, 0b111};
  };
  auto ternary_ref = [](std::function<double(D, D, D)> f) {
    return [f](const Refs& in, ScalarType) { return ref::zip3(in[0], in[1], in[2], f); };
  };
  // Two products and a sum in float, at the size of |a| + 2 |b c| <= 21.
  const auto addcmul_ref = ternary_ref([](D a, D x, D y) { return a + 2 * x * y; });
  b.add("addcmul", OpId::addcmul, N, N, three,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return addcmul(in[0], in[1], in[2], 2); })
      .with(addcmul_ref, {0.5, 3, 21});
  b.add("addcmul_", OpId::addcmul_, N, N, three, [](const std::vector<Tensor>& in, ScalarType, Device) {
     Tensor z = in[0].clone();
     return addcmul_(z, in[1], in[2], 2);
   }).with(addcmul_ref, {0.5, 3, 21});
  // 0.5 * b, / c, + a: three roundings at the size of |a| + |0.5 b / c| <= 6.
  const auto addcdiv_ref = ternary_ref([](D a, D x, D y) { return a + 0.5 * x / y; });
  b.add("addcdiv", OpId::addcdiv, F, F, three,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return addcdiv(in[0], in[1], in[2], 0.5); })
      .with(addcdiv_ref, {0.5, 3, 6});
  b.add("addcdiv_", OpId::addcdiv_, F, F, three, [](const std::vector<Tensor>& in, ScalarType, Device) {
     Tensor z = in[0].clone();
     return addcdiv_(z, in[1], in[2], 0.5);
   }).with(addcdiv_ref, {0.5, 3, 6});
  // b - a, a product and a sum (or 1 - w, two products): at the size of |w (b - a)| <= 18.
  const auto lerp_ref = ternary_ref([](D a, D x, D w) { return a + w * (x - a); });
  b.add("lerp", OpId::lerp, F, F, three,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return lerp(in[0], in[1], in[2]); })
      .with(lerp_ref, {0.5, 4, 18});
  b.add("lerp/scalar", OpId::lerp, F, F, three,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return lerp(in[0], in[1], 0.25); })
      .with([](const Refs& in, ScalarType) { return ref::zip(in[0], in[1], [](D a, D x) { return a + 0.25 * (x - a); }); },
            {0.5, 3, 6});
  b.add("lerp_", OpId::lerp_, F, F, three, [](const std::vector<Tensor>& in, ScalarType, Device) {
     Tensor z = in[0].clone();
     return lerp_(z, in[1], in[2]);
   }).with(lerp_ref, {0.5, 4, 18});
}

void add_reduction_cases(Builder& b) {
  using ref::Ref;
  // The CPU reductions accumulate in double and round once: `compute = kFloat64`, so a float32
  // accumulator would fail them. `work` counts the double additions, at the size of the summed terms.
  auto dbl = [](double work, double magnitude) { return Tolerance{0.5, work, magnitude, kFloat64}; };
  b.unary("sum", OpId::sum, A, A, -3, 3, [](const Tensor& t) { return sum(t, {1}); }, kSumOut, {3, 5, 2})
      .with([](const Refs& in, ScalarType) { return ref::sum(in[0], {1}); }, dbl(4, 15));
  b.unary("sum/all", OpId::sum, A, A, -3, 3, [](const Tensor& t) { return sum(t); }, kSumOut)
      .with([](const Refs& in, ScalarType) { return ref::sum(in[0]); }, dbl(14, 45));
  b.unary("mean", OpId::mean, F, F, -3, 3, [](const Tensor& t) { return mean(t, {0, 2}, true); }, kSame, {3, 5, 2})
      .with([](const Refs& in, ScalarType) { return ref::mean(in[0], {0, 2}, true); }, dbl(6, 3));
  b.unary("prod", OpId::prod, A, A, 0.5, 1.5, [](const Tensor& t) { return prod(t, {0}); }, kSumOut)
      .with([](const Refs& in, ScalarType) { return ref::prod(in[0], {0}); }, dbl(3, 0));
  b.unary("amax", OpId::amax, A, A, -3, 3, [](const Tensor& t) { return amax(t, {-1}); })
      .with([](const Refs& in, ScalarType) { return ref::amax(in[0], {-1}); }, kExact);
  b.unary("amin", OpId::amin, A, A, -3, 3, [](const Tensor& t) { return amin(t, {0}, true); })
      .with([](const Refs& in, ScalarType) { return ref::amin(in[0], {0}, true); }, kExact);
  // Ties (frequent after rounding to float8) pick the first index.
  b.unary("max/values", OpId::max, A, A, -3, 3, [](const Tensor& t) { return max(t, 1).values; })
      .with([](const Refs& in, ScalarType) { return ref::max_dim(in[0], 1, false).values; }, kExact);
  b.unary("max/indices", OpId::max, A, A, -3, 3, [](const Tensor& t) { return max(t, 1).indices; }, kInt64Out)
      .with([](const Refs& in, ScalarType) { return ref::max_dim(in[0], 1, false).indices; }, kExact);
  b.unary("min/values", OpId::min, A, A, -3, 3, [](const Tensor& t) { return min(t, 0, true).values; })
      .with([](const Refs& in, ScalarType) { return ref::max_dim(in[0], 0, true, false).values; }, kExact);
  b.unary("min/indices", OpId::min, A, A, -3, 3, [](const Tensor& t) { return min(t, 0).indices; }, kInt64Out)
      .with([](const Refs& in, ScalarType) { return ref::max_dim(in[0], 0, false, false).indices; }, kExact);
  b.unary("argmax", OpId::argmax, N, N, -3, 3, [](const Tensor& t) { return argmax(t, 1); }, kInt64Out)
      .with([](const Refs& in, ScalarType) { return ref::max_dim(in[0], 1, false).indices; }, kExact);
  b.unary("argmin/flat", OpId::argmin, N, N, -3, 3, [](const Tensor& t) { return argmin(t); }, kInt64Out)
      .with([](const Refs& in, ScalarType) {
        return ref::max_dim(ref::reshape(in[0], {ref::numel_of(in[0].sizes)}), 0, false, false).indices;
      }, kExact);
  // Welford's recurrence in double: a few roundings per element at the size of the squares (<= 9).
  b.unary("var", OpId::var, F, F, -3, 3, [](const Tensor& t) { return var(t, {1}); })
      .with([](const Refs& in, ScalarType) { return ref::var(in[0], {1}, 1.0); }, dbl(20, 9));
  b.unary("std", OpId::std, F, F, -3, 3, [](const Tensor& t) { return std(t, {0}, 0.0, true); })
      .with([](const Refs& in, ScalarType) { return ref::std_dev(in[0], {0}, 0.0, true); }, dbl(20, 3));
  b.unary("norm", OpId::norm, F, F, -3, 3, [](const Tensor& t) { return norm(t, 2.0, {1}); })
      .with([](const Refs& in, ScalarType) { return ref::norm(in[0], 2.0, {1}); }, dbl(6, 0));
  b.unary("norm/inf", OpId::norm, F, F, -3, 3, [](const Tensor& t) { return norm(t, INFINITY); })
      .with([](const Refs& in, ScalarType) { return ref::norm(in[0], INFINITY); }, kExact);
  b.unary("norm/p3", OpId::norm, F, F, -3, 3, [](const Tensor& t) { return norm(t, 3.0, {0}); })
      .with([](const Refs& in, ScalarType) { return ref::norm(in[0], 3.0, {0}); }, dbl(8, 0));  // pow twice
  // Integers and bool compute in float32 (exp and log are float there).
  b.unary("logsumexp", OpId::logsumexp, A, A, -3, 3, [](const Tensor& t) { return logsumexp(t, {1}); },
          kFloatPromote)
      .with([](const Refs& in, ScalarType) { return ref::logsumexp(in[0], {1}); }, dbl(8, 0));
  b.unary("cumsum", OpId::cumsum, A, A, -3, 3, [](const Tensor& t) { return cumsum(t, 1); }, kSumOut)
      .with([](const Refs& in, ScalarType) { return ref::scan(in[0], 1, false); }, dbl(4, 15));
  b.unary("cumprod", OpId::cumprod, A, A, 0.5, 1.5, [](const Tensor& t) { return cumprod(t, 0); }, kSumOut)
      .with([](const Refs& in, ScalarType) { return ref::scan(in[0], 0, true); }, dbl(3, 0));
  b.unary("all", OpId::all, A, A, -1, 1, [](const Tensor& t) { return all(t, {1}); }, kBoolOut)
      .with([](const Refs& in, ScalarType) { return ref::all(in[0], {1}); }, kExact);
  b.unary("any", OpId::any, A, A, -1, 1, [](const Tensor& t) { return any(t); }, kBoolOut)
      .with([](const Refs& in, ScalarType) { return ref::any(in[0]); }, kExact);
}

// scaled_mm: the tested dtype is out_dtype; the float8 operands and float32 scales are the same for
// every dtype (scale_result excepted). The reference's slack covers the float32 arithmetic (the order
// of sgemm's sums is the kernel's choice); beyond it, the one rounding to out_dtype: half an ulp.
void add_scaled_mm_cases(Builder& b) {
  auto f8 = [](ScalarType dt, Shape s, uint32_t seed) { return data(kFloat32, s, -2, 2, seed).to(dt); };
  auto value = [](double v) { return full({}, v, {.dtype = kFloat32}); };
  auto limit = [](ScalarType dt) { return dt == kFloat8_e4m3fn ? 448.0 : dt == kFloat8_e5m2 ? 57344.0 : 0.0; };
  constexpr uint32_t kFloat8Out = dtypes::bit(kFloat8_e4m3fn) | dtypes::bit(kFloat8_e5m2);
  // Per-tensor scales (a 0-dim and a one-element 1-D tensor), no bias. float8_e5m2 results need an
  // e5m2 operand: refused here.
  // Shapes: K and N multiples of 16 (cuBLASLt's float8 rule), b column-major (Hopper's TN) or row-major (copied).
  constexpr uint32_t kTensorwiseOut =
      dtypes::bit(kBFloat16) | dtypes::bit(kFloat16) | dtypes::bit(kFloat32) | dtypes::bit(kFloat8_e4m3fn);
  b.add("scaled_mm/tensorwise", OpId::scaled_mm, kTensorwiseOut, kTensorwiseOut,
        [=](ScalarType) {
          return CaseInputs{{f8(kFloat8_e4m3fn, {5, 32}, 40), f8(kFloat8_e4m3fn, {16, 32}, 41).t(), value(0.3),
                             full({1}, 1.7, {.dtype = kFloat32})}};
        },
        [](const std::vector<Tensor>& in, ScalarType dt, Device) {
          return scaled_mm(in[0], in[1], in[2], in[3], {.out_dtype = dt}).out;
        })
      .with([=](const Refs& in, ScalarType dt) { return ref::scaled_mm(in[0], in[1], in[2], in[3], nullptr, 1.0, limit(dt)); },
            kExact);
  // Row-wise scales in (0.1, 1) and a bias of the result's kind: bfloat16 and float16 results (no bias with
  // float32 results). Float8 results are refused with row-wise scales (cuBLASLt's outer-vector scaling has no
  // D scale: docs/gemm.md), even e5m2 ones, which the e5m2 operand would allow with per-tensor scales.
  b.add("scaled_mm/rowwise_bias", OpId::scaled_mm, dtypes::bit(kBFloat16) | dtypes::bit(kFloat16),
        dtypes::bit(kBFloat16) | dtypes::bit(kFloat16),
        [=](ScalarType dt) {
          return CaseInputs{{f8(kFloat8_e5m2, {4, 16}, 42), f8(kFloat8_e4m3fn, {16, 16}, 43),
                             data(kFloat32, {4, 1}, 0.1, 1, 44), data(kFloat32, {1, 16}, 0.1, 1, 45),
                             data(dt == kFloat16 ? kFloat16 : kBFloat16, {16}, -1, 1, 46)}};
        },
        [](const std::vector<Tensor>& in, ScalarType dt, Device) {
          return scaled_mm(in[0], in[1], in[2], in[3], {.bias = in[4], .out_dtype = dt}).out;
        })
      .with([=](const Refs& in, ScalarType dt) {
              return ref::scaled_mm(in[0], in[1], in[2], in[3], &in[4], 1.0, limit(dt));
            },
            kExact);
  // Float8 results under a scale_result that saturates many of them (|v| up to 2.4 * 4 * 32 before
  // it), and the amax of the result before scale_result. scale_result is refused for other results.
  auto saturating = [=](ScalarType dt) {
    return CaseInputs{{f8(kFloat8_e4m3fn, {6, 32}, 47), f8(kFloat8_e5m2, {32, 16}, 48), value(0.8), value(3.0),
                       value(dt == kFloat8_e5m2 ? 2048.0 : 16.0)}};
  };
  auto saturating_call = [](const std::vector<Tensor>& in, ScalarType dt) {
    return scaled_mm(in[0], in[1], in[2], in[3], {.scale_result = in[4], .out_dtype = dt});
  };
  b.add("scaled_mm/saturating", OpId::scaled_mm, kFloat8Out, kFloat8Out, saturating,
        [=](const std::vector<Tensor>& in, ScalarType dt, Device) { return saturating_call(in, dt).out; })
      .with([=](const Refs& in, ScalarType dt) {
              return ref::scaled_mm(in[0], in[1], in[2], in[3], nullptr, in[4].v[0], limit(dt));
            },
            kExact);
  b.add("scaled_mm/amax", OpId::scaled_mm, kFloat8Out, kFloat8Out, saturating,
        [=](const std::vector<Tensor>& in, ScalarType dt, Device) { return saturating_call(in, dt).amax; }, kFloat32Out)
      .with([=](const Refs& in, ScalarType dt) {
              ref::Ref amax;
              ref::scaled_mm(in[0], in[1], in[2], in[3], nullptr, in[4].v[0], limit(dt), &amax);
              return amax;
            },
            kExact);
}

void add_matmul_cases(Builder& b) {
  // Operands in [-2, 2]: products up to 4. float32 (and the narrow floats, widened to float32)
  // accumulate in float32, float64 in double: a sum of k products loses up to k roundings at the
  // size of the sum of |products| (k * 4).
  auto two_mats = [](Shape sa, Shape sb) {
    return [=](ScalarType dt) { return CaseInputs{{data(dt, sa, -2, 2, 18), data(dt, sb, -2, 2, 19)}, 0b11}; };
  };
  // The CUDA GEMM engine's dtypes (kernels/cuda/gemm): the standard floats.
  constexpr uint32_t G = dtypes::kStandardFloat;
  auto product = [&](const char* label, OpId op, Shape sa, Shape sb, std::function<Tensor(const Tensor&, const Tensor&)> f,
                     std::function<ref::Ref(const ref::Ref&, const ref::Ref&)> r, int64_t k, uint32_t cuda = kNoCuda) {
    b.add(label, op, N, cuda, two_mats(sa, sb),
          [f](const std::vector<Tensor>& in, ScalarType, Device) { return f(in[0], in[1]); })
        .with([r](const Refs& in, ScalarType) { return r(in[0], in[1]); },
              {0.5, static_cast<double>(k), 4.0 * static_cast<double>(k)});
  };
  const auto mm_ref = [](const ref::Ref& x, const ref::Ref& y) { return ref::matmul(x, y); };
  product("mm", OpId::mm, {3, 8}, {8, 5}, [](const Tensor& x, const Tensor& y) { return mm(x, y); }, mm_ref, 8, G);
  product("mm/transposed", OpId::mm, {8, 3}, {5, 8}, [](const Tensor& x, const Tensor& y) { return mm(x.t(), y.t()); },
          [](const ref::Ref& x, const ref::Ref& y) { return ref::matmul(ref::transpose(x, 0, 1), ref::transpose(y, 0, 1)); },
          8, G);
  product("bmm", OpId::bmm, {2, 3, 8}, {2, 8, 4}, [](const Tensor& x, const Tensor& y) { return bmm(x, y); }, mm_ref, 8, G);
  product("matmul/batched", OpId::matmul, {2, 3, 8}, {8, 4}, [](const Tensor& x, const Tensor& y) { return matmul(x, y); },
          mm_ref, 8);
  product("linear", OpId::linear, {2, 3, 8}, {5, 8}, [](const Tensor& x, const Tensor& w) { return fn::linear(x, w); },
          [](const ref::Ref& x, const ref::Ref& w) { return ref::linear(x, w); }, 8, G);
  product("dot", OpId::dot, {8}, {8}, [](const Tensor& x, const Tensor& y) { return dot(x, y); }, mm_ref, 8);
  product("mv", OpId::mv, {3, 8}, {8}, [](const Tensor& x, const Tensor& y) { return mv(x, y); }, mm_ref, 8);
  product("outer", OpId::outer, {3}, {4}, [](const Tensor& x, const Tensor& y) { return outer(x, y); },
          [](const ref::Ref& x, const ref::Ref& y) { return ref::outer(x, y); }, 0);
  auto three_mats = [](Shape s0, Shape s1, Shape s2) {
    return [=](ScalarType dt) {
      return CaseInputs{{data(dt, s0, -2, 2, 20), data(dt, s1, -2, 2, 21), data(dt, s2, -2, 2, 22)}, 0b111};
    };
  };
  // 8 products, scaled by alpha, plus beta * bias: 10 roundings at the size of alpha * 32 + beta * 2.
  b.add("addmm", OpId::addmm, N, G, three_mats({5}, {3, 8}, {8, 5}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return addmm(in[0], in[1], in[2], 1, 2); })
      .with([](const Refs& in, ScalarType) { return ref::addmm(in[0], in[1], in[2], 1, 2); }, {0.5, 10, 66});
  b.add("baddbmm", OpId::baddbmm, N, G, three_mats({2, 3, 5}, {2, 3, 8}, {2, 8, 5}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return baddbmm(in[0], in[1], in[2], 2, 1); })
      .with([](const Refs& in, ScalarType) { return ref::addmm(in[0], in[1], in[2], 2, 1); }, {0.5, 10, 36});
  b.add("linear/bias", OpId::linear, N, G, three_mats({4, 8}, {5, 8}, {5}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return fn::linear(in[0], in[1], in[2]); })
      .with([](const Refs& in, ScalarType) { return ref::linear(in[0], in[1], &in[2]); }, {0.5, 9, 34});
  // A bias that broadcasts to the output without being one row (PyTorch's autocast list passes an
  // [8, 8] bias): a whole [rows, out] bias, and one that varies along x's leading dims.
  b.add("linear/bias_2d", OpId::linear, N, G, three_mats({4, 8}, {5, 8}, {4, 5}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return fn::linear(in[0], in[1], in[2]); })
      .with([](const Refs& in, ScalarType) { return ref::linear(in[0], in[1], &in[2]); }, {0.5, 9, 34});
  b.add("linear/bias_broadcast", OpId::linear, N, G, three_mats({2, 3, 8}, {5, 8}, {3, 1}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return fn::linear(in[0], in[1], in[2]); })
      .with([](const Refs& in, ScalarType) { return ref::linear(in[0], in[1], &in[2]); }, {0.5, 9, 34});
  // linear_backward(g [2, 3, 5], x [2, 3, 8], w [5, 8]), one case per gradient: 5 products (up to 4)
  // per grad_input value, 6 per grad_weight value, 6 values (up to 2) per grad_bias value. On CUDA
  // the bias gradient comes out of the weight GEMM's BGRADB epilogue (float64: a GEMM and `sum`).
  auto grads_case = [&](const char* label, int which, Tolerance tol) {
    b.add(label, OpId::linear_backward, N, G, three_mats({2, 3, 5}, {2, 3, 8}, {5, 8}),
          [which](const std::vector<Tensor>& in, ScalarType, Device) {
            const fn::LinearGrads r = fn::linear_backward(in[0], in[1], in[2], which == 0, true, which == 2);
            return which == 0 ? r.input : which == 1 ? r.weight : r.bias;
          })
        .with(
            [which](const Refs& in, ScalarType) {
              const ref::LinearGrads r = ref::linear_backward(in[0], in[1], in[2]);
              return which == 0 ? r.input : which == 1 ? r.weight : r.bias;
            },
            tol);
  };
  grads_case("linear_backward/input", 0, {0.5, 5, 20});
  grads_case("linear_backward/weight", 1, {0.5, 6, 24});
  grads_case("linear_backward/bias", 2, {0.5, 6, 12});
  add_scaled_mm_cases(b);
}

std::vector<OpCase> build_cases() {
  Builder b;
  add_creation_cases(b);
  add_view_and_movement_cases(b);
  add_index_cases(b);
  add_select_cases(b);
  add_unary_cases(b);
  add_binary_cases(b);
  add_reduction_cases(b);
  add_matmul_cases(b);
  add_linalg_cases(b);
  add_nn_cases(b);
  add_spatial_cases(b);
  add_rnn_cases(b);
  add_amp_cases(b);
  // A composite op has no kernel of its own: on CUDA it runs its inner ops' CUDA kernels,
  // so its CUDA dtypes are the CPU's, limited to mm's CUDA dtypes where it multiplies
  // matrices (the GEMM engine takes no integers or float8), unless a case says otherwise.
  // This is a declaration, not a measurement: the GPU coverage run
  // (tests/cuda/test_cuda_coverage.cpp) checks it.
  uint32_t mm_cuda = 0;
  for (const OpCase& c : b.cases)
    if (c.op == OpId::mm) mm_cuda |= c.cuda_dtypes;
  const std::set<OpId> multiplies_matrices = {OpId::matmul, OpId::dot,    OpId::mv, OpId::outer,
                                              OpId::conv1d, OpId::conv2d, OpId::scaled_dot_product_attention,
                                              OpId::conv3d, OpId::conv_transpose1d, OpId::conv_transpose2d,
                                              OpId::conv_transpose3d};
  for (OpCase& c : b.cases)
    if (c.cuda_dtypes == kNoCuda && op_entry(c.op).has(op_flags::Composite))
      c.cuda_dtypes = multiplies_matrices.count(c.op) ? c.cpu_dtypes & mm_cuda : c.cpu_dtypes;
  return b.cases;
}

std::string short_dtype_list(uint32_t set) {
  if (set == 0) return "—";
  if (set == A) return "all";
  if (set == N) return "all but bool";
  if (set == F) return "floating";
  std::string s;
  for (int i = 0; i < kNumDtypes; ++i) {
    const auto t = static_cast<ScalarType>(i);
    if (!dtypes::contains(set, t)) continue;
    if (!s.empty()) s += ", ";
    s += dtype_name(t);
  }
  return s;
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = build_cases();
  return cases;
}

std::string compare_with_reference(const Tensor& got, const ref::Ref& want, const Tolerance& tol) {
  std::ostringstream why;
  if (got.sizes() != Shape(want.sizes)) {
    why << "shape " << got.sizes().str() << ", reference " << Shape(want.sizes).str();
    return why.str();
  }
  const ScalarType dt = got.dtype();
  const std::vector<double> g = got.to(Device::cpu()).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    const double slack = want.slack.empty() ? 0.0 : want.slack[i];
    if (!within(dt, g[i], want.v[i], tol, slack)) {
      why.precision(17);
      why << "element " << i << " = " << g[i] << ", reference " << want.v[i];
      if (is_floating(dt) && std::isfinite(want.v[i]))
        why << " (allowed error " << allowed_error(dt, want.v[i], tol) + slack << ", " << std::abs(g[i] - want.v[i]) / ulp_of(dt, want.v[i])
            << " ulps off)";
      return why.str();
    }
  }
  return "";
}

std::string run_case(const OpCase& c, ScalarType dt, Device dev) {
  std::ostringstream why;
  why << c.label << " [" << dtype_name(dt) << ", " << dev.str() << "]: ";
  try {
    CaseInputs ci = c.make(dt);
    std::vector<Tensor> in;
    std::vector<ref::Ref> ref_in;
    for (const Tensor& t : ci.in) {
      in.push_back(t.to(dev));
      ref_in.push_back({t.sizes().vec(), t.to_vector<double>()});  // the values the tested dtype holds
    }
    const Tensor got = c.run(in, dt, dev);
    const ScalarType want = c.out_dtype ? c.out_dtype(dt) : dt;
    if (got.dtype() != want) {
      why << "result dtype " << dtype_name(got.dtype()) << ", expected " << dtype_name(want);
      return why.str();
    }
    if (got.device() != dev) {
      why << "result on " << got.device().str();
      return why.str();
    }
    if (c.check) {
      c.check(got, dt);
      return "";
    }
    if (!c.reference) return why.str() + "no reference";
    const std::string r = compare_with_reference(got, c.reference(ref_in, dt), c.tol);
    return r.empty() ? r : why.str() + r;
  } catch (const std::exception& e) {
    why << "raised: " << e.what();
    return why.str();
  }
}

std::string op_support_markdown() {
  std::map<int, uint32_t> cpu, cuda;
  for (const OpCase& c : op_cases()) {
    cpu[static_cast<int>(c.op)] |= c.cpu_dtypes;
    cuda[static_cast<int>(c.op)] |= c.cuda_dtypes;
  }
  std::ostringstream md;
  md << "# Op support\n\n"
        "Generated by `tests/cpu/test_op_coverage.cpp` from the op-case table (`tests/support/op_cases.cpp`);\n"
        "the test fails when this file is stale (regenerate with `MIXT_UPDATE_DOCS=1 build/tests/test_op_coverage`).\n\n"
     << op_support_summary_markdown()
     << "## Per op\n\n"
        "- **CPU**: every listed dtype is run and compared with an independent double reference (plain loops in\n"
        "  `tests/support/reference*.cpp`, which never call mixt) within a tolerance in ulps of the result's\n"
        "  dtype (`Note [Tolerances in ulps]` in docs/notes/numerics.md); every dtype not listed must raise\n"
        "  `mixt::Error`.\n"
        "- **CUDA**: the dtypes the CUDA kernels take (for a composite op, which has no kernel of its own, the\n"
        "  dtypes its inner ops take on CUDA). The test checks them against the registered kernels in every CUDA\n"
        "  build, and `tests/cuda/test_cuda_coverage.cpp` runs them against the same references on a CUDA\n"
        "  device (where it has run: [cuda.md](cuda.md#status)). `—`: no CUDA kernel yet; the op raises\n"
        "  `mixt::Error` naming the missing kernel (the list: [cuda.md](cuda.md#status)).\n"
        "- *all* = bool, uint8, int8, int32, int64, float16, bfloat16, float32, float64, float8_e4m3fn,\n"
        "  float8_e5m2; *floating* = the last six.\n\n"
        "| op | flags | CPU | CUDA |\n|---|---|---|---|\n";
  for (int i = 0; i < kNumBuiltinOps; ++i) {
    const OpEntry& e = op_entry(static_cast<OpId>(i));
    std::string flags;
    auto flag = [&](uint32_t f, const char* s) {
      if (e.has(f)) flags += flags.empty() ? s : std::string(", ") + s;
    };
    flag(op_flags::Inplace, "in-place");
    flag(op_flags::View, "view");
    flag(op_flags::Composite, "composite");
    flag(op_flags::Factory, "factory");
    flag(op_flags::Random, "random");
    flag(op_flags::Diff, "differentiable");
    flag(op_flags::BackwardRaises, "backward raises");
    flag(op_flags::KeepsDtypes, "never autocast");
    md << "| `" << e.schema.name << "` | " << flags << " | " << short_dtype_list(cpu[i]) << " | "
       << short_dtype_list(cuda[i]) << " |\n";
  }
  return md.str();
}

}  // namespace mixt::testing
