// The op-case table and its runner. See op_cases.h.
#include "op_case_builder.h"

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>

namespace mixt::testing {
namespace {

std::vector<OpCase> build_cases() {
  Builder b;
  const OutRule& same = kSame;

  // ---- creation ----
  b.add("empty", OpId::empty, A, A, [](ScalarType) { return CaseInputs{}; },
        [](const std::vector<Tensor>&, ScalarType dt, Device dev) { return empty({2, 3}, {.dtype = dt, .device = dev}); });
  b.cases.back().check = [](const Tensor& r, ScalarType) {
    if (r.sizes() != Shape{2, 3}) throw Error("empty", "wrong shape " + r.sizes().str());
  };
  b.add("full", OpId::full, A, A, [](ScalarType) { return CaseInputs{}; },
        [](const std::vector<Tensor>&, ScalarType dt, Device dev) {
          return full({2, 3}, dt == kBool ? 1 : 3, {.dtype = dt, .device = dev});
        });
  b.add("arange", OpId::arange, N, kNoCuda, [](ScalarType) { return CaseInputs{}; },
        [](const std::vector<Tensor>&, ScalarType dt, Device dev) {
          return arange(1, 12, 2, {.dtype = dt, .device = dev});
        });
  b.add("linspace", OpId::linspace, N, kNoCuda, [](ScalarType) { return CaseInputs{}; },
        [](const std::vector<Tensor>&, ScalarType dt, Device dev) {
          return linspace(-2, 2, 9, {.dtype = dt, .device = dev});
        });
  b.add("eye", OpId::eye, A, kNoCuda, [](ScalarType) { return CaseInputs{}; },
        [](const std::vector<Tensor>&, ScalarType dt, Device dev) { return eye(3, 4, {.dtype = dt, .device = dev}); });
  b.unary_("fill_", OpId::fill_, A, A, -2, 2, [](Tensor& t) { fill_(t, t.dtype() == kBool ? 1 : 2); });
  auto random_check = [](double lo, double hi) {
    return [lo, hi](const Tensor& r, ScalarType) {
      const Tensor x = r.to(Device::cpu(), kFloat64);
      const double mn = min(x).item<double>(), mx = max(x).item<double>(), mu = mean(x).item<double>();
      if (!(mn >= lo && mx <= hi)) throw Error("random", "values outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      if (std::abs(mu - (lo + hi) / 2) > 0.1 * (hi - lo)) throw Error("random", "mean " + std::to_string(mu));
    };
  };
  b.unary_("uniform_", OpId::uniform_, F, kNoCuda, 0, 0, [](Tensor& t) { uniform_(t, -1.0, 3.0); })
      .check = random_check(-1.0, 3.0);
  b.cases.back().make = [](ScalarType dt) { return CaseInputs{{zeros({4000}, {.dtype = dt})}, 0b1}; };
  b.unary_("normal_", OpId::normal_, F, kNoCuda, 0, 0, [](Tensor& t) { normal_(t, 2.0, 0.5); })
      .check = [](const Tensor& r, ScalarType) {
        const Tensor x = r.to(Device::cpu(), kFloat64);
        const double mu = mean(x).item<double>(), sd = std(x).item<double>();
        if (std::abs(mu - 2.0) > 0.05 || std::abs(sd - 0.5) > 0.1)
          throw Error("normal_", "mean " + std::to_string(mu) + " std " + std::to_string(sd));
      };
  b.cases.back().make = [](ScalarType dt) { return CaseInputs{{zeros({4000}, {.dtype = dt})}, 0b1}; };
  b.unary_("random_", OpId::random_, N, kNoCuda, 0, 0, [](Tensor& t) { random_(t, 0, 8); }).check =
      random_check(0, 7);
  b.cases.back().make = [](ScalarType dt) { return CaseInputs{{zeros({4000}, {.dtype = dt})}, 0b1}; };

  // ---- views ----
  b.unary("view", OpId::view, A, A, -3, 3, [](const Tensor& t) { return t.view({5, 3}); });
  b.unary("permute", OpId::permute, A, A, -3, 3, [](const Tensor& t) { return t.permute({1, 0}); });
  b.unary("slice", OpId::slice, A, A, -3, 3, [](const Tensor& t) { return t.slice(1, 1, 5, 2); });
  b.unary("select", OpId::select, A, A, -3, 3, [](const Tensor& t) { return t.select(1, -2); });
  b.unary("expand", OpId::expand, A, A, -3, 3, [](const Tensor& t) { return t.unsqueeze(0).expand({2, 3, 5}); });
  b.unary("squeeze", OpId::squeeze, A, A, -3, 3, [](const Tensor& t) { return t.view({3, 1, 5}).squeeze(); });
  b.unary("unsqueeze", OpId::unsqueeze, A, A, -3, 3, [](const Tensor& t) { return t.unsqueeze(1); });
  b.unary("as_strided", OpId::as_strided, A, A, -3, 3,
          [](const Tensor& t) { return as_strided(t, {2, 3}, {2, 4}, 1); });

  // ---- copies and movement ----
  b.unary("clone", OpId::clone, A, A, -3, 3, [](const Tensor& t) { return t.t().clone(); });
  b.binary("copy_/broadcast", OpId::copy_, A, A, -3, 3, -3, 3, [](const Tensor& a, const Tensor& c) {
    Tensor d = a.clone();
    return copy_(d, c);
  });
  b.unary("to/float32", OpId::to, A, F, -3, 3, [](const Tensor& t) { return t.to(kFloat32); }, kFloat32Out);
  b.binary("cat", OpId::cat, A, A, -3, 3, -3, 3,
           [](const Tensor& a, const Tensor& c) { return cat({a, c.unsqueeze(0)}, 0); });
  b.binary("stack", OpId::stack, A, A, -3, 3, -3, 3,
           [](const Tensor& a, const Tensor& c) { return stack({a.select(0, 1), c}, 1); });

  // ---- indexing ----
  b.add("index_select", OpId::index_select, A, kNoCuda,
        [](ScalarType dt) { return CaseInputs{{data(dt, {4, 5}, -3, 3, 4), index_tensor({3, 0, 3}, {3})}, 0b01}; },
        [](const std::vector<Tensor>& in, ScalarType, Device) { return index_select(in[0], 1, in[1]); });
  b.add("gather", OpId::gather, A, kNoCuda,
        [](ScalarType dt) {
          return CaseInputs{{data(dt, {3, 4}, -3, 3, 5), index_tensor({0, 3, 1, 1, 2, 0}, {3, 2})}, 0b01};
        },
        [](const std::vector<Tensor>& in, ScalarType, Device) { return gather(in[0], 1, in[1]); });
  auto scatter_inputs = [](ScalarType dt) {
    return CaseInputs{{data(dt, {3, 4}, -3, 3, 6), index_tensor({2, 0, 1, 2, 0, 1, 0, 1}, {2, 4}),
                       data(dt, {2, 4}, -3, 3, 7)},
                      0b101};
  };
  b.add("scatter", OpId::scatter, A, kNoCuda, scatter_inputs,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return scatter(in[0], 0, in[1], in[2]); });
  b.add("scatter/value", OpId::scatter, A, kNoCuda, scatter_inputs,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return scatter(in[0], 0, in[1], Scalar(1)); });
  b.add("scatter_", OpId::scatter_, A, kNoCuda, scatter_inputs, [](const std::vector<Tensor>& in, ScalarType, Device) {
    Tensor x = in[0].clone();
    return scatter_(x, 0, in[1], in[2]);
  });
  auto scatter_add_inputs = [](ScalarType dt) {
    return CaseInputs{{data(dt, {3, 4}, -3, 3, 6), index_tensor({2, 0, 2, 2, 2, 1, 0, 2}, {2, 4}),
                       data(dt, {2, 4}, -3, 3, 7)},
                      0b101};
  };
  b.add("scatter_add", OpId::scatter_add, A, kNoCuda, scatter_add_inputs,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return scatter_add(in[0], 0, in[1], in[2]); })
      .tolerance_scale = 2;
  b.add("scatter_add_", OpId::scatter_add_, A, kNoCuda, scatter_add_inputs,
        [](const std::vector<Tensor>& in, ScalarType, Device) {
          Tensor x = in[0].clone();
          return scatter_add_(x, 0, in[1], in[2]);
        })
      .tolerance_scale = 2;
  auto mask_inputs = [](ScalarType dt) {
    return CaseInputs{{data(dt, {3, 4}, -3, 3, 8), data(kBool, {4}, 0, 1, 9)}, 0b01};
  };
  b.add("masked_fill", OpId::masked_fill, A, kNoCuda, mask_inputs,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return masked_fill(in[0], in[1], Scalar(1)); });
  b.add("masked_fill_", OpId::masked_fill_, A, kNoCuda, mask_inputs,
        [](const std::vector<Tensor>& in, ScalarType, Device) {
          Tensor x = in[0].clone();
          return masked_fill_(x, in[1], Scalar(1));
        });
  b.add("where", OpId::where, A, kNoCuda,
        [](ScalarType dt) {
          return CaseInputs{{data(kBool, {3, 1}, 0, 1, 10), data(dt, {3, 4}, -3, 3, 11), data(dt, {4}, -3, 3, 12)},
                            0b110};
        },
        [](const std::vector<Tensor>& in, ScalarType, Device) { return where(in[0], in[1], in[2]); });
  b.add("embedding", OpId::embedding, A, kNoCuda,
        [](ScalarType dt) {
          return CaseInputs{{data(dt, {5, 3}, -3, 3, 13), index_tensor({4, 0, 4, 2, 1, 1}, {2, 3})}, 0b01};
        },
        [](const std::vector<Tensor>& in, ScalarType, Device) { return embedding(in[0], in[1]); });

  // ---- elementwise unary ----
  struct UnarySpec {
    OpId op, op_;
    const char* name;
    Tensor (*f)(const Tensor&);
    Tensor& (*f_)(Tensor&);
    double lo, hi;
    bool float_only;  // integer inputs promote to float32; the in-place form is floating-only
  };
  const UnarySpec unaries[] = {
      {OpId::neg, OpId::neg_, "neg", neg, neg_, -3, 3, false},
      {OpId::abs, OpId::abs_, "abs", abs, abs_, -3, 3, false},
      {OpId::sign, OpId::sign_, "sign", sign, sign_, -3, 3, false},
      {OpId::exp, OpId::exp_, "exp", exp, exp_, -3, 3, true},
      {OpId::expm1, OpId::expm1_, "expm1", expm1, expm1_, -2, 2, true},
      {OpId::log, OpId::log_, "log", log, log_, 0.1, 5, true},
      {OpId::log1p, OpId::log1p_, "log1p", log1p, log1p_, 0, 5, true},
      {OpId::log2, OpId::log2_, "log2", log2, log2_, 0.1, 5, true},
      {OpId::log10, OpId::log10_, "log10", log10, log10_, 0.1, 5, true},
      {OpId::sqrt, OpId::sqrt_, "sqrt", sqrt, sqrt_, 0, 5, true},
      {OpId::rsqrt, OpId::rsqrt_, "rsqrt", rsqrt, rsqrt_, 0.2, 5, true},
      {OpId::reciprocal, OpId::reciprocal_, "reciprocal", reciprocal, reciprocal_, 0.3, 4, true},
      {OpId::sin, OpId::sin_, "sin", sin, sin_, -3, 3, true},
      {OpId::cos, OpId::cos_, "cos", cos, cos_, -3, 3, true},
      {OpId::tan, OpId::tan_, "tan", tan, tan_, -1.2, 1.2, true},
      {OpId::tanh, OpId::tanh_, "tanh", tanh, tanh_, -3, 3, true},
      {OpId::sigmoid, OpId::sigmoid_, "sigmoid", sigmoid, sigmoid_, -4, 4, true},
      {OpId::relu, OpId::relu_, "relu", relu, relu_, -3, 3, false},
      {OpId::silu, OpId::silu_, "silu", silu, silu_, -4, 4, true},
      {OpId::erf, OpId::erf_, "erf", erf, erf_, -2, 2, true},
      {OpId::erfinv, OpId::erfinv_, "erfinv", erfinv, erfinv_, -0.9, 0.9, true},
      {OpId::floor, OpId::floor_, "floor", floor, floor_, -3, 3, false},
      {OpId::ceil, OpId::ceil_, "ceil", ceil, ceil_, -3, 3, false},
  };
  for (const UnarySpec& u : unaries) {
    // sign of a bool is the bool itself (PyTorch supports it); the other non-float ops refuse bool.
    const uint32_t dts = u.float_only || u.op == OpId::sign ? A : N;
    b.unary(u.name, u.op, dts, kNoCuda, u.lo, u.hi, u.f, u.float_only ? kFloatPromote : same);
    auto f_ = u.f_;
    b.unary_(std::string(u.name) + "_", u.op_, u.float_only ? F : u.op == OpId::sign ? A : N, kNoCuda, u.lo, u.hi, [f_](Tensor& t) { f_(t); });
  }
  b.unary("gelu", OpId::gelu, A, kNoCuda, -4, 4, [](const Tensor& t) { return gelu(t); }, kFloatPromote);
  b.unary("gelu/tanh", OpId::gelu, A, kNoCuda, -4, 4, [](const Tensor& t) { return gelu(t, "tanh"); },
          kFloatPromote);
  b.unary_("gelu_", OpId::gelu_, F, kNoCuda, -4, 4, [](Tensor& t) { gelu_(t); });
  b.unary("softplus", OpId::softplus, A, kNoCuda, -4, 4, [](const Tensor& t) { return softplus(t, 2.0, 5.0); },
          kFloatPromote);
  b.unary_("softplus_", OpId::softplus_, F, kNoCuda, -4, 4, [](Tensor& t) { softplus_(t); });
  b.unary("round", OpId::round, N, kNoCuda, -3, 3, [](const Tensor& t) { return round(t); });
  b.unary("round/decimals", OpId::round, F, kNoCuda, -3, 3, [](const Tensor& t) { return round(t, 1); })
      .tolerance_scale = 2;
  b.unary_("round_", OpId::round_, N, kNoCuda, -3, 3, [](Tensor& t) { round_(t); });
  b.unary("clamp", OpId::clamp, N, kNoCuda, -3, 3, [](const Tensor& t) { return clamp(t, -1, 2); });
  b.unary("clamp/max_only", OpId::clamp, N, kNoCuda, -3, 3, [](const Tensor& t) { return clamp_max(t, 1); });
  b.unary_("clamp_", OpId::clamp_, N, kNoCuda, -3, 3, [](Tensor& t) { clamp_(t, -1, 2); });
  auto with_specials = [](ScalarType dt) {
    Tensor t = data(dt, {6}, -3, 3, 14);
    if (is_floating(dt)) {
      t = from_vector(std::vector<double>{1.5, -INFINITY, NAN, 0.0, INFINITY, -2.0}).to(dt);
    }
    return CaseInputs{{t}, 0b1};
  };
  for (auto [op, f] : {std::pair{OpId::isfinite, &isfinite}, {OpId::isnan, &isnan}, {OpId::isinf, &isinf}}) {
    b.add(std::string(op_name(op)), op, A, kNoCuda, with_specials,
          [f](const std::vector<Tensor>& in, ScalarType, Device) { return f(in[0]); }, kBoolOut);
  }
  b.unary("logical_not", OpId::logical_not, A, kNoCuda, -2, 2, [](const Tensor& t) { return logical_not(t); },
          kBoolOut);

  // ---- elementwise binary ----
  b.binary("add", OpId::add, A, F, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) { return add(x, y, 2); });
  b.binary("add/scalar", OpId::add, A, F, -3, 3, -3, 3, [](const Tensor& x, const Tensor&) { return x + 1.5; },
           [](ScalarType dt) { return is_floating(dt) ? dt : kFloat32; });
  b.binary("add_", OpId::add_, A, F, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) {
    Tensor z = x.clone();
    return add_(z, y);
  });
  b.binary("sub", OpId::sub, N, kNoCuda, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) { return sub(x, y); });
  b.binary("sub_", OpId::sub_, N, kNoCuda, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) {
    Tensor z = x.clone();
    return sub_(z, y, 2);
  });
  b.binary("mul", OpId::mul, A, F, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) { return mul(x, y); });
  b.binary("mul/scalar", OpId::mul, A, F, -3, 3, -3, 3, [](const Tensor& x, const Tensor&) { return x * 3; },
           [](ScalarType dt) { return dt == kBool ? kInt64 : dt; });
  b.binary("mul_", OpId::mul_, A, F, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) {
    Tensor z = x.clone();
    return mul_(z, y);
  });
  b.binary("div", OpId::div, A, kNoCuda, -3, 3, 0.5, 3, [](const Tensor& x, const Tensor& y) { return div(x, y); },
           kFloatPromote);
  b.binary("div/floor", OpId::div, N, kNoCuda, -9, 9, 1, 4,
           [](const Tensor& x, const Tensor& y) { return div(x, y, "floor"); });
  b.binary("div/trunc", OpId::div, N, kNoCuda, -9, 9, 1, 4,
           [](const Tensor& x, const Tensor& y) { return div(x, y, "trunc"); });
  b.binary("div_", OpId::div_, F, kNoCuda, -3, 3, 0.5, 3, [](const Tensor& x, const Tensor& y) {
    Tensor z = x.clone();
    return div_(z, y);
  });
  b.binary("pow", OpId::pow, N, kNoCuda, 0.5, 2, 0, 3, [](const Tensor& x, const Tensor& y) { return pow(x, y); })
      .tolerance_scale = 2;
  b.binary("pow_", OpId::pow_, N, kNoCuda, 0.5, 2, 0, 3, [](const Tensor& x, const Tensor& y) {
    Tensor z = x.clone();
    return pow_(z, y);
  }).tolerance_scale = 2;
  b.binary("atan2", OpId::atan2, A, kNoCuda, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) { return atan2(x, y); },
           kFloatPromote);
  b.binary("atan2_", OpId::atan2_, F, kNoCuda, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) {
    Tensor z = x.clone();
    return atan2_(z, y);
  });
  b.binary("maximum", OpId::maximum, A, kNoCuda, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) { return maximum(x, y); });
  b.binary("minimum", OpId::minimum, A, kNoCuda, -3, 3, -3, 3, [](const Tensor& x, const Tensor& y) { return minimum(x, y); });
  using BinFn = Tensor (*)(const Tensor&, const Tensor&);
  for (auto [op, f] : {std::pair<OpId, BinFn>{OpId::eq, &eq}, {OpId::ne, &ne}, {OpId::lt, &lt}, {OpId::le, &le},
                       {OpId::gt, &gt}, {OpId::ge, &ge}, {OpId::logical_and, &logical_and},
                       {OpId::logical_or, &logical_or}, {OpId::logical_xor, &logical_xor}}) {
    b.binary(std::string(op_name(op)), op, A, kNoCuda, -2, 2, -2, 2, f, kBoolOut);
  }

  // ---- ternary ----
  auto three = [](ScalarType dt) {
    return CaseInputs{{data(dt, {3, 4}, -3, 3, 15), data(dt, {4}, -3, 3, 16), data(dt, {3, 1}, 0.5, 3, 17)}, 0b111};
  };
  b.add("addcmul", OpId::addcmul, N, kNoCuda, three,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return addcmul(in[0], in[1], in[2], 2); });
  b.add("addcmul_", OpId::addcmul_, N, kNoCuda, three, [](const std::vector<Tensor>& in, ScalarType, Device) {
    Tensor z = in[0].clone();
    return addcmul_(z, in[1], in[2], 2);
  });
  b.add("addcdiv", OpId::addcdiv, F, kNoCuda, three,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return addcdiv(in[0], in[1], in[2], 0.5); });
  b.add("addcdiv_", OpId::addcdiv_, F, kNoCuda, three, [](const std::vector<Tensor>& in, ScalarType, Device) {
    Tensor z = in[0].clone();
    return addcdiv_(z, in[1], in[2], 0.5);
  });
  b.add("lerp", OpId::lerp, F, kNoCuda, three,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return lerp(in[0], in[1], in[2]); })
      .tolerance_scale = 2;
  b.add("lerp/scalar", OpId::lerp, F, kNoCuda, three,
        [](const std::vector<Tensor>& in, ScalarType, Device) { return lerp(in[0], in[1], 0.25); });
  b.add("lerp_", OpId::lerp_, F, kNoCuda, three, [](const std::vector<Tensor>& in, ScalarType, Device) {
    Tensor z = in[0].clone();
    return lerp_(z, in[1], in[2]);
  }).tolerance_scale = 2;

  // ---- reductions ----
  b.unary("sum", OpId::sum, A, kNoCuda, -3, 3, [](const Tensor& t) { return sum(t, {1}); }, kSumOut,
          {3, 5, 2})
      .magnitude = 3;
  b.unary("sum/all", OpId::sum, A, kNoCuda, -3, 3, [](const Tensor& t) { return sum(t); }, kSumOut).magnitude = 5;
  b.unary("mean", OpId::mean, F, kNoCuda, -3, 3, [](const Tensor& t) { return mean(t, {0, 2}, true); }, same,
          {3, 5, 2});
  b.unary("prod", OpId::prod, A, kNoCuda, 0.5, 1.5, [](const Tensor& t) { return prod(t, {0}); }, kSumOut)
      .tolerance_scale = 2;
  b.unary("amax", OpId::amax, A, kNoCuda, -3, 3, [](const Tensor& t) { return amax(t, {-1}); });
  b.unary("amin", OpId::amin, A, kNoCuda, -3, 3, [](const Tensor& t) { return amin(t, {0}, true); });
  b.unary("max/values", OpId::max, A, kNoCuda, -3, 3, [](const Tensor& t) { return max(t, 1).values; });
  b.unary("max/indices", OpId::max, A, kNoCuda, -3, 3, [](const Tensor& t) { return max(t, 1).indices; },
          kInt64Out);
  b.unary("min/values", OpId::min, A, kNoCuda, -3, 3, [](const Tensor& t) { return min(t, 0, true).values; });
  b.unary("min/indices", OpId::min, A, kNoCuda, -3, 3, [](const Tensor& t) { return min(t, 0).indices; },
          kInt64Out);
  b.unary("argmax", OpId::argmax, N, kNoCuda, -3, 3, [](const Tensor& t) { return argmax(t, 1); }, kInt64Out);
  b.unary("argmin/flat", OpId::argmin, N, kNoCuda, -3, 3, [](const Tensor& t) { return argmin(t); }, kInt64Out);
  b.unary("var", OpId::var, F, kNoCuda, -3, 3, [](const Tensor& t) { return var(t, {1}); }).tolerance_scale = 2;
  b.unary("std", OpId::std, F, kNoCuda, -3, 3, [](const Tensor& t) { return std(t, {0}, 0.0, true); })
      .tolerance_scale = 2;
  b.unary("norm", OpId::norm, F, kNoCuda, -3, 3, [](const Tensor& t) { return norm(t, 2.0, {1}); });
  b.unary("norm/inf", OpId::norm, F, kNoCuda, -3, 3, [](const Tensor& t) { return norm(t, INFINITY); });
  b.unary("norm/p3", OpId::norm, F, kNoCuda, -3, 3, [](const Tensor& t) { return norm(t, 3.0, {0}); });
  b.unary("logsumexp", OpId::logsumexp, A, kNoCuda, -3, 3, [](const Tensor& t) { return logsumexp(t, {1}); },
          kFloatPromote);
  b.unary("cumsum", OpId::cumsum, A, kNoCuda, -3, 3, [](const Tensor& t) { return cumsum(t, 1); }, kSumOut)
      .magnitude = 3;
  b.unary("cumprod", OpId::cumprod, A, kNoCuda, 0.5, 1.5, [](const Tensor& t) { return cumprod(t, 0); }, kSumOut)
      .tolerance_scale = 2;
  b.unary("all", OpId::all, A, kNoCuda, -1, 1, [](const Tensor& t) { return all(t, {1}); }, kBoolOut);
  b.unary("any", OpId::any, A, kNoCuda, -1, 1, [](const Tensor& t) { return any(t); }, kBoolOut);

  // ---- matmul family ----
  auto two_mats = [](Shape sa, Shape sb) {
    return [=](ScalarType dt) { return CaseInputs{{data(dt, sa, -2, 2, 18), data(dt, sb, -2, 2, 19)}, 0b11}; };
  };
  auto product = [&](const char* label, OpId op, Shape sa, Shape sb, std::function<Tensor(const Tensor&, const Tensor&)> f) {
    b.add(label, op, N, kNoCuda, two_mats(sa, sb),
          [f](const std::vector<Tensor>& in, ScalarType, Device) { return f(in[0], in[1]); })
        .magnitude = 4;
  };
  product("mm", OpId::mm, {3, 8}, {8, 5}, [](const Tensor& x, const Tensor& y) { return mm(x, y); });
  product("mm/transposed", OpId::mm, {8, 3}, {5, 8}, [](const Tensor& x, const Tensor& y) { return mm(x.t(), y.t()); });
  product("bmm", OpId::bmm, {2, 3, 8}, {2, 8, 4}, [](const Tensor& x, const Tensor& y) { return bmm(x, y); });
  product("matmul/batched", OpId::matmul, {2, 3, 8}, {8, 4}, [](const Tensor& x, const Tensor& y) { return matmul(x, y); });
  product("linear", OpId::linear, {2, 3, 8}, {5, 8}, [](const Tensor& x, const Tensor& w) { return linear(x, w); });
  product("dot", OpId::dot, {8}, {8}, [](const Tensor& x, const Tensor& y) { return dot(x, y); });
  product("mv", OpId::mv, {3, 8}, {8}, [](const Tensor& x, const Tensor& y) { return mv(x, y); });
  product("outer", OpId::outer, {3}, {4}, [](const Tensor& x, const Tensor& y) { return outer(x, y); });
  auto three_mats = [](Shape s0, Shape s1, Shape s2) {
    return [=](ScalarType dt) {
      return CaseInputs{{data(dt, s0, -2, 2, 20), data(dt, s1, -2, 2, 21), data(dt, s2, -2, 2, 22)}, 0b111};
    };
  };
  b.add("addmm", OpId::addmm, N, kNoCuda, three_mats({5}, {3, 8}, {8, 5}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return addmm(in[0], in[1], in[2], 1, 2); })
      .magnitude = 8;
  b.add("baddbmm", OpId::baddbmm, N, kNoCuda, three_mats({2, 3, 5}, {2, 3, 8}, {2, 8, 5}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return baddbmm(in[0], in[1], in[2], 2, 1); })
      .magnitude = 8;
  b.add("linear/bias", OpId::linear, N, kNoCuda, three_mats({4, 8}, {5, 8}, {5}),
        [](const std::vector<Tensor>& in, ScalarType, Device) { return linear(in[0], in[1], in[2]); })
      .magnitude = 4;
  add_nn_cases(b);
  add_amp_cases(b);
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

