// The elementwise op lists (kernels/common/elementwise_ops.h) and the device logic of
// the CUDA elementwise layer that runs on the host: the lists name every elementwise op
// of op_table.def exactly once, the in-place forms are where registration puts them,
// the functor makers pick what the attributes ask for, the data checks and their device
// error codes, the vectorisation decision, and the per-element conversion (convert, which the
// CUDA casts run with their own narrowing: test_cuda_cast_rules.cu) against the CPU's tensor
// casts of every dtype pair, exhaustively for 8- and 16-bit sources.
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <mixt/dispatcher/op.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/elementwise_attrs.h>
#include <mixt/kernels/common/elementwise_ops.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cuda/device_error.h>
#include <mixt/mixt.h>

using namespace mixt;

namespace {

struct Row {
  std::string name;
  bool inplace;
  EwRule rule;
  uint32_t set;
  std::string family;
};

std::vector<Row> list_rows() {
  using namespace dtypes;
  std::vector<Row> rows;
#define MIXT_EW_ROW(name, inplace, Maker, Rule, Set) rows.push_back({#name, inplace != 0, EwRule::Rule, Set, family});
  const char* family = "unary";
  MIXT_ELEMENTWISE_UNARY(MIXT_EW_ROW)
  family = "binary";
  MIXT_ELEMENTWISE_BINARY(MIXT_EW_ROW)
  family = "compare";
  MIXT_ELEMENTWISE_COMPARE(MIXT_EW_ROW)
  family = "ternary";
  MIXT_ELEMENTWISE_TERNARY(MIXT_EW_ROW)
#undef MIXT_EW_ROW
  return rows;
}

// Every op of op_table.def with its meta rule's name.
std::map<std::string, std::string> table_ops() {
  std::map<std::string, std::string> ops;
#define MIXT_ATTRS(Name, seq)
#define MIXT_OP(name, min_in, max_in, n_out, flags, attr_struct, meta_rule) ops[#name] = #meta_rule;
#include <mixt/dispatcher/op_table.def>
#undef MIXT_OP
#undef MIXT_ATTRS
  return ops;
}

// The meta rules of the elementwise ops (kernels/meta/elementwise.cpp).
const std::set<std::string> kElementwiseMeta = {
    "unary_numeric", "unary_any", "unary_float", "round",   "clamp",   "predicate", "binary_any", "binary_numeric",
    "binary_float",  "div",       "compare",     "logical", "addcmul", "addcdiv",   "lerp",       "where",
    "unary_floating", "hardtanh"};

}  // namespace

TEST_CASE("the elementwise lists name every elementwise op exactly once", "[elementwise]") {
  const auto ops = table_ops();
  std::map<std::string, int> seen;
  for (const Row& r : list_rows()) {
    ++seen[r.name];
    const OpId id = find_op(r.name);
    if (r.inplace) {
      // register_elementwise binds OpId(id + 1) as the in-place form: it must be name_.
      const OpId next = static_cast<OpId>(static_cast<int>(id) + 1);
      INFO(r.name);
      CHECK(std::string(op_name(next)) == r.name + "_");
      ++seen[r.name + "_"];
    } else {
      CHECK(ops.count(r.name + "_") == 0);
    }
  }
  for (const auto& [name, count] : seen) {
    INFO(name);
    CHECK(count == 1);
    REQUIRE(ops.count(name) == 1);
    CHECK(kElementwiseMeta.count(ops.at(name)) == 1);
  }
  int elementwise = 0;
  for (const auto& [name, meta] : ops) {
    if (kElementwiseMeta.count(meta) == 0) continue;
    ++elementwise;
    INFO(name << " (meta " << meta << ") is in no elementwise list");
    CHECK(seen.count(name) == 1);
  }
  CHECK(elementwise == static_cast<int>(seen.size()));
  CHECK(elementwise > 60);
}

