// The vector path of add, sub, mul, div, maximum and minimum on float16 and bfloat16
// (kernels/cpu/vec/binary_arith.h): the lanes give the scalar functors' bits on every
// instruction set, over special values and a sweep of the float range; the ops give,
// for every layout (broadcast, strided, scalar operands, in place), the functor's float32
// result rounded once to the dtype.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/kernels/common/functors.h>
#include <mixt/kernels/cpu/vec/binary_arith.h>
#include <mixt/kernels/cpu/vec/isa.h>
#include <mixt/mixt.h>

#include "ulps.h"

using namespace mixt;
using mixt::testing::bits_float;
using mixt::testing::float_bits;
using mixt::cpu::vec::BinaryArith;

namespace {

// Bits with every NaN as one (which NaN an operation returns is the hardware's choice;
// float16 and bfloat16 stores make every NaN the same code anyway).
uint32_t canonical_bits(float f) { return std::isnan(f) ? 0x7fc00000u : float_bits(f); }

// The scalar functor of `op` (kernels/common/functors.h), as the scalar loop runs it.
float scalar_arith(BinaryArith op, float alpha, float a, float b) {
  namespace f = mixt::functors;
  switch (op) {
    case BinaryArith::Add: return f::Add<float>{alpha}(a, b);
    case BinaryArith::Sub: return f::Sub<float>{alpha}(a, b);
    case BinaryArith::Mul: return f::Mul<float>{}(a, b);
    case BinaryArith::Div: return f::Div<float>{}(a, b);
    case BinaryArith::Maximum: return f::Maximum<float>{}(a, b);
    case BinaryArith::Minimum: return f::Minimum<float>{}(a, b);
  }
  return 0.0f;
}

constexpr BinaryArith kOps[] = {BinaryArith::Add, BinaryArith::Sub,     BinaryArith::Mul,
                                BinaryArith::Div, BinaryArith::Maximum, BinaryArith::Minimum};

// Special values and their neighbours: zeros, infinities, NaNs, subnormals, the extremes.
std::vector<float> specials() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v;
  for (float s : {0.0f, inf, std::numeric_limits<float>::quiet_NaN(), bits_float(1), bits_float(0x007fffffu),
                  bits_float(0x00800000u), std::numeric_limits<float>::max(), 1.0f, 0.5f, 3.0f, 1e-20f, 65504.0f,
                  65520.0f, 3.3895314e38f})
    for (float x : {s, -s, std::nextafter(s, inf), std::nextafter(s, -inf)}) v.push_back(x);
  return v;
}

}  // namespace

TEST_CASE("vector arithmetic: the scalar functors' bits on every instruction set") {
  // Every pair of special values, and a sweep of the float range against a shifted copy.
  std::vector<float> a, b;
  const std::vector<float> s = specials();
  for (float x : s)
    for (float y : s) a.push_back(x), b.push_back(y);
  for (uint64_t u = 0; u < 0x7f800000u; u += 65521) {
    a.push_back(bits_float(static_cast<uint32_t>(u)));
    b.push_back(-bits_float(static_cast<uint32_t>((u * 7919) % 0x7f800000u)));
    a.push_back(-bits_float(static_cast<uint32_t>(u)));
    b.push_back(bits_float(static_cast<uint32_t>((u * 104729) % 0x7f800000u)));
  }
  a.resize(a.size() - 3), b.resize(b.size() - 3);  // a tail that is not a whole vector
  std::vector<float> out(a.size());
  int checked = 0;
  for (int i = 0; i < cpu::vec::kIsaCount; ++i) {
    const auto isa = static_cast<cpu::vec::Isa>(i);
    if (!cpu::vec::isa_supported(isa)) continue;
    for (BinaryArith op : kOps)
      for (float alpha : {1.0f, -0.3f, 0.0f}) {
        INFO(cpu::vec::isa_name(isa) << " op " << static_cast<int>(op) << " alpha " << alpha);
        cpu::vec::binary_arith(op, alpha, a.data(), b.data(), out.data(), a.size(), isa);
        size_t bad = 0, first = 0;
        for (size_t k = 0; k < a.size(); ++k)
          if (canonical_bits(out[k]) != canonical_bits(scalar_arith(op, alpha, a[k], b[k])) && bad++ == 0) first = k;
        INFO("first mismatch at a = " << a[first] << ", b = " << b[first] << ": " << out[first] << " vs "
                                      << scalar_arith(op, alpha, a[first], b[first]));
        CHECK(bad == 0);
        ++checked;
      }
  }
  CHECK(checked >= 18);  // at least the portable target
}

