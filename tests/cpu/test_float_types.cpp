// The software narrow-float types: every fp8 code, every 16-bit code, rounding
// ties, overflow rules and subnormals, against formulas written out here.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

using namespace mixt;

namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Value of a (1, E, M) code with bias B computed from the definition.
double decode_reference(uint32_t code, int E, int M, int B) {
  const uint32_t sign = code >> (E + M);
  const uint32_t exp = (code >> M) & ((1u << E) - 1);
  const uint32_t man = code & ((1u << M) - 1);
  const double frac = static_cast<double>(man) / (1u << M);
  const double mag = exp == 0 ? std::ldexp(frac, 1 - B) : std::ldexp(1.0 + frac, static_cast<int>(exp) - B);
  return sign ? -mag : mag;
}

bool e4m3_is_nan(uint32_t c) { return (c & 0x7f) == 0x7f; }
bool e5m2_is_special(uint32_t c) { return (c & 0x7c) == 0x7c; }

}  // namespace

TEST_CASE("float8_e4m3fn: all 256 codes decode and re-encode", "[fp8]") {
  for (uint32_t c = 0; c < 256; ++c) {
    const float v = static_cast<float>(Float8_e4m3fn::from_bits(static_cast<uint8_t>(c)));
    INFO("code " << c);
    if (e4m3_is_nan(c)) {
      CHECK(std::isnan(v));
      CHECK(Float8_e4m3fn(v).x == 0x7f);
      continue;
    }
    CHECK(static_cast<double>(v) == decode_reference(c, 4, 3, 7));
    CHECK(Float8_e4m3fn(v).x == c);  // exact values re-encode to themselves (-0 stays -0)
  }
  CHECK(static_cast<float>(Float8_e4m3fn::from_bits(0x7e)) == 448.f);
  CHECK(static_cast<float>(Float8_e4m3fn::from_bits(0x01)) == std::ldexp(1.f, -9));
}

TEST_CASE("float8_e5m2: all 256 codes decode and re-encode", "[fp8]") {
  for (uint32_t c = 0; c < 256; ++c) {
    const float v = static_cast<float>(Float8_e5m2::from_bits(static_cast<uint8_t>(c)));
    INFO("code " << c);
    if (e5m2_is_special(c)) {
      if ((c & 0x3) == 0) {
        CHECK(std::isinf(v));
        CHECK(std::signbit(v) == ((c & 0x80) != 0));
        CHECK(Float8_e5m2(v).x == c);
      } else {
        CHECK(std::isnan(v));
        CHECK(Float8_e5m2(v).x == 0x7f);
      }
      continue;
    }
    CHECK(static_cast<double>(v) == decode_reference(c, 5, 2, 15));
    CHECK(Float8_e5m2(v).x == c);
  }
  CHECK(static_cast<float>(Float8_e5m2::from_bits(0x7b)) == 57344.f);
}

TEST_CASE("fp8 rounding: midpoints go to the even code, others to the nearest", "[fp8]") {
  // Walk every pair of adjacent positive finite codes.
  for (uint32_t c = 0; c < 0x7e; ++c) {
    const double lo = decode_reference(c, 4, 3, 7), hi = decode_reference(c + 1, 4, 3, 7);
    const float mid = static_cast<float>((lo + hi) / 2);
    INFO("e4m3 codes " << c << "," << c + 1);
    CHECK(Float8_e4m3fn(mid).x == ((c & 1) ? c + 1 : c));
    CHECK(Float8_e4m3fn(std::nextafter(mid, 0.f)).x == c);
    CHECK(Float8_e4m3fn(std::nextafter(mid, 1e9f)).x == c + 1);
    CHECK(Float8_e4m3fn(-mid).x == (0x80 | ((c & 1) ? c + 1 : c)));
  }
  for (uint32_t c = 0; c < 0x7b; ++c) {
    const double lo = decode_reference(c, 5, 2, 15), hi = decode_reference(c + 1, 5, 2, 15);
    const float mid = static_cast<float>((lo + hi) / 2);
    INFO("e5m2 codes " << c << "," << c + 1);
    CHECK(Float8_e5m2(mid).x == ((c & 1) ? c + 1 : c));
    CHECK(Float8_e5m2(std::nextafter(mid, 0.f)).x == c);
    CHECK(Float8_e5m2(std::nextafter(mid, 1e9f)).x == c + 1);
  }
}

