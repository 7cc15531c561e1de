// The dtype table, the promotion grid and result_type (tensor-scalar rules).
#include <catch2/catch.hpp>

#include <mixt/mixt.h>

using namespace mixt;

TEST_CASE("dtype table", "[dtype]") {
  CHECK(kNumDtypes == 11);
  CHECK(dtype_name(kFloat8_e4m3fn) == "float8_e4m3fn");
  CHECK(element_size(kBool) == 1);
  CHECK(element_size(kBFloat16) == 2);
  CHECK(element_size(kInt64) == 8);
  CHECK(element_size(kFloat8_e5m2) == 1);
  CHECK(is_floating(kFloat8_e5m2));
  CHECK_FALSE(is_floating(kInt32));
  CHECK(is_integral(kUInt8));
  CHECK_FALSE(is_integral(kBool));
  CHECK(accumulate_type(kBFloat16) == kFloat32);
  CHECK(accumulate_type(kFloat64) == kFloat64);
  CHECK(accumulate_type(kInt8) == kInt64);
  CHECK(dtype_from_name("bf16") == kBFloat16);
  CHECK(dtype_from_name("float32") == kFloat32);
  CHECK(dtype_from_name("e4m3") == kFloat8_e4m3fn);
  CHECK(dtype_from_name("complex64") == ScalarType::Undefined);
  for (int i = 0; i < kNumDtypes; ++i) {
    const auto t = static_cast<ScalarType>(i);
    CHECK(dtype_from_name(dtype_name(t)) == t);
  }
}

TEST_CASE("promotion grid matches PyTorch's decisions", "[dtype]") {
  struct Case {
    ScalarType a, b, r;
  };
  const Case cases[] = {
      {kBool, kBool, kBool},         {kBool, kUInt8, kUInt8},       {kBool, kFloat16, kFloat16},
      {kUInt8, kInt8, kInt32},  // PyTorch: int16 (absent here)
      {kUInt8, kInt32, kInt32},      {kInt8, kInt64, kInt64},       {kInt32, kInt64, kInt64},
      {kInt64, kFloat16, kFloat16},  {kInt64, kBFloat16, kBFloat16}, {kFloat16, kBFloat16, kFloat32},
      {kFloat16, kFloat32, kFloat32}, {kBFloat16, kFloat64, kFloat64}, {kFloat32, kFloat64, kFloat64},
      {kFloat8_e4m3fn, kFloat8_e4m3fn, kFloat8_e4m3fn}, {kFloat8_e5m2, kFloat8_e5m2, kFloat8_e5m2},
  };
  for (const Case& c : cases) {
    INFO(dtype_name(c.a) << " + " << dtype_name(c.b));
    CHECK(promote_types(c.a, c.b) == c.r);
    CHECK(promote_types(c.b, c.a) == c.r);
  }
  // The grid is symmetric and idempotent everywhere.
  for (int i = 0; i < kNumDtypes; ++i)
    for (int j = 0; j < kNumDtypes; ++j) {
      const auto a = static_cast<ScalarType>(i), b = static_cast<ScalarType>(j);
      CHECK(promote_types_or_undefined(a, b) == promote_types_or_undefined(b, a));
      if (i == j) CHECK(promote_types(a, a) == a);
    }
  // float8 mixes with nothing else.
  CHECK_THROWS_AS(promote_types(kFloat8_e4m3fn, kFloat32), Error);
  CHECK_THROWS_AS(promote_types(kFloat8_e4m3fn, kFloat8_e5m2), Error);
  CHECK_THROWS_AS(promote_types(kBool, kFloat8_e5m2), Error);
  CHECK_THROWS_WITH(promote_types(kFloat8_e4m3fn, kFloat16), Catch::Contains("float8_e4m3fn") &&
                                                               Catch::Contains("float16"));
}

TEST_CASE("result_type: scalars and zero-dim tensors count less", "[dtype]") {
  auto t = [](ScalarType dt) { return zeros({2}, {.dtype = dt}); };
  auto z = [](ScalarType dt) { return zeros({}, {.dtype = dt}); };
  CHECK(result_type({t(kInt32), wrapped_scalar(2.5)}) == kFloat32);
  CHECK(result_type({t(kInt32), wrapped_scalar(2)}) == kInt32);
  CHECK(result_type({t(kUInt8), wrapped_scalar(1000)}) == kUInt8);
  CHECK(result_type({t(kBool), wrapped_scalar(2)}) == kInt64);
  CHECK(result_type({t(kBool), wrapped_scalar(true)}) == kBool);
  CHECK(result_type({t(kFloat16), wrapped_scalar(2.5)}) == kFloat16);
  CHECK(result_type({t(kBFloat16), z(kFloat64)}) == kBFloat16);
  CHECK(result_type({t(kInt64), z(kFloat64)}) == kFloat64);
  CHECK(result_type({t(kInt8), z(kInt64)}) == kInt8);
  CHECK(result_type({z(kInt8), z(kInt64)}) == kInt64);
  CHECK(result_type({z(kInt32), wrapped_scalar(1.5)}) == kFloat32);
  CHECK(result_type({t(kFloat8_e4m3fn), wrapped_scalar(3.0)}) == kFloat8_e4m3fn);
  CHECK(result_type({t(kFloat16), t(kBFloat16)}) == kFloat32);
  CHECK_THROWS_AS(result_type({t(kFloat8_e4m3fn), t(kFloat32)}), Error);
}

TEST_CASE("can_cast refuses float->int and non-bool->bool", "[dtype]") {
  CHECK(can_cast(kInt32, kFloat16));
  CHECK(can_cast(kFloat64, kFloat8_e4m3fn));
  CHECK(can_cast(kBool, kInt8));
  CHECK_FALSE(can_cast(kFloat32, kInt64));
  CHECK_FALSE(can_cast(kInt32, kBool));
}
