// The vector math of the CPU kernels (kernels/cpu/vec): every function against a
// long-double reference over a stratified sweep of the whole float32 range plus the
// special values, on every instruction set this machine has; the float16 / bfloat16
// lane conversions against the scalar ones; the instruction-set choice and its errors.
// The bounds are those of docs/notes/cpu-vectorisation.md, Note [Vector math accuracy].
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/kernels/cpu/vec/convert.h>
#include <mixt/kernels/cpu/vec/isa.h>
#include <mixt/kernels/cpu/vec/unary_math.h>
#include <mixt/mixt.h>

#include "ulps.h"

using namespace mixt;
using mixt::testing::bits_float;
using mixt::testing::float_bits;
using namespace mixt::cpu::vec;

namespace {


std::vector<Isa> supported_isas() {
  std::vector<Isa> v;
  for (int i = 0; i < kIsaCount; ++i)
    if (isa_supported(static_cast<Isa>(i))) v.push_back(static_cast<Isa>(i));
  return v;
}

// The sweep: every 16381st bit pattern (odd, so mantissas vary) of both signs, and the
// special values: +-0, +-Inf, NaNs, the smallest and largest subnormals and normals,
// FLT_MAX, and the thresholds where the functions overflow, underflow or saturate.
std::vector<float> sweep() {
  std::vector<float> v;
  for (uint64_t u = 0; u < 0x7f800000u; u += 16381) {
    v.push_back(bits_float(static_cast<uint32_t>(u)));
    v.push_back(-bits_float(static_cast<uint32_t>(u)));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float s : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), bits_float(0x7f800001u),
                  bits_float(0xffc12345u), bits_float(1), bits_float(0x007fffffu), bits_float(0x00800000u),
                  std::numeric_limits<float>::max(), 1.0f, -1.0f, 0.5f, 2.0f, 88.72283f, 88.72284f, 89.0f,
                  -87.33654f, -103.9f, -104.0f, -104.1f, -150.0f, 3.9193f, 4.0f, 10.5f, 39000.0f, 39001.0f, 1e10f,
                  9.2f, 9.25f, 20.0f, 20.1f, -1.0000001f, -0.99999994f, 1e-8f, -1e-8f, 1.4142135f, -1.4142137f})
    for (float x : {s, -s, std::nextafter(s, inf), std::nextafter(s, -inf)}) v.push_back(x);
  return v;
}

// The error of `got` against the exact value `ref`, in ulps of the float nearest `ref`
// (subnormal ulps below FLT_MIN). Infinite when the classes (NaN, Inf) disagree.
double ulp_error(float got, long double ref) {
  const float rounded = static_cast<float>(ref);
  if (std::isnan(ref)) return std::isnan(got) ? 0.0 : INFINITY;
  if (std::isinf(rounded)) return got == rounded ? 0.0 : INFINITY;
  if (std::isnan(got) || std::isinf(got)) return INFINITY;
  if (ref == 0) return got == 0 && std::signbit(got) == std::signbit(ref) ? 0.0 : INFINITY;
  const int e = std::max(std::ilogb(rounded == 0 ? std::numeric_limits<float>::min() : rounded), -126);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - ref) / std::ldexp(1.0L, e - 23));
}

long double sigmoid_ref(long double x) { return x < 0 ? std::exp(x) / (1 + std::exp(x)) : 1 / (1 + std::exp(-x)); }

// One function: its reference and its documented bound (ulps).
struct Case {
  const char* name;
  UnaryMath op;
  long double (*ref)(long double);
  double bound;
  // Below `tail_from` the bound is `tail_bound`: where the function's condition number
  // |x f'(x) / f(x)| is large, a float's rounding of an intermediate is magnified by it.
  float tail_from = -INFINITY;
  double tail_bound = 0;
};