TEST_CASE("vector arithmetic: in place, and maximum / minimum keep the scalar tie and NaN rules") {
  std::vector<float> a = {-0.0f, 0.0f, 1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  std::vector<float> b = {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), 1.0f, 2.0f};
  std::vector<float> out(a.size());
  cpu::vec::binary_arith(BinaryArith::Maximum, 1.0f, a.data(), b.data(), out.data(), a.size());
  CHECK(float_bits(out[0]) == float_bits(0.0f));   // ties take b
  CHECK(float_bits(out[1]) == float_bits(-0.0f));
  CHECK(std::isnan(out[2]));
  CHECK(std::isnan(out[3]));
  CHECK(out[4] == 2.0f);
  cpu::vec::binary_arith(BinaryArith::Minimum, 1.0f, a.data(), b.data(), out.data(), a.size());
  CHECK(float_bits(out[0]) == float_bits(0.0f));
  CHECK(std::isnan(out[2]));
  std::vector<float> x = {1.0f, 2.0f, 3.0f};
  cpu::vec::binary_arith(BinaryArith::Sub, 2.0f, x.data(), x.data(), x.data(), x.size());  // x - 2x
  CHECK(x == std::vector<float>{-1.0f, -2.0f, -3.0f});
}

TEST_CASE("add, sub, mul, div, maximum and minimum on float16 and bfloat16: the functor's bits, any layout") {
  // Values with specials mixed in, so the rounding, the NaN and the overflow paths all run.
  std::vector<float> xv, yv;
  const std::vector<float> s = specials();
  const Tensor xr = mul(randn({37, 41}), 300.0), yr = mul(randn({37, 41}), 3.0);
  for (int64_t k = 0; k < 37 * 41; ++k) {
    xv.push_back(k % 5 == 0 ? s[static_cast<size_t>(k) % s.size()] : xr.data_ptr<float>()[k]);
    yv.push_back(k % 7 == 0 ? s[static_cast<size_t>(k * 3) % s.size()] : yr.data_ptr<float>()[k]);
  }
  const Tensor x32 = from_vector(xv, {37, 41}), y32 = from_vector(yv, {37, 41});
  for (ScalarType dt : {kBFloat16, kFloat16}) {
    const Tensor x = x32.to(dt), y = y32.to(dt);
    // The float32 values the kernels see (the dtype's values, exactly).
    const Tensor xf = x.to(kFloat32).contiguous(), yf = y.to(kFloat32).contiguous();
    // The expected bits of op(x[i], y[j]) for the broadcast pattern `pick`, rounded once to dt.
    auto expected = [&](BinaryArith op, float alpha, int64_t rows, int64_t cols, auto pick) {
      std::vector<float> r(static_cast<size_t>(rows * cols));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const auto [a, b] = pick(i, j);
          r[static_cast<size_t>(i * cols + j)] = scalar_arith(op, alpha, a, b);
        }
      return from_vector(r, {rows, cols}).to(dt).to(kFloat32);
    };
    auto bits = [](const Tensor& t) {
      const Tensor f = t.to(kFloat32).contiguous();
      std::vector<uint32_t> v(static_cast<size_t>(f.numel()));
      for (size_t k = 0; k < v.size(); ++k) v[k] = canonical_bits(f.data_ptr<float>()[k]);
      return v;
    };
    const float* px = xf.data_ptr<float>();
    const float* py = yf.data_ptr<float>();
    auto same = [&](int64_t i, int64_t j) { return std::pair{px[i * 41 + j], py[i * 41 + j]}; };
    auto row_bcast = [&](int64_t i, int64_t j) { return std::pair{px[i * 41 + j], py[j]}; };  // y[0] broadcast
    const float alpha_value = 0.3f;
    const float alpha = static_cast<float>(0.3);  // the functor's opmath value of the Scalar 0.3
    for (BinaryArith op : kOps) {
      INFO(dt << " op " << static_cast<int>(op));
      auto run = [&](const Tensor& a, const Tensor& b) -> Tensor {
        switch (op) {
          case BinaryArith::Add: return add(a, b, alpha_value);
          case BinaryArith::Sub: return sub(a, b, alpha_value);
          case BinaryArith::Mul: return mul(a, b);
          case BinaryArith::Div: return div(a, b);
          case BinaryArith::Maximum: return maximum(a, b);
          case BinaryArith::Minimum: return minimum(a, b);
        }
        return Tensor();
      };
      const float al = op == BinaryArith::Add || op == BinaryArith::Sub ? alpha : 1.0f;
      const auto want = bits(expected(op, al, 37, 41, same));
      CHECK(bits(run(x, y)) == want);
      CHECK(bits(run(x.t().contiguous().t(), y)) == want);                // a strided operand
      CHECK(bits(run(x, y.t().contiguous().t())) == want);
      CHECK(bits(run(x, y.select(0, 0).unsqueeze(0))) == bits(expected(op, al, 37, 41, row_bcast)));  // broadcast
      if (op == BinaryArith::Add || op == BinaryArith::Sub || op == BinaryArith::Mul || op == BinaryArith::Div) {
        auto in_place = [&](Tensor& a) {
          if (op == BinaryArith::Add) add_(a, y, alpha_value);
          if (op == BinaryArith::Sub) sub_(a, y, alpha_value);
          if (op == BinaryArith::Mul) mul_(a, y);
          if (op == BinaryArith::Div) div_(a, y);
          return bits(a);
        };
        Tensor dense = x.clone();
        CHECK(in_place(dense) == want);
        Tensor transposed = x.t().contiguous();  // in place through a strided view: the same values
        Tensor view = transposed.t();
        CHECK(in_place(view) == want);
      }
    }
    // A scalar operand is applied in float32 (not first rounded to the dtype), as the functor does.
    const float third = static_cast<float>(1.0 / 3.0);
    auto with_scalar = [&](int64_t i, int64_t j) { return std::pair{px[i * 41 + j], third}; };
    CHECK(bits(mul(x, 1.0 / 3.0)) == bits(expected(BinaryArith::Mul, 1.0f, 37, 41, with_scalar)));
    CHECK(bits(add(x, 1.0 / 3.0)) == bits(expected(BinaryArith::Add, 1.0f, 37, 41, with_scalar)));
    auto scalar_first = [&](int64_t i, int64_t j) { return std::pair{third, px[i * 41 + j]}; };
    CHECK(bits(sub(Scalar(1.0 / 3.0), x)) == bits(expected(BinaryArith::Sub, 1.0f, 37, 41, scalar_first)));
    Tensor scaled = x.clone();
    mul_(scaled, 1.0 / 3.0);
    CHECK(bits(scaled) == bits(expected(BinaryArith::Mul, 1.0f, 37, 41, with_scalar)));
    // Rounded divisions keep the scalar loop: floor(7 / 2) = 3, floor(-7 / 2) = -4.
    const Tensor q = div(from_vector(std::vector<float>{7.0f, -7.0f}).to(dt), 2.0, "floor");
    CHECK(q.to(kFloat32).to_vector<float>() == std::vector<float>{3.0f, -4.0f});
  }
}