TEST_CASE("fp8 overflow rules: e4m3fn saturates, e5m2 goes to Inf", "[fp8]") {
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {448.f, 449.f, 463.9f, 464.f, 480.f, 1e6f, 3e38f, inf}) {
    INFO(v);
    CHECK(Float8_e4m3fn(v).x == 0x7e);
    CHECK(Float8_e4m3fn(-v).x == 0xfe);
  }
  CHECK(Float8_e4m3fn(std::nanf("")).x == 0x7f);
  CHECK(Float8_e5m2(57344.f).x == 0x7b);
  CHECK(Float8_e5m2(61439.f).x == 0x7b);
  CHECK(Float8_e5m2(61440.f).x == 0x7c);
  CHECK(Float8_e5m2(1e9f).x == 0x7c);
  CHECK(Float8_e5m2(-inf).x == 0xfc);
  CHECK(std::isnan(static_cast<float>(Float8_e5m2(std::nanf("")))));
}

TEST_CASE("fp8 underflow and subnormals", "[fp8]") {
  const float min_sub_e4m3 = std::ldexp(1.f, -9), min_sub_e5m2 = std::ldexp(1.f, -16);
  CHECK(Float8_e4m3fn(min_sub_e4m3 / 2).x == 0x00);  // tie with 0 goes to even (0)
  CHECK(Float8_e4m3fn(std::nextafter(min_sub_e4m3 / 2, 1.f)).x == 0x01);
  CHECK(Float8_e4m3fn(-min_sub_e4m3 / 4).x == 0x80);  // sign kept
  CHECK(Float8_e4m3fn(1e-30f).x == 0x00);
  CHECK(Float8_e5m2(min_sub_e5m2 * 1.5f).x == 0x02);  // tie between 1 and 2 -> even
  CHECK(Float8_e5m2(min_sub_e5m2 / 2).x == 0x00);
  CHECK(Float8_e4m3fn(std::ldexp(1.f, -6)).x == 0x08);  // smallest normal
  CHECK(Float8_e4m3fn(std::ldexp(7.5f, -9)).x == 0x08);  // 7.5 units rounds up into the normals
}

TEST_CASE("float16: every code round-trips; boundaries", "[f16]") {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float v = static_cast<float>(Half::from_bits(static_cast<uint16_t>(c)));
    const bool special = (c & 0x7c00) == 0x7c00;
    if (special && (c & 0x3ff)) {
      REQUIRE(std::isnan(v));
      continue;
    }
    if (!special) REQUIRE(static_cast<double>(v) == decode_reference(c, 5, 10, 15));
    REQUIRE(Half(v).x == c);
  }
  CHECK(Half(65504.f).x == 0x7bff);
  CHECK(Half(65519.f).x == 0x7bff);
  CHECK(Half(65520.f).x == 0x7c00);
  CHECK(Half(-1e10f).x == 0xfc00);
  CHECK(Half(std::ldexp(1.f, -24)).x == 0x0001);
  CHECK(Half(std::ldexp(1.f, -25)).x == 0x0000);  // tie to even
  CHECK(Half(std::ldexp(1.5f, -25)).x == 0x0001);
  CHECK(Half(std::ldexp(1.f, -14)).x == 0x0400);
  CHECK(Half(1.f + std::ldexp(1.f, -11)).x == 0x3c00);      // tie -> even
  CHECK(Half(1.f + 3 * std::ldexp(1.f, -11)).x == 0x3c02);  // tie -> even (up)
  CHECK(std::isnan(static_cast<float>(Half(std::nanf("")))));
}

TEST_CASE("bfloat16: every code round-trips; boundaries", "[bf16]") {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float v = static_cast<float>(BFloat16::from_bits(static_cast<uint16_t>(c)));
    if (std::isnan(v)) continue;
    REQUIRE(v == bits_to_float(c << 16));
    REQUIRE(BFloat16(v).x == c);
  }
  CHECK(BFloat16(1.f + std::ldexp(1.f, -8)).x == 0x3f80);      // tie -> even
  CHECK(BFloat16(1.f + 3 * std::ldexp(1.f, -8)).x == 0x3f82);  // tie -> even (up)
  CHECK(BFloat16(std::numeric_limits<float>::max()).x == 0x7f80);  // overflow -> Inf
  CHECK(BFloat16(bits_to_float(0x7f7f7fff)).x == 0x7f7f);          // just below the tie stays finite
  CHECK(BFloat16(bits_to_float(0x00000001)).x == 0x0000);          // float subnormal below half a bf16 ulp
  CHECK(BFloat16(bits_to_float(0x00008000)).x == 0x0000);          // tie -> even (0)
  CHECK(BFloat16(bits_to_float(0x00018000)).x == 0x0002);          // tie -> even (2)
  CHECK(BFloat16(std::nanf("")).x == 0x7fc0);
}