const Case kCases[] = {
    {"exp", UnaryMath::Exp, [](long double x) { return std::exp(x); }, 1.5},
    {"expm1", UnaryMath::Expm1, [](long double x) { return std::expm1(x); }, 4},
    {"log", UnaryMath::Log, [](long double x) { return std::log(x); }, 4},
    {"log1p", UnaryMath::Log1p, [](long double x) { return std::log1p(x); }, 4},
    {"log2", UnaryMath::Log2, [](long double x) { return std::log2(x); }, 4},
    {"log10", UnaryMath::Log10, [](long double x) { return std::log10(x); }, 4},
    {"sin", UnaryMath::Sin, [](long double x) { return std::sin(x); }, 4},
    {"cos", UnaryMath::Cos, [](long double x) { return std::cos(x); }, 4},
    {"tanh", UnaryMath::Tanh, [](long double x) { return std::tanh(x); }, 4},
    {"sigmoid", UnaryMath::Sigmoid, sigmoid_ref, 4},
    {"silu", UnaryMath::Silu, [](long double x) { return std::isinf(x) && x < 0 ? NAN : x * sigmoid_ref(x); }, 4},
    {"softplus", UnaryMath::Softplus,
     [](long double x) { return x > 20 ? x : (x < -40 ? std::exp(x) : std::log1p(std::exp(x))); }, 4},
    {"erf", UnaryMath::Erf, [](long double x) { return std::erf(x); }, 4},
    {"gelu_erf", UnaryMath::GeluErf,
     [](long double x) {
       return std::isinf(x) && x < 0 ? NAN : 0.5L * x * std::erfc(-x / std::sqrt(2.0L));
     },
     4},
    {"gelu_tanh", UnaryMath::GeluTanh,
     [](long double x) {
       if (std::isinf(x)) return x < 0 ? NAN : x;
       const long double z = std::sqrt(2.0L / 3.14159265358979323846264338327950288L) * (x + 0.044715L * x * x * x);
       return x * sigmoid_ref(2 * z);
     },
     16, -3.0f, 160},
    {"sqrt", UnaryMath::Sqrt, [](long double x) { return std::sqrt(x); }, 0.5},
    {"rsqrt", UnaryMath::Rsqrt, [](long double x) { return 1 / std::sqrt(x); }, 1.5},
    {"reciprocal", UnaryMath::Reciprocal, [](long double x) { return 1 / x; }, 0.5},
    {"elu", UnaryMath::Elu, [](long double x) { return x > 0 ? x : std::expm1(x); }, 4},
    {"mish", UnaryMath::Mish,
     [](long double x) { return std::isinf(x) && x < 0 ? NAN : x * std::tanh(std::log1p(std::exp(x))); }, 4},
};

}  // namespace

TEST_CASE("vector math: every function within its ulp bound over the float range, on every instruction set") {
  const std::vector<float> xs = sweep();
  std::vector<float> out(xs.size());
  for (const Case& c : kCases) {
    std::vector<long double> ref(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) ref[i] = c.ref(xs[i]);
    for (Isa isa : supported_isas()) {
      unary_math(c.op, {}, xs.data(), out.data(), xs.size(), isa);
      double worst = 0;
      size_t worst_at = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        double e = ulp_error(out[i], ref[i]);
        if (xs[i] < c.tail_from) e = e <= c.tail_bound ? 0 : e;
        if (!(e <= worst)) worst = e, worst_at = i;
      }
      INFO(c.name << " on " << isa_name(isa) << ": worst " << worst << " ulp at x = " << xs[worst_at] << " (bits 0x"
                  << std::hex << float_bits(xs[worst_at]) << std::dec << "), got " << out[worst_at] << ", exact "
                  << static_cast<double>(ref[worst_at]));
      CHECK(worst <= c.bound);
    }
  }
}

TEST_CASE("vector math: the same bits on instruction sets of the same arithmetic") {
  // Bit-identical within {scalar, SSE4} (separate multiply and add) and within {AVX2,
  // AVX-512} (fused multiply-add); across the two groups only the ulp bounds hold.
  const std::vector<float> xs = sweep();
  for (const Case& c : kCases) {
    std::vector<float> first[2];
    for (Isa isa : supported_isas()) {
      const int group = isa >= Isa::Avx2 ? 1 : 0;
      std::vector<float> out(xs.size());
      unary_math(c.op, {}, xs.data(), out.data(), xs.size(), isa);
      if (first[group].empty()) {
        first[group] = out;
        continue;
      }
      size_t differ = 0;
      for (size_t i = 0; i < xs.size(); ++i)
        differ += float_bits(out[i]) != float_bits(first[group][i]) && !(std::isnan(out[i]) && std::isnan(first[group][i]));
      INFO(c.name << " on " << isa_name(isa));
      CHECK(differ == 0);
    }
  }
}