TEST_CASE("the list rules and dtype sets agree with the ops' behaviour", "[elementwise]") {
  for (const Row& r : list_rows()) {
    INFO(r.name);
    CHECK(r.set != 0);
    if (r.family == "compare") CHECK((r.rule == EwRule::Compare || r.rule == EwRule::Logical));
    if (r.rule == EwRule::Logical) CHECK(r.set == dtypes::kBoolSet);
    if (r.rule == EwRule::PromoteToFloat) CHECK(r.set == dtypes::kFloating);
    if (r.rule == EwRule::Predicate) CHECK(r.family == "unary");
    CHECK(bool_result(r.rule) == (r.rule == EwRule::Compare || r.rule == EwRule::Logical || r.rule == EwRule::Predicate));
  }
  // Every listed op has a CPU kernel and runs through it.
  for (const Row& r : list_rows()) {
    INFO(r.name);
    CHECK(op_entry(find_op(r.name)).mask.has(DispatchKey::CPU));
  }
}

TEST_CASE("makers build the functor the attributes ask for", "[elementwise]") {
  OpParams p;
  auto div = [&](int mode, double a, double b) {
    p.mode = mode;
    return ew::Div::with<double>(p, [&](auto f) { return static_cast<double>(f(a, b)); });
  };
  CHECK(div(0, -7, 2) == -3.5);
  CHECK(div(1, -7, 2) == -3);
  CHECK(div(2, -7, 2) == -4);
  p.mode = 2;
  CHECK(ew::Div::with<int32_t>(p, [](auto f) { return f(-7, 2); }) == -4);
  p.mode = 1;
  CHECK(ew::Div::with<int32_t>(p, [](auto f) { return f(-7, 2); }) == -3);
  p.mode = 1;
  const float tanh_gelu = ew::Gelu::with<float>(p, [](auto f) { return f(1.0f); });
  p.mode = 0;
  const float erf_gelu = ew::Gelu::with<float>(p, [](auto f) { return f(1.0f); });
  CHECK(tanh_gelu == functors::GeluTanh<float>{}(1.0f));
  CHECK(erf_gelu == functors::GeluErf<float>{}(1.0f));
  CHECK(tanh_gelu != erf_gelu);
  // clamp's integer bounds saturate to the dtype's range.
  OpParams c;
  c.s[0] = scalar_arg(Scalar(-1000));
  c.s[1] = scalar_arg(Scalar(1000));
  CHECK(ew::Clamp::with<int8_t>(c, [](auto f) { return f(int8_t{100}); }) == 100);
  CHECK(ew::Clamp::with<int8_t>(c, [](auto f) { return f(int8_t{-128}); }) == -128);
  c.s[1] = scalar_arg(Scalar());
  CHECK(ew::Clamp::with<int32_t>(c, [](auto f) { return f(5000); }) == 5000);
  // alpha in opmath (not rounded to float16).
  OpParams a;
  a.s[0] = scalar_arg(Scalar(0.1));
  CHECK(ew::WithAlpha<functors::Add>::with<Half>(a, [](auto f) { return f(0.0f, 1.0f); }) == 0.1f);
}

TEST_CASE("scalar operands read as the CPU reads them", "[elementwise]") {
  const Scalar values[] = {Scalar(0.1), Scalar(-2.5), Scalar(int64_t{300}), Scalar(int64_t{-1}), Scalar(true),
                           Scalar(1e300), Scalar(int64_t{1} << 40)};
  for (const Scalar& s : values) {
    CHECK(scalar_arg_value<float>(scalar_arg(s)) == cpu::scalar_value<float>(s));
    CHECK(scalar_arg_value<Half>(scalar_arg(s)) == cpu::scalar_value<Half>(s));
    CHECK(scalar_arg_value<int8_t>(scalar_arg(s)) == cpu::scalar_value<int8_t>(s));
    CHECK(scalar_arg_value<uint8_t>(scalar_arg(s)) == cpu::scalar_value<uint8_t>(s));
    CHECK(scalar_arg_value<int64_t>(scalar_arg(s)) == cpu::scalar_value<int64_t>(s));
    CHECK(scalar_arg_value<bool>(scalar_arg(s)) == cpu::scalar_value<bool>(s));
    // Rounded: as a 0-dim tensor of the dtype holds it.
    CHECK(scalar_arg_rounded<Half>(scalar_arg(s)) == cpu::scalar_value_rounded<Half>(s));
    CHECK(scalar_arg_rounded<BFloat16>(scalar_arg(s)) == cpu::scalar_value_rounded<BFloat16>(s));
  }
  CHECK(scalar_arg_rounded<Half>(scalar_arg(Scalar(0.1))) != 0.1f);
  CHECK_FALSE(scalar_arg(Scalar()).present);
}

