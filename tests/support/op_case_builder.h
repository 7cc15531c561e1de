// Building blocks of the op-case table (shared by op_cases.cpp and the
// per-family case files): dtype sets, deterministic inputs, output-dtype rules
// and the Builder that appends cases.
#pragma once

#include <random>

#include "op_cases.h"

namespace mixt::testing {

constexpr uint32_t F = dtypes::kFloating, I = dtypes::kIntegral, B = dtypes::kBoolSet;
constexpr uint32_t N = I | F, A = N | B;
constexpr uint32_t kNoCuda = 0;

// Deterministic values in [lo, hi] (integers for integer dtypes, 0/1 for bool), in `dt`.
inline Tensor data(ScalarType dt, const Shape& shape, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  if (dt == kBool) {
    for (double& x : v) x = static_cast<double>(rng() & 1u);
  } else if (is_integral(dt)) {
    const int64_t l = dt == kUInt8 ? std::max<int64_t>(0, static_cast<int64_t>(std::ceil(lo)))
                                   : static_cast<int64_t>(std::ceil(lo));
    const int64_t h = std::max(l, static_cast<int64_t>(std::floor(hi)));
    std::uniform_int_distribution<int64_t> d(l, h);
    for (double& x : v) x = static_cast<double>(d(rng));
  } else {
    std::uniform_real_distribution<double> d(lo, hi);
    for (double& x : v) x = d(rng);
  }
  return from_vector(v, shape).to(dt);
}

inline Tensor index_tensor(const std::vector<int64_t>& v, const Shape& shape) { return from_vector(v, shape); }

using Run = std::function<Tensor(const std::vector<Tensor>&, ScalarType, Device)>;
using OutRule = std::function<ScalarType(ScalarType)>;
using RefFn = decltype(OpCase::reference);
using Refs = std::vector<ref::Ref>;

// Tolerances shared by many cases (Note [Tolerances in ulps]).
// A value of the inputs (views, copies, max, floor, ...) or one correctly rounded operation: exact
// to half an ulp of the result's dtype.
constexpr Tolerance kExact{0.5, 0};
// One float32 (float64) function or operation, then the rounding to a narrower dtype: the float
// result is within one ulp of the compute type (libm's float functions stay below one ulp).
constexpr Tolerance kOneOp{0.5, 1};

// The reference of an elementwise unary op named `name` (reference.h's table).
inline RefFn unary_ref(std::string name) {
  return [name](const Refs& in, ScalarType) {
    return ref::map(in[0], [&](double x) { return ref::unary(name, x); });
  };
}

// The reference of a binary op: f(a, b) on broadcast inputs 0 and 1.
inline RefFn binary_ref(std::function<double(double, double)> f) {
  return [f](const Refs& in, ScalarType) { return ref::zip(in[0], in[1], f); };
}

// The value `dt` stores for v (rounding for floats, wrapping for integers, != 0 for bool).
inline double stored(ScalarType dt, double v) { return is_floating(dt) ? round_to(dt, v) : wrap_to(dt, v); }

inline const OutRule kSame = [](ScalarType dt) { return dt; };
inline const OutRule kFloatPromote = [](ScalarType dt) { return is_floating(dt) ? dt : kFloat32; };
inline const OutRule kBoolOut = [](ScalarType) { return kBool; };
inline const OutRule kInt64Out = [](ScalarType) { return kInt64; };
inline const OutRule kSumOut = [](ScalarType dt) { return is_floating(dt) ? dt : kInt64; };
inline const OutRule kFloat32Out = [](ScalarType) { return kFloat32; };

struct Builder {
  std::vector<OpCase> cases;

  OpCase& add(std::string label, OpId op, uint32_t cpu, uint32_t cuda, std::function<CaseInputs(ScalarType)> make,
              Run run, OutRule out = kSame) {
    OpCase c;
    c.label = std::move(label);
    c.op = op;
    c.cpu_dtypes = cpu;
    c.cuda_dtypes = cuda;
    c.make = std::move(make);
    c.run = std::move(run);
    c.out_dtype = std::move(out);
    cases.push_back(std::move(c));
    return cases.back();
  }

  // One data input of `shape` in [lo, hi].
  OpCase& unary(std::string label, OpId op, uint32_t cpu, uint32_t cuda, double lo, double hi,
                std::function<Tensor(const Tensor&)> f, OutRule out = kSame, Shape shape = {3, 5}) {
    return add(
        std::move(label), op, cpu, cuda,
        [=](ScalarType dt) { return CaseInputs{{data(dt, shape, lo, hi, 1)}, 0b1}; },
        [f](const std::vector<Tensor>& in, ScalarType, Device) { return f(in[0]); }, std::move(out));
  }

  // The in-place form: runs on a clone so the inputs stay intact.
  OpCase& unary_(std::string label, OpId op, uint32_t cpu, uint32_t cuda, double lo, double hi,
                 std::function<void(Tensor&)> f) {
    return unary(std::move(label), op, cpu, cuda, lo, hi, [f](const Tensor& t) {
      Tensor x = t.clone();
      f(x);
      return x;
    });
  }

  // Two data inputs [3, 4] and [4] (broadcast) in the given ranges.
  OpCase& binary(std::string label, OpId op, uint32_t cpu, uint32_t cuda, double lo_a, double hi_a, double lo_b,
                 double hi_b, std::function<Tensor(const Tensor&, const Tensor&)> f, OutRule out = kSame) {
    return add(
        std::move(label), op, cpu, cuda,
        [=](ScalarType dt) {
          return CaseInputs{{data(dt, {3, 4}, lo_a, hi_a, 2), data(dt, {4}, lo_b, hi_b, 3)}, 0b11};
        },
        [f](const std::vector<Tensor>& in, ScalarType, Device) { return f(in[0], in[1]); }, std::move(out));
  }
};

// The cases of the nn ops (tests/support/op_cases_nn.cpp).
void add_nn_cases(Builder& b);
void add_amp_cases(Builder& b);
// conv3d, the transposed convolutions, pooling, padding, resampling (tests/support/op_cases_spatial.cpp).
void add_spatial_cases(Builder& b);
void add_linalg_cases(Builder& b);  // tests/support/op_cases_linalg.cpp
// index_add, index_put, masked_select, nonzero, sort, argsort, topk, unique (tests/support/op_cases_select.cpp).
void add_select_cases(Builder& b);
// The recurrent cells (tests/support/op_cases_rnn.cpp).
void add_rnn_cases(Builder& b);

}  // namespace mixt::testing