TEST_CASE("vector math: sqrt, rsqrt, reciprocal and the roundings give the scalar functors' bits on every instruction set") {
  // Correctly rounded sqrt and division, no estimate, and exact roundings: the bits of the scalar kernels
  // (kernels/common/functors.h), whatever the instruction set.
  const std::vector<float> xs = sweep();
  const struct {
    UnaryMath op;
    float (*scalar)(float);
  } ops[] = {{UnaryMath::Sqrt, [](float x) { return std::sqrt(x); }},
             {UnaryMath::Rsqrt, [](float x) { return 1.0f / std::sqrt(x); }},
             {UnaryMath::Reciprocal, [](float x) { return 1.0f / x; }},
             {UnaryMath::Floor, [](float x) { return std::floor(x); }},
             {UnaryMath::Ceil, [](float x) { return std::ceil(x); }},
             {UnaryMath::Trunc, [](float x) { return std::trunc(x); }},
             {UnaryMath::Round, [](float x) { return std::nearbyint(x); }},
             {UnaryMath::Frac, [](float x) { return x - std::trunc(x); }},
             {UnaryMath::LeakyRelu, [](float x) { return x > 0 ? x : x * 0.01f; }}};
  for (const auto& o : ops)
    for (Isa isa : supported_isas()) {
      std::vector<float> out(xs.size());
      unary_math(o.op, {}, xs.data(), out.data(), xs.size(), isa);
      size_t differ = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        const float want = o.scalar(xs[i]);
        differ += float_bits(out[i]) != float_bits(want) && !(std::isnan(out[i]) && std::isnan(want));
      }
      INFO("op " << static_cast<int>(o.op) << " on " << isa_name(isa));
      CHECK(differ == 0);
    }
}

TEST_CASE("vector math: softplus honours beta and threshold; in place works") {
  std::vector<float> x = {-30.0f, -1.0f, 0.0f, 0.5f, 4.9f, 5.1f, 100.0f};
  std::vector<float> y(x.size());
  UnaryMathParams p;
  p.beta = 2.0f;
  p.threshold = 10.0f;
  for (Isa isa : supported_isas()) {
    unary_math(UnaryMath::Softplus, p, x.data(), y.data(), x.size(), isa);
    for (size_t i = 0; i < x.size(); ++i) {
      const double bx = 2.0 * x[i];
      const double want = bx > 10.0 ? x[i] : std::log1p(std::exp(bx)) / 2.0;
      CHECK(y[i] == Approx(want).epsilon(1e-6));
    }
    std::vector<float> z = x;
    unary_math(UnaryMath::Exp, {}, z.data(), z.data(), z.size(), isa);
    for (size_t i = 0; i < x.size(); ++i) CHECK(ulp_error(z[i], std::exp(static_cast<long double>(x[i]))) <= 1.5);
  }
}