bool close(double got, double ref, double tol, double magnitude) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got);
  if (std::isinf(ref) || std::isinf(got)) return got == ref;
  return std::abs(got - ref) <= tol * (std::abs(ref) + magnitude);
}

}  // namespace

double tolerance_for(ScalarType dt) {
  switch (dt) {
    case kFloat64: return 1e-10;
    case kFloat32: return 1e-5;
    case kFloat16: return 1.0 / 1024;
    case kBFloat16: return 1.0 / 128;
    case kFloat8_e4m3fn: return 1.0 / 8;
    case kFloat8_e5m2: return 1.0 / 4;
    default: return 0.0;  // integers and bool: exact
  }
}

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = build_cases();
  return cases;
}

std::string run_case(const OpCase& c, ScalarType dt, Device dev) {
  std::ostringstream why;
  why << c.label << " [" << dtype_name(dt) << ", " << dev.str() << "]: ";
  try {
    CaseInputs ci = c.make(dt);
    std::vector<Tensor> in, ref_in;
    for (size_t i = 0; i < ci.in.size(); ++i) {
      in.push_back(ci.in[i].to(dev));
      ref_in.push_back((ci.data >> i) & 1u ? ci.in[i].to(kFloat64) : ci.in[i]);
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
    // The reference: the same call in float64 on the CPU, rounded to the result's dtype.
    const Tensor ref = c.run(ref_in, kFloat64, Device::cpu()).to(got.dtype()).to(kFloat64);
    if (ref.sizes() != got.sizes()) {
      why << "shape " << got.sizes().str() << ", reference " << ref.sizes().str();
      return why.str();
    }
    const auto g = got.to_vector<double>(), r = ref.to_vector<double>();
    const double tol = tolerance_for(got.dtype()) * c.tolerance_scale;
    for (size_t i = 0; i < g.size(); ++i) {
      if (!close(g[i], r[i], tol, c.magnitude)) {
        why << "element " << i << " = " << g[i] << ", reference " << r[i] << " (tolerance " << tol << ")";
        return why.str();
      }
    }
    return "";
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
        "- **CPU**: every listed dtype is run and compared with the same op in float64; every dtype not listed\n"
        "  must raise `mixt::Error`.\n"
        "- **CUDA**: the dtypes the CUDA kernels take. The test checks them against the registered kernels in\n"
        "  every CUDA build, and runs them against the CPU reference when a GPU is present. `—` is a declared\n"
        "  hole: the op raises `mixt::Error` on CUDA tensors until the full CUDA backend lands.\n"
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
    md << "| `" << e.schema.name << "` | " << flags << " | " << short_dtype_list(cpu[i]) << " | "
       << short_dtype_list(cuda[i]) << " |\n";
  }
  return md.str();
}

}  // namespace mixt::testing
