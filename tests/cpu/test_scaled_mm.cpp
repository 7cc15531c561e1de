// scaled_mm, the float8 GEMM of torch._scaled_mm, and its CPU reference kernel: values against
// an independent double reference (tests/support/reference.cpp) for every operand pair, scale
// mode, result dtype, bias and scale_result; saturation, NaN and amax; every refused input
// (the meta device refuses it with the same message); meta shapes; backward raising; autocast
// never casting its inputs. See Note [Scaled mm].
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

#include "op_cases.h"
#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
using Catch::Contains;

namespace {

const ScalarType kFloat8Types[] = {kFloat8_e4m3fn, kFloat8_e5m2};
const ScalarType kOutTypes[] = {kBFloat16, kFloat16, kFloat32, kFloat8_e4m3fn, kFloat8_e5m2};

// Values in [lo, hi] stored in `dt` (float8 operands round to their grid).
Tensor values(ScalarType dt, const Shape& s, double lo, double hi, uint32_t seed) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  uint32_t x = seed * 2654435761u + 12345u;
  for (double& e : v) {
    x = x * 1664525u + 1013904223u;
    e = lo + (hi - lo) * static_cast<double>(x >> 8) / static_cast<double>(1u << 24);
  }
  return from_vector(v, s).to(dt);
}

Tensor scalar32(double v) { return full({}, v, {.dtype = kFloat32}); }

ref::Ref ref_of(const Tensor& t) { return {t.sizes().vec(), t.to_vector<double>()}; }

double float8_max(ScalarType dt) { return dt == kFloat8_e4m3fn ? 448.0 : 57344.0; }