TEST_CASE("vector conversions: float16 and bfloat16 lanes round as the scalar types, on every instruction set") {
  std::vector<uint16_t> codes(65536);
  for (uint32_t c = 0; c < 65536; ++c) codes[c] = static_cast<uint16_t>(c);
  std::vector<float> xs = sweep();
  for (uint32_t u = 0x33000000u; u < 0x38800000u; u += 97) xs.push_back(bits_float(u));  // float16 subnormals, ties
  for (uint32_t c = 0; c < 65536; c += 3) xs.push_back(bits_float((c << 13) | 0x1000u));       // float16 ties
  for (Isa isa : supported_isas()) {
    INFO("on " << isa_name(isa));
    std::vector<float> wide(65536);
    to_float(reinterpret_cast<const Half*>(codes.data()), wide.data(), 65536, isa);
    size_t bad = 0;
    // (F16C quiets signalling NaNs: a NaN code only has to stay NaN.)
    for (uint32_t c = 0; c < 65536; ++c) {
      const float want = static_cast<float>(Half::from_bits(codes[c]));
      bad += std::isnan(want) ? !std::isnan(wide[c]) : float_bits(wide[c]) != float_bits(want);
    }
    CHECK(bad == 0);
    to_float(reinterpret_cast<const BFloat16*>(codes.data()), wide.data(), 65536, isa);
    bad = 0;
    for (uint32_t c = 0; c < 65536; ++c) bad += float_bits(wide[c]) != float_bits(static_cast<float>(BFloat16::from_bits(codes[c])));
    CHECK(bad == 0);
    std::vector<Half> h(xs.size());
    std::vector<BFloat16> b(xs.size());
    from_float(xs.data(), h.data(), xs.size(), isa);
    from_float(xs.data(), b.data(), xs.size(), isa);
    size_t bad_h = 0, bad_b = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (h[i].x != Half(xs[i]).x && bad_h++ == 0) WARN("float16 of bits 0x" << std::hex << float_bits(xs[i]) << ": 0x" << h[i].x);
      if (b[i].x != BFloat16(xs[i]).x && bad_b++ == 0) WARN("bfloat16 of bits 0x" << std::hex << float_bits(xs[i]) << ": 0x" << b[i].x);
    }
    CHECK(bad_h == 0);
    CHECK(bad_b == 0);
  }
}

TEST_CASE("instruction sets: names, the test hook and its errors") {
  CHECK(isa_supported(Isa::Scalar));
  CHECK(isa_supported(best_isa()));
  for (int i = 0; i < kIsaCount; ++i) CHECK(isa_from_name(isa_name(static_cast<Isa>(i))) == static_cast<Isa>(i));
  CHECK_THROWS_WITH(isa_from_name("avx9"), Catch::Contains("unknown instruction set 'avx9'"));
  for (Isa isa : supported_isas()) {
    set_isa_for_testing(isa);
    CHECK(active_isa() == isa);
  }
  set_isa_for_testing(std::nullopt);
  for (int i = 0; i < kIsaCount; ++i)
    if (!isa_supported(static_cast<Isa>(i))) CHECK_THROWS_AS(set_isa_for_testing(static_cast<Isa>(i)), Error);
}

TEST_CASE("instruction sets: a tensor op gives the same bits on every instruction set of one arithmetic") {
  // The op path (kernels/cpu/unary.cpp) follows the forced instruction set.
  const Tensor x = mixt::linspace(-12.0, 12.0, 4099);
  std::vector<Tensor> results;
  std::vector<Isa> isas;
  for (Isa isa : supported_isas()) {
    set_isa_for_testing(isa);
    results.push_back(mixt::nn::functional::gelu(x));
    isas.push_back(isa);
  }
  set_isa_for_testing(std::nullopt);
  for (size_t i = 1; i < results.size(); ++i) {
    INFO(isa_name(isas[0]) << " vs " << isa_name(isas[i]));
    if ((isas[i] >= Isa::Avx2) == (isas[0] >= Isa::Avx2))
      CHECK(mixt::equal(results[i], results[0]));
    else
      for (int64_t k = 0; k < x.numel(); ++k)
        CHECK(ulp_error(static_cast<const float*>(results[i].data_ptr())[k],
                        static_cast<const float*>(results[0].data_ptr())[k]) <= 8);
  }
}

// Run by meson with MIXT_CPU_ISA=bogus (test_vec_math_bad_isa): the first op raises
// mixt::Error, and so does every later one, never an abort from inside a parallel region.
TEST_CASE("a bad MIXT_CPU_ISA raises mixt::Error from every op", "[.bad_isa]") {
  const char* env = std::getenv("MIXT_CPU_ISA");
  REQUIRE(env != nullptr);
  REQUIRE(std::string(env) == "bogus");
  CHECK_THROWS_WITH(zeros({2048, 4096}), Catch::Contains("MIXT_CPU_ISA") && Catch::Contains("bogus"));
  CHECK_THROWS_AS(randn({2048, 4096}), Error);
  CHECK_THROWS_AS(mixt::init(), Error);
}