TEST_CASE("data checks: what each refuses, and its device error code", "[elementwise]") {
  CHECK(rhs_violates(RhsCheck::IntegerNonzero, int32_t{0}));
  CHECK_FALSE(rhs_violates(RhsCheck::IntegerNonzero, int32_t{-1}));
  CHECK(rhs_violates(RhsCheck::IntegerNonzero, uint8_t{0}));
  CHECK_FALSE(rhs_violates(RhsCheck::IntegerNonzero, 0.0f));  // floats divide by zero to Inf/NaN
  CHECK(rhs_violates(RhsCheck::IntegerNonnegative, int64_t{-1}));
  CHECK_FALSE(rhs_violates(RhsCheck::IntegerNonnegative, int64_t{0}));
  CHECK_FALSE(rhs_violates(RhsCheck::IntegerNonnegative, uint8_t{255}));
  CHECK_FALSE(rhs_violates(RhsCheck::IntegerNonnegative, -1.0));
  CHECK_FALSE(rhs_violates(RhsCheck::None, int32_t{0}));
  CHECK(ew::Div::kCheck == RhsCheck::IntegerNonzero);
  CHECK(ew::Pow::kCheck == RhsCheck::IntegerNonnegative);
  // The CUDA kernels report these codes; their text is the CPU's message.
  using cuda::DeviceError;
  CHECK(std::string(cuda::device_error_text(DeviceError::IntegerDivisionByZero)) ==
        rhs_check_text(RhsCheck::IntegerNonzero));
  CHECK(std::string(cuda::device_error_text(DeviceError::NegativeIntegerPower)) ==
        rhs_check_text(RhsCheck::IntegerNonnegative));
  const std::set<uint32_t> codes = {static_cast<uint32_t>(DeviceError::None),
                                    static_cast<uint32_t>(DeviceError::IntegerDivisionByZero),
                                    static_cast<uint32_t>(DeviceError::IndexOutOfBounds),
                                    static_cast<uint32_t>(DeviceError::NegativeIntegerPower)};
  CHECK(codes.size() == 4);
  // The CPU raises the same text by scanning the data.
  const Tensor a = from_vector(std::vector<int32_t>{4, 5}), z = from_vector(std::vector<int32_t>{1, 0});
  CHECK_THROWS_WITH(div(a, z, "trunc"), Catch::Contains("integer division by zero"));
  CHECK_THROWS_WITH(pow(a, from_vector(std::vector<int32_t>{1, -1})),
                    Catch::Contains("integers to negative integer powers are not allowed"));
}

TEST_CASE("the vectorisation decision of the CUDA loops", "[elementwise]") {
  const uintptr_t aligned[] = {4096, 8192, 0};  // 0: a scalar operand, ignored
  CHECK(elementwise_vector_width(true, 4, aligned, 3) == 4);
  CHECK(elementwise_vector_width(true, 2, aligned, 3) == 8);
  CHECK(elementwise_vector_width(true, 1, aligned, 3) == 16);
  CHECK(elementwise_vector_width(true, 8, aligned, 3) == 2);
  CHECK(elementwise_vector_width(false, 4, aligned, 3) == 1);  // strided: never
  const uintptr_t offset[] = {4096, 8196};                   // one input 4 bytes past alignment
  CHECK(elementwise_vector_width(true, 4, offset, 2) == 1);
  // The widest operand decides: a float32 -> bool comparison moves 4 elements per access.
  CHECK(elementwise_vector_width(true, std::max<int64_t>(sizeof(float), sizeof(bool)), aligned, 3) == 4);
}