// The error scaled_mm raises for these arguments ("" when it runs).
std::string error_of(const Tensor& a, const Tensor& b, const Tensor& sa, const Tensor& sb,
                     const ScaledMmOptions& o = {}) {
  try {
    scaled_mm(a, b, sa, sb, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The message (without the inputs' description) of the error for these arguments.
std::string message_of(const Tensor& a, const Tensor& b, const Tensor& sa, const Tensor& sb,
                       const ScaledMmOptions& o = {}) {
  try {
    scaled_mm(a, b, sa, sb, o);
  } catch (const Error& e) {
    return e.op() + ": " + e.message();
  }
  return "";
}

Tensor on_meta(const Tensor& t) { return t.defined() ? t.to(Device::meta()) : t; }

}  // namespace

TEST_CASE("scaled_mm matches a double reference for every operand pair, scale mode and result", "[scaled_mm]") {
  const int64_t M = 7, K = 48, N = 9;
  int runs = 0;
  for (ScalarType adt : kFloat8Types)
    for (ScalarType bdt : kFloat8Types) {
      if (adt == kFloat8_e5m2 && bdt == kFloat8_e5m2) continue;  // refused (below)
      // a is a transposed view (strides [1, M]): the CPU takes any strides.
      const Tensor a = values(adt, {K, M}, -3, 3, 1).t();
      const Tensor b = values(bdt, {K, N}, -3, 3, 2);
      for (bool rowwise : {false, true}) {
        const Tensor sa = rowwise ? values(kFloat32, {M, 1}, 0.05, 2, 3) : scalar32(0.37);
        const Tensor sb = rowwise ? values(kFloat32, {1, N}, 0.05, 2, 4) : full({1}, 1.9, {.dtype = kFloat32});
        for (ScalarType out : kOutTypes) {
          if (out == kFloat8_e5m2 && adt != kFloat8_e5m2 && bdt != kFloat8_e5m2) continue;  // refused (below)
          const bool f8 = is_float8(out);
          if (rowwise && f8) continue;  // refused (below)
          std::vector<Tensor> biases = {Tensor()};
          if (out == kBFloat16 || f8) biases.push_back(values(kBFloat16, {N}, -4, 4, 5));
          if (out == kFloat16 || f8) biases.push_back(values(kFloat16, {N}, -4, 4, 6));
          for (const Tensor& bias : biases)
            for (double sr : f8 ? std::vector<double>{1.0, 0.6} : std::vector<double>{1.0}) {
              INFO(dtype_name(adt) << " @ " << dtype_name(bdt) << (rowwise ? " row-wise" : " per tensor") << " -> "
                                   << dtype_name(out) << (bias.defined() ? " bias " : " no bias ")
                                   << (bias.defined() ? dtype_name(bias.dtype()) : "") << " scale_result " << sr);
              const Tensor srt = f8 && sr != 1.0 ? scalar32(sr) : Tensor();
              const ScaledMmResult r = scaled_mm(a, b, sa, sb, {.bias = bias, .scale_result = srt, .out_dtype = out});
              REQUIRE(r.out.dtype() == out);
              REQUIRE(r.out.sizes() == Shape{M, N});
              const ref::Ref rb = bias.defined() ? ref_of(bias) : ref::Ref{};
              ref::Ref amax;
              const ref::Ref want = ref::scaled_mm(ref_of(a.contiguous()), ref_of(b), ref_of(sa), ref_of(sb),
                                                   bias.defined() ? &rb : nullptr, sr, f8 ? float8_max(out) : 0.0, &amax);
              CHECK(compare_with_reference(r.out, want, {}) == "");
              if (f8) {
                REQUIRE(r.amax.defined());
                CHECK(r.amax.dtype() == kFloat32);
                CHECK(r.amax.dim() == 0);
                CHECK(compare_with_reference(r.amax, amax, {}) == "");
              } else {
                CHECK_FALSE(r.amax.defined());
              }
              ++runs;
            }
        }
      }
    }
  // Per tensor: e4m3 @ e4m3 has no e5m2 result; row-wise: no float8 result (5 runs per pair).
  CHECK(runs == (11 + 17 + 17) + 3 * 5);
}

TEST_CASE("scaled_mm: out_dtype defaults to a's dtype; layouts and use_fast_accum do not change the result",
          "[scaled_mm]") {
  const Tensor a = values(kFloat8_e4m3fn, {6, 32}, -2, 2, 7), b = values(kFloat8_e5m2, {32, 5}, -2, 2, 8);
  const Tensor sa = scalar32(0.25), sb = scalar32(0.5);
  const ScaledMmResult d = scaled_mm(a, b, sa, sb);
  CHECK(d.out.dtype() == kFloat8_e4m3fn);
  CHECK(d.amax.defined());
  CHECK(scaled_mm(b.t(), a.t(), sb, sa).out.dtype() == kFloat8_e5m2);
  const Tensor plain = scaled_mm(a, b, sa, sb, {.out_dtype = kFloat32}).out;
  // Hopper's TN layout (b as the transpose of a row-major [N, K] weight) and a column-major a.
  const Tensor b_tn = b.t().contiguous().t(), a_cm = a.t().contiguous().t();
  CHECK(b_tn.stride(0) == 1);
  CHECK(equal(scaled_mm(a_cm, b_tn, sa, sb, {.out_dtype = kFloat32}).out, plain));
  CHECK(equal(scaled_mm(a, b, sa, sb, {.out_dtype = kFloat32, .use_fast_accum = true}).out, plain));
}

TEST_CASE("float8 results saturate to the finite range and keep NaN; amax is taken before scale_result",
          "[scaled_mm]") {
  const Tensor one = ones({2, 1}, {.dtype = kFloat8_e4m3fn});  // b: sums the two columns of a
  SECTION("e4m3: beyond +-448 gives +-448, as the SATFINITE store does") {
    const Tensor a = from_vector(std::vector<double>{256, 256, -256, -256, 104, 104, 1, 2}, {4, 2}).to(kFloat8_e4m3fn);
    const ScaledMmResult r = scaled_mm(a, one, scalar32(1), scalar32(1), {.out_dtype = kFloat8_e4m3fn});
    CHECK(same_values(r.out.to_vector<double>(), {448, -448, 208, 3}));
    CHECK(r.amax.item<double>() == 512);
    // scale_result multiplies before the store: 3 * 208 = 624 saturates; amax stays the unscaled 512.
    const ScaledMmResult s = scaled_mm(a, one, scalar32(1), scalar32(1),
                                       {.scale_result = scalar32(3), .out_dtype = kFloat8_e4m3fn});
    CHECK(same_values(s.out.to_vector<double>(), {448, -448, 448, 9}));
    CHECK(s.amax.item<double>() == 512);
  }
  SECTION("e5m2: beyond +-57344 gives +-57344, not Inf (a plain cast would give Inf)") {
    const Tensor a = from_vector(std::vector<double>{57344, 57344, -40960, -40960}, {2, 2}).to(kFloat8_e5m2);
    const ScaledMmResult r = scaled_mm(a, one, scalar32(1), scalar32(1), {.out_dtype = kFloat8_e5m2});
    CHECK(same_values(r.out.to_vector<double>(), {57344, -57344}));
    CHECK(r.amax.item<double>() == 114688);
    CHECK(std::isinf(from_vector(std::vector<double>{114688}).to(kFloat8_e5m2).item<double>()));
  }
  SECTION("Inf from the scales saturates; amax records it") {
    const Tensor a = from_vector(std::vector<double>{1, 1, -1, 0}, {2, 2}).to(kFloat8_e4m3fn);
    const ScaledMmResult r = scaled_mm(a, one, scalar32(1e30), scalar32(1e30), {.out_dtype = kFloat8_e4m3fn});
    CHECK(same_values(r.out.to_vector<double>(), {448, -448}));
    CHECK(r.amax.item<double>() == kInf);
    // Wider results keep IEEE overflow: Inf in float16.
    CHECK(scaled_mm(a, one, scalar32(1e30), scalar32(1e30), {.out_dtype = kFloat16}).out.to_vector<double>()[0] ==
          kInf);
  }
  SECTION("NaN in an operand or a scale: NaN results and a NaN amax") {
    for (ScalarType out : {kFloat8_e4m3fn, kBFloat16}) {
      INFO(dtype_name(out));
      const Tensor a = from_vector(std::vector<double>{kNan, 1, 2, 3}, {2, 2}).to(kFloat8_e4m3fn);
      const ScaledMmResult r = scaled_mm(a, one, scalar32(1), scalar32(1), {.out_dtype = out});
      const std::vector<double> v = r.out.to_vector<double>();
      CHECK(std::isnan(v[0]));
      CHECK(v[1] == 5);
      if (is_float8(out)) CHECK(std::isnan(r.amax.item<double>()));
    }
    const Tensor a = from_vector(std::vector<double>{1, 1, 2, 3}, {2, 2}).to(kFloat8_e4m3fn);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const Tensor rows = from_vector(std::vector<float>{1, nan}, {2, 1});
    const ScaledMmResult r = scaled_mm(a, one, rows, ones({1, 1}), {.out_dtype = kBFloat16});
    CHECK(r.out.to_vector<double>()[0] == 2);
    CHECK(std::isnan(r.out.to_vector<double>()[1]));
    const ScaledMmResult t = scaled_mm(a, one, from_vector(std::vector<float>{nan}), ones({1}),
                                       {.out_dtype = kFloat8_e4m3fn});
    CHECK(std::isnan(t.out.to_vector<double>()[0]));
    CHECK(std::isnan(t.amax.item<double>()));
  }
}

TEST_CASE("scaled_mm on empty shapes: K = 0 gives the bias, M = 0 an empty result and amax 0", "[scaled_mm]") {
  const Tensor bias = from_vector(std::vector<double>{1.5, -2}).to(kBFloat16);
  const ScaledMmResult k0 = scaled_mm(empty({3, 0}, {.dtype = kFloat8_e4m3fn}), empty({0, 2}, {.dtype = kFloat8_e4m3fn}),
                                      scalar32(2), scalar32(2), {.bias = bias, .out_dtype = kBFloat16});
  CHECK(k0.out.to_vector<double>() == std::vector<double>{1.5, -2, 1.5, -2, 1.5, -2});
  const ScaledMmResult m0 = scaled_mm(empty({0, 16}, {.dtype = kFloat8_e4m3fn}), ones({16, 4}, {.dtype = kFloat8_e4m3fn}),
                                      scalar32(1), scalar32(1), {.out_dtype = kFloat8_e4m3fn});
  CHECK(m0.out.sizes() == Shape{0, 4});
  CHECK(m0.amax.item<double>() == 0);
}

TEST_CASE("scaled_mm raises on every bad input, naming the op and the shapes or dtypes; meta agrees",
          "[scaled_mm][errors]") {
  const int64_t M = 4, K = 16, N = 8;
  const Tensor a = values(kFloat8_e4m3fn, {M, K}, -1, 1, 9), b = values(kFloat8_e4m3fn, {K, N}, -1, 1, 10);
  const Tensor a5 = a.to(kFloat8_e5m2), b5 = b.to(kFloat8_e5m2);
  const Tensor s = scalar32(1);
  const Tensor rows = ones({M, 1}), cols = ones({1, N});
  const Tensor bias_bf = zeros({N}, {.dtype = kBFloat16}), bias_h = zeros({N}, {.dtype = kFloat16});
  struct Bad {
    const char* what;
    Tensor a, b, sa, sb;
    ScaledMmOptions o;
    std::vector<std::string> says;
  };
  const std::vector<Bad> bad = {
      {"e5m2 @ e5m2", a5, b5, s, s, {}, {"float8_e5m2 @ float8_e5m2 is not supported"}},
      {"bfloat16 operands", a.to(kBFloat16), b.to(kBFloat16), s, s, {}, {"float8_e4m3fn or float8_e5m2", "bfloat16"}},
      {"a float32 operand", a, b.to(kFloat32), s, s, {}, {"but got float8_e4m3fn and float32"}},
      {"3-D a", a.view({1, M, K}), b, s, s, {}, {"2-D operands", "[1, 4, 16]"}},
      {"1-D b", a, b.view({K * N}), s, s, {}, {"2-D operands", "[128]"}},
      {"K differs", a, b.slice(0, 0, 8), s, s, {}, {"cannot be multiplied", "[4, 16]", "[8, 8]"}},
      {"float64 scale", a, b, s.to(kFloat64), s, {}, {"float32 scales", "float64"}},
      {"bfloat16 row scales", a, b, rows.to(kBFloat16), cols, {}, {"float32 scales", "bfloat16"}},
      {"per tensor with row-wise", a, b, s, cols, {}, {"row-wise scales", "scale_b of shape [1, 8]"}},
      {"row-wise with per tensor", a, b, rows, s, {}, {"row-wise scales", "[4, 1]"}},
      {"row-wise as 1-D", a, b, ones({M}), ones({N}), {}, {"scale_a of shape [4]", "scale_b of shape [8]"}},
      {"row-wise transposed", a, b, ones({1, M}), ones({N, 1}), {}, {"scale_a of shape [1, 4]"}},
      {"two-element scale", a, b, ones({2}), s, {}, {"scale_a of shape [2]"}},
      {"row-wise with a float8_e4m3fn result", a, b, rows, cols, {.out_dtype = kFloat8_e4m3fn},
       {"row-wise scales need a bfloat16, float16 or float32 out_dtype", "float8_e4m3fn"}},
      {"row-wise with a float8_e5m2 result", a5, b, rows, cols, {.out_dtype = kFloat8_e5m2},
       {"row-wise scales need a bfloat16, float16 or float32 out_dtype", "float8_e5m2"}},
      {"row-wise with a's dtype by default", a, b, rows, cols, {}, {"row-wise scales need", "a's dtype when unset"}},
      {"bias shape", a, b, s, s, {.bias = zeros({N + 1}, {.dtype = kBFloat16}), .out_dtype = kBFloat16},
       {"bias of shape [N] = [8]", "[9]"}},
      {"2-D bias", a, b, s, s, {.bias = zeros({1, N}, {.dtype = kBFloat16}), .out_dtype = kBFloat16},
       {"bias of shape [N]", "[1, 8]"}},
      {"bias with float32 results", a, b, s, s, {.bias = zeros({N}), .out_dtype = kFloat32},
       {"bias is not supported with a float32 out_dtype"}},
      {"float16 bias for bfloat16", a, b, s, s, {.bias = bias_h, .out_dtype = kBFloat16},
       {"bfloat16 bias for a bfloat16 result", "float16"}},
      {"bfloat16 bias for float16", a, b, s, s, {.bias = bias_bf, .out_dtype = kFloat16},
       {"float16 bias for a float16 result", "bfloat16"}},
      {"float32 bias for float8", a, b, s, s, {.bias = zeros({N}), .out_dtype = kFloat8_e4m3fn},
       {"bfloat16 or float16 bias", "float32"}},
      {"scale_result with bfloat16", a, b, s, s, {.scale_result = s, .out_dtype = kBFloat16},
       {"scale_result applies only to float8 results", "bfloat16"}},
      {"scale_result with float32", a, b, s, s, {.scale_result = s, .out_dtype = kFloat32},
       {"scale_result applies only to float8 results", "float32"}},
      {"two-element scale_result", a, b, s, s, {.scale_result = ones({2}), .out_dtype = kFloat8_e4m3fn},
       {"one-element float32 scale_result", "[2]"}},
      {"float64 scale_result", a, b, s, s, {.scale_result = s.to(kFloat64), .out_dtype = kFloat8_e4m3fn},
       {"one-element float32 scale_result", "float64"}},
      {"float64 result", a, b, s, s, {.out_dtype = kFloat64}, {"out_dtype float64 is not supported"}},
      {"int32 result", a, b, s, s, {.out_dtype = kInt32}, {"out_dtype int32 is not supported"}},
      {"e5m2 result from e4m3 operands", a, b, s, s, {.out_dtype = kFloat8_e5m2},
       {"float8_e5m2 result needs a float8_e5m2 operand", "float8_e4m3fn and float8_e4m3fn"}},
  };
  for (const Bad& x : bad) {
    INFO(x.what);
    const std::string e = error_of(x.a, x.b, x.sa, x.sb, x.o);
    CHECK_THAT(e, Contains("scaled_mm"));
    for (const std::string& part : x.says) CHECK_THAT(e, Contains(part));
    // The meta device runs the same checks: the same message.
    const ScaledMmOptions mo{.bias = on_meta(x.o.bias), .scale_result = on_meta(x.o.scale_result),
                             .out_dtype = x.o.out_dtype};
    CHECK(message_of(on_meta(x.a), on_meta(x.b), on_meta(x.sa), on_meta(x.sb), mo) ==
          message_of(x.a, x.b, x.sa, x.sb, x.o));
  }
  // Inputs on two devices (the meta key wins the dispatch and refuses the CPU tensors).
  CHECK_THAT(error_of(a, b, s.to(Device::meta()), s), Contains("scaled_mm") && Contains("input 0 is on cpu"));
}

TEST_CASE("scaled_mm on meta tensors: the CPU's shapes and dtypes, amax for float8 results only", "[scaled_mm][meta]") {
  const Tensor a = empty({1 << 16, 4096}, {.dtype = kFloat8_e4m3fn, .device = Device::meta()});
  const Tensor b = empty({4096, 1 << 15}, {.dtype = kFloat8_e4m3fn, .device = Device::meta()}).t().contiguous().t();
  const Tensor s = empty({}, {.dtype = kFloat32, .device = Device::meta()});
  for (ScalarType out : {kBFloat16, kFloat16, kFloat32, kFloat8_e4m3fn}) {
    INFO(dtype_name(out));
    const ScaledMmResult r = scaled_mm(a, b, s, s, {.out_dtype = out});
    CHECK(r.out.is_meta());
    CHECK(r.out.sizes() == Shape{1 << 16, 1 << 15});
    CHECK(r.out.dtype() == out);
    CHECK(r.amax.defined() == is_float8(out));
    if (r.amax.defined()) CHECK((r.amax.is_meta() && r.amax.dim() == 0 && r.amax.dtype() == kFloat32));
  }
  const Tensor rows = empty({1 << 16, 1}, {.dtype = kFloat32, .device = Device::meta()});
  const Tensor cols = empty({1, 1 << 15}, {.dtype = kFloat32, .device = Device::meta()});
  CHECK(scaled_mm(a, b, rows, cols, {.out_dtype = kBFloat16}).out.sizes() == Shape{1 << 16, 1 << 15});
}

TEST_CASE("scaled_mm is not differentiable: backward through it raises naming the op", "[scaled_mm][autograd]") {
  const Tensor a = values(kFloat8_e4m3fn, {3, 16}, -1, 1, 11), b = values(kFloat8_e4m3fn, {16, 4}, -1, 1, 12);
  const Tensor s = scalar32(1);
  CHECK_FALSE(op_entry(OpId::scaled_mm).has(op_flags::Diff));
  // Nothing requires grad: nothing is recorded.
  CHECK_FALSE(scaled_mm(a, b, s, s, {.out_dtype = kBFloat16}).out.requires_grad());
  // A trainable bias: the result is recorded, and backward raises instead of dropping the bias's gradient.
  const Tensor bias = zeros({4}, {.dtype = kBFloat16}).set_requires_grad(true);
  const Tensor out = scaled_mm(a, b, s, s, {.bias = bias, .out_dtype = kBFloat16}).out;
  CHECK(out.requires_grad());
  Tensor loss = sum(out.to(kFloat32));
  CHECK_THROWS_WITH(loss.backward(), Contains("scaled_mm") && Contains("not differentiable"));
  // A scale that requires grad (a learned scale), with a float8 result.
  const Tensor sa = scalar32(0.5).set_requires_grad(true);
  const ScaledMmResult r = scaled_mm(a, b, sa, s, {.out_dtype = kFloat8_e4m3fn});
  CHECK_THROWS_WITH(sum(r.out.to(kFloat32)).backward(), Contains("scaled_mm"));
  CHECK_THROWS_WITH(r.amax.backward(), Contains("scaled_mm"));
  // Under no_grad nothing is recorded.
  autograd::NoGradGuard no_grad;
  CHECK_FALSE(scaled_mm(a, b, s, s, {.bias = bias, .out_dtype = kBFloat16}).out.requires_grad());
}

TEST_CASE("autocast never casts scaled_mm's inputs: both tables, islands, regions, a set policy",
          "[scaled_mm][autocast]") {
  const Tensor a = values(kFloat8_e4m3fn, {5, 16}, -2, 2, 13), b = values(kFloat8_e5m2, {16, 3}, -2, 2, 14);
  const Tensor sa = values(kFloat32, {5, 1}, 0.1, 1, 15), sb = values(kFloat32, {1, 3}, 0.1, 1, 16);
  const Tensor bias = values(kBFloat16, {3}, -1, 1, 17);
  const ScaledMmOptions o{.bias = bias, .out_dtype = kBFloat16};
  const Tensor want = scaled_mm(a, b, sa, sb, o).out;
  CHECK(autocast::policy_of(DeviceType::CPU, OpId::scaled_mm) == autocast::Policy::PassThrough);
  CHECK(autocast::policy_of(DeviceType::CUDA, OpId::scaled_mm) == autocast::Policy::PassThrough);
  // Runs scaled_mm under `scope`'s setting and checks: no cast recorded, the same result.
  auto same_under = [&](const char* what, auto&& scope) {
    INFO(what);
    autocast::Explain ex;
    const Tensor got = scope([&] { return scaled_mm(a, b, sa, sb, o).out; });
    CHECK(equal(got, want));
    CHECK(got.dtype() == kBFloat16);
    bool seen = false;
    for (const auto& r : ex.records())
      if (r.op == "scaled_mm") {
        seen = true;
        CHECK(r.casts.empty());
        CHECK(r.rule == autocast::Rule::PassThrough);
      }
    CHECK(seen);
  };
  same_under("CPU float16", [](auto f) {
    autocast::Guard g({.device = DeviceType::CPU, .dtype = kFloat16});
    return f();
  });
  same_under("CUDA float16 rehearsed", [](auto f) {
    autocast::Guard g({.device = DeviceType::CUDA, .dtype = kFloat16, .rehearse_on = Device::cpu()});
    return f();
  });
  same_under("float32 island", [](auto f) {
    autocast::Island island;
    return f();
  });
  same_under("bfloat16 region", [](auto f) {
    autocast::Region region(kBFloat16);
    return f();
  });
  autocast::set_policy(DeviceType::CPU, OpId::scaled_mm, autocast::Policy::Lower);
  same_under("a lower policy set by hand", [](auto f) {
    autocast::Guard g({.device = DeviceType::CPU, .dtype = kBFloat16});
    return f();
  });
  autocast::reset_policies();
}