TEST_CASE("vector pow: within 1 ulp of powl and C's special values, on every instruction set") {
  // Bases: a coarse sweep of both signs plus the specials; exponents: integers odd and
  // even (small, and from 2^23 on where floats are all integers), halves, fractions,
  // zeros, infinities, NaN, and exponents that overflow and underflow the result.
  std::vector<float> bases;
  for (uint64_t u = 0; u < 0x7f800000u; u += 1048573) {
    bases.push_back(bits_float(static_cast<uint32_t>(u)));
    bases.push_back(-bits_float(static_cast<uint32_t>(u)));
  }
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (float s : {0.0f, -0.0f, inf, -inf, nan, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -0.5f, 10.0f, -3.0f, 1.0000001f,
                  0.99999994f, bits_float(1), std::numeric_limits<float>::max()})
    bases.push_back(s);
  const std::vector<float> exponents = {0.0f,  -0.0f, 1.0f,  -1.0f,  2.0f,   -2.0f,   3.0f,        -3.0f,   0.5f,
                                        -0.5f, 2.5f,  -2.5f, 7.0f,   0.1f,   1.0f / 3, 10.3f,      -10.3f,  100.0f,
                                        -100.0f, 127.0f, -149.0f, 1e10f, -1e10f, 8388609.0f, 16777216.0f, 33.7f,
                                        inf,   -inf,  nan,   1e-3f,  -7.25f, 1e-30f, 3.5e-6f, 1e30f};
  std::vector<float> xs, ys;
  for (float y : exponents)
    for (float x : bases) xs.push_back(x), ys.push_back(y);
  std::vector<float> out(xs.size());
  for (Isa isa : supported_isas()) {
    pow_math(xs.data(), ys.data(), out.data(), xs.size(), isa);
    double worst = 0;
    size_t worst_at = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double e = ulp_error(out[i], std::pow(static_cast<long double>(xs[i]), static_cast<long double>(ys[i])));
      if (!(e <= worst)) worst = e, worst_at = i;
    }
    INFO("pow on " << isa_name(isa) << ": worst " << worst << " ulp at pow(" << xs[worst_at] << ", " << ys[worst_at]
                   << "), got " << out[worst_at] << ", C gives " << std::pow(xs[worst_at], ys[worst_at]));
    CHECK(worst <= 1.0);
  }
}

// The values of a float tensor, NaN compared as equal to NaN.
std::vector<uint32_t> value_bits(const Tensor& t) {
  const Tensor f = t.to(kFloat32).contiguous();
  std::vector<uint32_t> v(static_cast<size_t>(f.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    const float x = f.data_ptr<float>()[i];
    v[i] = std::isnan(x) ? 0x7fc00000u : float_bits(x);
  }
  return v;
}

TEST_CASE("pow on float32, bfloat16 and float16 tensors takes the vector path, any layout") {
  const Tensor x = mul(randn({37, 41}), 3.0);
  const Tensor e = add(mul(rand({37, 41}), 4.0), -2.0);
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat16}) {
    INFO(dt);
    const Tensor xd = x.to(dt), ed = e.to(dt);
    // The expected values: the vector function on float32 copies, rounded once to dt.
    const Tensor xf = xd.to(kFloat32).contiguous(), ef = ed.to(kFloat32).contiguous();
    auto expected = [&](const float* y) {
      Tensor r = empty({37, 41});
      pow_math(xf.data_ptr<float>(), y, r.data_ptr<float>(), static_cast<size_t>(r.numel()));
      return value_bits(r.to(dt));
    };
    const std::vector<float> two_and_half(static_cast<size_t>(xf.numel()), 2.5f);
    CHECK(value_bits(pow(xd, ed)) == expected(ef.data_ptr<float>()));
    CHECK(value_bits(pow(xd.t().contiguous().t(), ed)) == expected(ef.data_ptr<float>()));  // strides change nothing
    CHECK(value_bits(pow(xd, 2.5)) == expected(two_and_half.data()));
    Tensor inplace = xd.clone();
    pow_(inplace, ed);
    CHECK(value_bits(inplace) == expected(ef.data_ptr<float>()));
  }
}