namespace {

// The bits of every element of a CPU tensor.
std::vector<uint64_t> bits_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<uint64_t> out(static_cast<size_t>(c.numel()), 0);
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  const int64_t es = c.element_size();
  for (int64_t i = 0; i < c.numel(); ++i) std::memcpy(&out[static_cast<size_t>(i)], p + i * es, static_cast<size_t>(es));
  return out;
}

template <class T>
uint64_t bits(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}

bool is_nan_bits(ScalarType t, uint64_t b) {
  switch (t) {
    case kFloat32: { float f; uint32_t u = static_cast<uint32_t>(b); std::memcpy(&f, &u, 4); return f != f; }
    case kFloat64: { double d; std::memcpy(&d, &b, 8); return d != d; }
    default: return false;
  }
}

// convert<To> of every element of `src` (CPU) against src.to(To) on the CPU.
int64_t mismatches(const Tensor& src, ScalarType to, std::string& first) {
  const Tensor want = src.to(to);
  const std::vector<uint64_t> want_bits = bits_of(want), src_bits = bits_of(src);
  int64_t bad = 0;
  visit_dtype(src.dtype(), "test", [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    visit_dtype(to, "test", [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      for (size_t i = 0; i < src_bits.size(); ++i) {
        From v;
        std::memcpy(static_cast<void*>(&v), &src_bits[i], sizeof(From));
        const uint64_t got = bits(convert<To>(v));
        // float32/float64 NaN payloads are the C++ conversion's on both sides.
        if (got == want_bits[i] || (is_nan_bits(to, got) && is_nan_bits(to, want_bits[i]))) continue;
        if (++bad == 1)
          first = std::string(dtype_name(src.dtype())) + " bits " + std::to_string(src_bits[i]) + " -> " +
                  std::string(dtype_name(to)) + ": " + std::to_string(got) + " vs cpu " + std::to_string(want_bits[i]);
      }
    });
  });
  return bad;
}

// A tensor of dtype `t` holding `patterns` as raw bits.
Tensor from_bits(ScalarType t, const std::vector<uint64_t>& patterns) {
  TensorOptions o;
  o.dtype = t;
  Tensor r = empty({static_cast<int64_t>(patterns.size())}, o);
  auto* p = static_cast<unsigned char*>(r.data_ptr());
  for (size_t i = 0; i < patterns.size(); ++i)
    std::memcpy(p + i * static_cast<size_t>(r.element_size()), &patterns[i], static_cast<size_t>(r.element_size()));
  return r;
}

}  // namespace