TEST_CASE("narrowing conversions of tensors at their boundaries", "[convert]") {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor f = from_vector(std::vector<float>{300.f, -1.f, 1e20f, -1e20f, std::nanf(""), 2.9f, -2.9f, inf});
  // float -> int: saturate to int64 (NaN -> 0), then wrap to the width.
  CHECK(f.to(kInt64).to_vector<int64_t>() ==
        std::vector<int64_t>{300, -1, INT64_MAX, INT64_MIN, 0, 2, -2, INT64_MAX});
  CHECK(f.to(kUInt8).to_vector<uint8_t>() == std::vector<uint8_t>{44, 255, 255, 0, 0, 2, 254, 255});
  CHECK(f.to(kInt8).to_vector<int8_t>() == std::vector<int8_t>{44, -1, -1, 0, 0, 2, -2, -1});
  CHECK(f.to(kBool).to_vector<bool>() == std::vector<bool>{true, true, true, true, true, true, true, true});
  Tensor big = from_vector(std::vector<int64_t>{(1ll << 40) + 5, -129, 128});
  CHECK(big.to(kInt32).to_vector<int32_t>() == std::vector<int32_t>{5, -129, 128});
  CHECK(big.to(kInt8).to_vector<int8_t>() == std::vector<int8_t>{5, 127, -128});
  // double -> float16 / bfloat16 / fp8 at their edges.
  Tensor d = from_vector(std::vector<double>{65504.0, 65520.0, 1e300, 448.0, 500.0, 61440.0, 1e-300});
  const auto h = d.to(kFloat16).to_vector<float>();
  CHECK(h[0] == 65504.f);
  CHECK(std::isinf(h[1]));
  CHECK(std::isinf(h[2]));
  CHECK(h[6] == 0.f);
  const auto e4 = d.to(kFloat8_e4m3fn).to_vector<float>();
  CHECK(e4[3] == 448.f);
  CHECK(e4[4] == 448.f);
  CHECK(e4[2] == 448.f);
  const auto e5 = d.to(kFloat8_e5m2).to_vector<float>();
  CHECK(std::isinf(e5[5]));
  CHECK(e5[3] == 448.f);
  const auto bf = d.to(kBFloat16).to_vector<float>();
  CHECK(std::isinf(bf[2]));
  CHECK(bf[0] == 65536.f);  // 65504 is not a bf16 value: rounds to 2^16
}

TEST_CASE("float16 -> float32 of a tensor gives Half's bits for all 65536 codes, NaN payloads included", "[f16]") {
  // The contiguous widening takes the F16C path where the CPU has it (Note [float16
  // widening]); a strided view takes the element loop. Both must equal Half's decoding.
  std::vector<uint16_t> codes(65536);
  for (uint32_t i = 0; i < 65536; ++i) codes[i] = static_cast<uint16_t>(i);
  Tensor h = empty({65536}, TensorOptions{.dtype = kFloat16});
  std::memcpy(h.data_ptr(), codes.data(), codes.size() * sizeof(uint16_t));
  for (const Tensor& src : {h, h.view({256, 256}).t()}) {
    const Tensor f = src.to(kFloat32).contiguous();
    const Tensor codes_seen = src.contiguous();
    const auto* fp = static_cast<const float*>(f.data_ptr());
    const auto* hp = static_cast<const uint16_t*>(codes_seen.data_ptr());
    for (int64_t i = 0; i < 65536; ++i) {
      const float want = static_cast<float>(Half::from_bits(hp[i]));
      uint32_t a = 0, b = 0;
      std::memcpy(&a, &fp[i], 4);
      std::memcpy(&b, &want, 4);
      INFO("code " << hp[i]);
      REQUIRE(a == b);
    }
  }
}