TEST_CASE("floor, ceil, trunc, round, frac and leaky_relu tensors take the vector path with the scalar results") {
  // Values with halves (round's ties), signed zeros and specials among normal ones.
  std::vector<float> v = {0.5f, -0.5f, 1.5f, 2.5f, -2.5f, -0.0f, 0.0f, 0.25f, -0.75f, 8388607.5f, 1e-30f, -1e-30f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  const Tensor noise = mul(randn({997}), 7.0);
  for (int64_t i = 0; i < noise.numel(); ++i) v.push_back(noise.data_ptr<float>()[i]);
  const Tensor x = from_vector(v);
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat16}) {
    INFO(dt);
    const Tensor xd = x.to(dt);
    const Tensor xf = xd.to(kFloat32).contiguous();
    auto expected = [&](float (*f)(float)) {
      Tensor r = empty({xf.numel()});
      for (int64_t i = 0; i < xf.numel(); ++i) r.data_ptr<float>()[i] = f(xf.data_ptr<float>()[i]);
      return value_bits(r.to(dt));
    };
    CHECK(value_bits(floor(xd)) == expected([](float a) { return std::floor(a); }));
    CHECK(value_bits(ceil(xd)) == expected([](float a) { return std::ceil(a); }));
    CHECK(value_bits(trunc(xd)) == expected([](float a) { return std::trunc(a); }));
    CHECK(value_bits(round(xd)) == expected([](float a) { return std::nearbyint(a); }));
    CHECK(value_bits(frac(xd)) == expected([](float a) { return a - std::trunc(a); }));
    CHECK(value_bits(nn::functional::leaky_relu(xd, 0.25)) == expected([](float a) { return a > 0 ? a : a * 0.25f; }));
    // With decimals, round keeps the scalar functor's scaling: nearbyint(x * 10) / 10.
    CHECK(value_bits(round(xd, 1)) == expected([](float a) { return std::nearbyint(a * 10.0f) / 10.0f; }));
    // Signed zeros survive (value_bits keeps the sign): floor(-0) = -0, ceil(-0.5) = -0.
    CHECK(std::signbit(floor(from_vector(std::vector<float>{-0.0f}).to(dt)).to(kFloat32).item<float>()));
    CHECK(std::signbit(ceil(from_vector(std::vector<float>{-0.5f}).to(dt)).to(kFloat32).item<float>()));
  }
}

TEST_CASE("elu and selu tensors take the vector path with their functors' parameters") {
  // The lanes read alpha, scale and input_scale from the op's own functor (selu's are
  // constants); each result within the expm1 bound plus the roundings of the two products.
  std::vector<float> v = {-0.0f, 0.0f, -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::infinity(), 1e-30f, -1e-30f};
  for (int i = 0; i <= 4000; ++i) v.push_back(-30.0f + 35.0f * static_cast<float>(i) / 4000.0f);
  const Tensor x = from_vector(v);
  const long double selu_alpha = 1.6732632423543772848170429916717L, selu_scale = 1.0507009873554804934193349852946L;
  struct Form {
    const char* name;
    Tensor y;
    long double alpha, scale, input_scale;
  } forms[] = {{"elu", nn::functional::elu(x), 1, 1, 1},
               {"elu alpha 0.3, scale 2, input_scale 0.5", nn::functional::elu(x, 0.3, 2.0, 0.5), 0.3L, 2, 0.5L},
               {"selu", nn::functional::selu(x), selu_alpha, selu_scale, 1}};
  for (const Form& f : forms) {
    INFO(f.name);
    const float* y = f.y.data_ptr<float>();
    double worst = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const long double xi = v[i];
      const long double ref = xi > 0 ? f.scale * xi : f.alpha * f.scale * std::expm1(f.input_scale * xi);
      worst = std::max(worst, ulp_error(y[i], ref));
    }
    CHECK(worst <= 6);
  }
  CHECK(std::signbit(nn::functional::elu(from_vector(std::vector<float>{-0.0f})).item<float>()));  // elu(-0) = -0
  // bfloat16: the float32 lanes' result rounded once.
  const Tensor xb = x.to(kBFloat16);
  CHECK(value_bits(nn::functional::elu(xb, 0.3)) == value_bits(nn::functional::elu(xb.to(kFloat32), 0.3).to(kBFloat16)));
}