TEST_CASE("convert equals the CPU's tensor casts for every dtype pair", "[elementwise][convert]") {
  std::mt19937_64 rng(77);
  for (int f = 0; f < kNumDtypes; ++f) {
    const auto from = static_cast<ScalarType>(f);
    std::vector<uint64_t> patterns;
    const int64_t size = element_size(from);
    if (from == kBool) {
      patterns = {0, 1};
    } else if (size <= 2) {
      for (uint64_t b = 0; b < (uint64_t{1} << (8 * size)); ++b) patterns.push_back(b);  // every value
    } else {
      // Random bit patterns, values near every integer type's limits, and floating specials.
      for (int i = 0; i < 200000; ++i) patterns.push_back(size == 4 ? rng() & 0xffffffffu : rng());
      const double specials[] = {0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 127.5, 128.0, 255.5, 256.0, -129.0,
                                 2147483647.0, 2147483648.0, -2147483649.0, 9.2233720368547758e18, -9.3e18,
                                 1e300, -1e300, 65504.0, 65520.0, 448.0, 464.0, 57344.0, 61440.0, 3.4e38, 1e-45,
                                 std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<double>::quiet_NaN()};
      const int64_t ints[] = {0, 1, -1, 127, 128, 255, 256, -128, -129, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN,
                              (int64_t{1} << 24) + 1, (int64_t{1} << 53) + 1, 65519, 65520, 2049};
      for (double d : specials) {
        if (from == kFloat32) patterns.push_back(bits(static_cast<float>(d)));
        if (from == kFloat64) patterns.push_back(bits(d));
      }
      for (int64_t v : ints) {
        if (from == kInt32) patterns.push_back(bits(static_cast<int32_t>(v)));
        if (from == kInt64) patterns.push_back(bits(v));
      }
    }
    const Tensor src = from_bits(from, patterns);
    for (int t = 0; t < kNumDtypes; ++t) {
      const auto to = static_cast<ScalarType>(t);
      std::string first;
      INFO(dtype_name(from) << " -> " << dtype_name(to));
      const int64_t bad = mismatches(src, to, first);
      INFO(first);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("float16 / bfloat16 elementwise ops: dense runs (in blocks) give the strided runs' bits", "[elementwise]") {
  // Note [Narrow floats in blocks]: dense runs widen and round blocks of values; runs with
  // a stride convert one value at a time. Every value below, specials included, must come
  // out with the same bits either way, for ops of each family and every block boundary.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values;
  const Tensor noise = mul(randn({3000}), 4.0);
  for (int64_t i = 0; i < noise.numel(); ++i) values.push_back(noise.data_ptr<float>()[i]);
  for (float s : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-40f, -1e-40f, 65504.0f,
                  70000.0f, 3e38f, 0.5f, -1.5f, 2.5f})
    values.push_back(s);
  const int64_t n = static_cast<int64_t>(values.size());
  const Tensor base32 = from_vector(values);
  for (ScalarType dt : {kBFloat16, kFloat16}) {
    INFO(dt);
    // x and y dense; xs and ys the same values every other element of a wider tensor.
    const Tensor x = base32.to(dt), y = mul(base32, -0.75).to(dt);
    auto spread = [&](const Tensor& t) {
      Tensor wide = zeros({2 * n}, {.dtype = dt});
      wide.slice(0, 0, 2 * n, 2).copy_(t);
      return wide.slice(0, 0, 2 * n, 2);
    };
    const Tensor xs = spread(x), ys = spread(y);
    REQUIRE_FALSE(xs.is_contiguous());
    const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>> ops = {
        {"neg", [](const Tensor& a, const Tensor&) { return neg(a); }},
        {"abs", [](const Tensor& a, const Tensor&) { return abs(a); }},
        {"relu", [](const Tensor& a, const Tensor&) { return relu(a); }},
        {"clamp", [](const Tensor& a, const Tensor&) { return clamp(a, -1.0, 2.0); }},
        {"floor", [](const Tensor& a, const Tensor&) { return floor(a); }},
        {"leaky_relu", [](const Tensor& a, const Tensor&) { return nn::functional::leaky_relu(a, 0.1); }},
        {"atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); }},
        {"div floor", [](const Tensor& a, const Tensor& b) { return div(a, b, "floor"); }},
        {"addcmul", [](const Tensor& a, const Tensor& b) { return addcmul(a, b, a, 0.3); }},
        {"lerp scalar", [](const Tensor& a, const Tensor& b) { return lerp(a, b, 0.3); }},
        {"lerp tensor", [](const Tensor& a, const Tensor& b) { return lerp(a, b, a); }},
    };
    for (const auto& [name, op] : ops) {
      INFO(name);
      const Tensor dense = op(x, y), strided = op(xs, ys);
      REQUIRE(dense.sizes() == strided.sizes());
      // The raw bits (equal() would call the NaNs different).
      CHECK(std::memcmp(dense.contiguous().data_ptr(), strided.contiguous().data_ptr(),
                        static_cast<size_t>(dense.nbytes())) == 0);
    }
  }
}
