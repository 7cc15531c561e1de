// The CUDA slice against the CPU: transfers, casts between the floating dtypes
// (bit for bit), strided and broadcast copies, fill_, add/mul and their errors.
// Own main (no Catch2): exits 77, which meson reports as SKIP, only on a machine
// without a GPU (gpu_skip.h).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <mixt/kernels/common/convert.h>
#include <mixt/mixt.h>
#include <mixt/runtime/dtype_visit.h>

#include "gpu_checks.h"
#include "gpu_skip.h"

using namespace mixt;
using testing::expect;
using testing::expect_error;
using testing::g_checks;
using testing::g_failures;
using testing::group;

namespace {

const Device kGpu = Device::cuda(0);
const ScalarType kFloats[] = {kFloat16, kBFloat16, kFloat32, kFloat64, kFloat8_e4m3fn, kFloat8_e5m2};

// MIXT_TEST_SMALL=1 skips the large cases (for slow runs such as compute-sanitizer).
const bool g_small = std::getenv("MIXT_TEST_SMALL") != nullptr;

// Compares `got` (any device) with the CPU tensor `want`: same shape and dtype, and the
// same bits in every element, except that a NaN only has to be a NaN.
void expect_same(const Tensor& got_any, const Tensor& want_any, const std::string& what) {
  const Tensor got = got_any.cpu().contiguous(), want = want_any.contiguous();
  if (got.dtype() != want.dtype() || got.sizes() != want.sizes()) {
    expect(false, what + ": got " + got.describe() + ", expected " + want.describe());
    return;
  }
  const auto gv = got.to_vector<double>(), wv = want.to_vector<double>();
  const int64_t es = want.element_size();
  const auto* gb = static_cast<const unsigned char*>(got.data_ptr());
  const auto* wb = static_cast<const unsigned char*>(want.data_ptr());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const bool nan = want.is_floating_point() && std::isnan(wv[i]);
    const bool ok = nan ? std::isnan(gv[i]) : std::memcmp(gb + i * es, wb + i * es, es) == 0;
    if (!ok && bad++ == 0) first = i;
  }
  char msg[256] = "";
  if (bad)
    std::snprintf(msg, sizeof msg, ": %lld of %lld elements differ; first at %lld: got %.9g, expected %.9g",
                  static_cast<long long>(bad), static_cast<long long>(want.numel()), static_cast<long long>(first),
                  gv[first], wv[first]);
  expect(bad == 0, what + msg);
}

std::string name(ScalarType t) { return std::string(dtype_name(t)); }

// `n` normal values scaled by 10^k for k cycling through -8..8 (fixed seed).
std::vector<double> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = normal(rng) * std::pow(10.0, static_cast<int>(i % 17) - 8);
  return v;
}

// Values at every rounding and overflow boundary of the narrow formats, plus random ones.
std::vector<double> boundary_values() {
  std::vector<double> v;
  for (int code = 0; code < 256; ++code) {  // every fp8 value (NaNs included)
    v.push_back(static_cast<float>(Float8_e4m3fn::from_bits(static_cast<uint8_t>(code))));
    v.push_back(static_cast<float>(Float8_e5m2::from_bits(static_cast<uint8_t>(code))));
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double specials[] = {
      0.0, 1.0, 1.0 / 3.0, 447.0, 448.0, 449.0, 455.9, 456.0, 456.1, 463.9, 464.0, 464.1, 470.0, 479.9, 480.0,
      480.1, 500.0, 1e4, 49152.0, 53248.0, 57343.0, 57344.0, 57345.0, 59392.0, 61439.0, 61440.0, 61441.0, 65504.0,
      65519.0, 65519.99, 65520.0, 65536.0, 1e6, 3.3895313892515355e38, 3.4e38, 1e300, inf,
      std::numeric_limits<double>::quiet_NaN(),
      std::ldexp(1.0, -6), std::ldexp(1.0, -7), std::ldexp(1.0, -9), std::ldexp(1.0, -10), std::ldexp(3.0, -11),
      std::ldexp(1.0, -14), std::ldexp(1.0, -16), std::ldexp(1.0, -17), std::ldexp(3.0, -18), std::ldexp(1.0, -24),
      std::ldexp(1.0, -25), std::ldexp(3.0, -26), std::ldexp(1.0, -126), std::ldexp(1.0, -133), std::ldexp(1.0, -134),
      std::ldexp(3.0, -136), 1e-40, 1e-45, 1e-320, 1.0 + std::ldexp(1.0, -8), 1.0 + std::ldexp(1.0, -9),
      1.0 + std::ldexp(3.0, -10), 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), 1.0000000596046448,
  };
  for (double s : specials) {
    v.push_back(s);
    v.push_back(-s);
  }
  const auto r = random_values(2000, 7);
  v.insert(v.end(), r.begin(), r.end());
  return v;
}

// A CPU 0-dim tensor (not a wrapped number) holding `value` in `dtype`.
Tensor zero_dim(double value, ScalarType dtype) {
  TensorOptions o;
  o.dtype = dtype;
  return scalar_tensor(value, o);
}

// A CPU tensor of `values` in `dtype`, shaped `sizes` (converted on the CPU).
Tensor host(const std::vector<double>& values, ScalarType dtype, const Shape& sizes = {}) {
  return from_vector(values, sizes).to(dtype);
}

void test_round_trips() {
  const auto vals = random_values(4099, 1);
  std::vector<double> ints(vals.size());
  for (size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<double>(static_cast<int64_t>(i * 37 % 251) - 125);
  for (int k = 0; k < kNumDtypes; ++k) {
    const auto dt = static_cast<ScalarType>(k);
    const Tensor x = host(is_floating(dt) ? vals : ints, dt);
    const Tensor d = x.to(kGpu);
    expect(d.is_cuda() && d.dtype() == dt, "to(cuda) gives a CUDA tensor of " + name(dt));
    expect_same(d, x, "round trip cpu->cuda->cpu of " + name(dt));
    expect_same(d.clone(), x, "clone on cuda of " + name(dt));
    expect_same(d.to(Device::cuda(0)).cpu(), x, "to(same device) of " + name(dt));
    expect_same(host({}, dt).to(kGpu), host({}, dt), "empty round trip of " + name(dt));
    const Tensor z = zero_dim(3.0, dt);
    expect_same(z.to(kGpu), z, "0-dim round trip of " + name(dt));
  }
}

void test_casts() {
  const auto vals = boundary_values();
  const Tensor f64 = from_vector(vals);
  for (ScalarType s : kFloats) {
    const Tensor xs = f64.to(s);  // CPU rounding of the boundary values into s
    const Tensor xd = xs.to(kGpu);
    for (ScalarType d : kFloats) {
      const Tensor want = xs.to(d);
      const std::string pair = name(s) + " -> " + name(d);
      expect_same(xd.to(d), want, "device cast " + pair);
      expect_same(xs.to(kGpu, d), want, "upload with cast " + pair);
      expect_same(xd.to(Device::cpu(), d), want, "download with cast " + pair);
    }
  }
  // Integer <-> float across devices converts on the host side.
  const Tensor i32 = host({-3, 0, 7, 1000, 123456}, kInt32);
  expect_same(i32.to(kGpu, kFloat16), i32.to(kFloat16), "upload int32 -> float16");
  expect_same(i32.to(kGpu).to(Device::cpu(), kFloat64), i32.to(kFloat64), "download int32 -> float64");
  const Tensor f = host({-2.5, 0.0, 3.75, 1e10, -1e10}, kFloat32);
  expect_same(f.to(kGpu, kInt64), f.to(kInt64), "upload float32 -> int64");
  expect_same(f.to(kGpu).to(Device::cpu(), kUInt8), f.to(kUInt8), "download float32 -> uint8");
  expect_same(f.to(kGpu, kBool), f.to(kBool), "upload float32 -> bool");
}

void test_strided_copies() {
  const auto vals = random_values(37 * 53, 2);
  const Tensor a = host(vals, kFloat32, {37, 53});
  const Tensor d = a.to(kGpu);
  expect_same(d.t().contiguous(), a.t().contiguous(), "transpose made contiguous on the device");
  expect_same(d.t(), a.t(), "download of a transposed view");
  expect_same(d.slice(1, 1, 50, 3), a.slice(1, 1, 50, 3), "download of a stepped slice");
  expect_same(d.t().to(kFloat16), a.t().to(kFloat16), "cast of a transposed view");
  expect_same(d.slice(0, 2, 30, 2).to(kFloat8_e4m3fn), a.slice(0, 2, 30, 2).to(kFloat8_e4m3fn),
              "cast of a stepped slice to e4m3fn");
  // Into non-contiguous destinations, on both sides.
  Tensor dst = host(std::vector<double>(53 * 37, 0.0), kFloat32, {53, 37}).to(kGpu);
  Tensor dst_t = dst.t();
  dst_t.copy_(d);
  expect_same(dst, a.t().contiguous(), "device copy into a transposed destination");
  Tensor hdst = host(std::vector<double>(53 * 37, 0.0), kBFloat16, {53, 37});
  Tensor hdst_t = hdst.t();
  hdst_t.copy_(d);
  expect_same(hdst, a.t().to(kBFloat16).contiguous(), "download with cast into a transposed host tensor");
  Tensor ddst = host(std::vector<double>(53 * 37, 0.0), kFloat16, {53, 37}).to(kGpu);
  Tensor ddst_t = ddst.t();
  ddst_t.copy_(a);
  expect_same(ddst, a.t().to(kFloat16).contiguous(), "upload with cast into a transposed device tensor");
  // Broadcasting sources.
  const Tensor col = host({1, 2, 3, 4, 5}, kFloat64, {5, 1});
  Tensor b3 = host(std::vector<double>(4 * 5 * 6, 0.0), kFloat32, {4, 5, 6}).to(kGpu);
  b3.copy_(col);
  Tensor b3_host = host(std::vector<double>(4 * 5 * 6, 0.0), kFloat32, {4, 5, 6});
  b3_host.copy_(col);
  expect_same(b3, b3_host, "upload with broadcast and cast");
  b3.copy_(col.to(kGpu).to(kBFloat16));
  b3_host.copy_(col.to(kBFloat16));
  expect_same(b3, b3_host, "device copy with broadcast and cast");
  Tensor h3 = host(std::vector<double>(4 * 5 * 6, 0.0), kFloat16, {4, 5, 6});
  h3.copy_(col.to(kGpu));
  Tensor h3_want = host(std::vector<double>(4 * 5 * 6, 0.0), kFloat16, {4, 5, 6});
  h3_want.copy_(col);
  expect_same(h3, h3_want, "download with broadcast and cast");
  // A 3-D permutation of an integer tensor (raw moves) and int64 strides.
  std::vector<double> iv(2 * 3 * 4);
  for (size_t i = 0; i < iv.size(); ++i) iv[i] = static_cast<double>(i) * 1e9;
  const Tensor i64 = host(iv, kInt64, {2, 3, 4});
  expect_same(i64.to(kGpu).permute({2, 0, 1}).contiguous(), i64.permute({2, 0, 1}).contiguous(),
              "permuted int64 copy on the device");
  // Overlapping copy within one storage: the source is read before it is overwritten.
  Tensor sq = host(random_values(64, 3), kFloat32, {8, 8});
  Tensor sq_d = sq.to(kGpu);
  Tensor sq_dt = sq_d;
  sq_dt.copy_(sq_d.t());
  expect_same(sq_d, sq.t().contiguous(), "copy of a tensor's own transpose");
  // cat and stack use copy_ on the device.
  expect_same(cat({d, d.slice(0, 0, 5)}, 0), cat({a, a.slice(0, 0, 5)}, 0), "cat on the device");
  expect_same(stack({d.t(), d.t()}, 1), stack({a.t(), a.t()}, 1), "stack on the device");
  if (g_small) return;
  // A large copy exercises the grid-stride loops
  // (more elements than one grid of 65535 blocks of 256 threads covers).
  const int64_t big = (int64_t{1} << 24) + 3;
  std::vector<double> lv(static_cast<size_t>(big));
  for (int64_t i = 0; i < big; ++i) lv[static_cast<size_t>(i)] = static_cast<double>(i % 4093) * 0.173 - 300.0;
  const Tensor large = host(lv, kFloat32);
  expect_same(large.to(kGpu).to(kBFloat16), large.to(kBFloat16), "large cast");
  expect_same(large.to(kGpu).view({-1, 1}).expand({big, 2}).to(kFloat8_e5m2),
              large.view({-1, 1}).expand({big, 2}).to(kFloat8_e5m2), "large broadcast cast");
}

// The expected bits of filling dtype T with `value`, computed on the host.
template <class T>
Tensor expected_fill(const Shape& sizes, double value) {
  const T v = convert<T>(value);
  std::vector<T> out(static_cast<size_t>(sizes.numel()), v);
  return from_vector(out, sizes);
}

void test_fill() {
  const double values[] = {0.0, -0.0, 1.0, -2.5, 3.0e5, 1e-3};
  for (int k = 0; k < kNumDtypes; ++k) {
    const auto dt = static_cast<ScalarType>(k);
    for (double v : values) {
      if (!is_floating(dt) && (v != std::trunc(v) || std::fabs(v) > 100)) continue;
      Tensor t = host(std::vector<double>(1000, 7.0), dt, {10, 100}).to(kGpu);
      t.fill_(v);
      Tensor want = visit_dtype(dt, "test", [&](auto tag) { return expected_fill<typename decltype(tag)::type>(
                                                                     {10, 100}, v); });
      expect_same(t, want, "fill_ " + name(dt) + " with " + std::to_string(v));
    }
  }
  // A strided fill leaves the other elements alone.
  Tensor t = host(std::vector<double>(60, 1.0), kFloat16, {6, 10});
  Tensor d = t.to(kGpu);
  Tensor part = d.t().slice(0, 1, 9, 2);
  part.fill_(-4.0);
  Tensor t_part = t.t().slice(0, 1, 9, 2);
  t_part.copy_(host({-4.0}, kFloat16, Shape{}));
  expect_same(d, t, "strided fill_");
  d.zero_();
  expect_same(d, host(std::vector<double>(60, 0.0), kFloat16, {6, 10}), "zero_");
  // A fill value out of the integer type's range is refused on both devices (as the CPU
  // and PyTorch do: "value cannot be converted ... without overflow"), and changes nothing.
  Tensor i8 = host({1, 2}, kInt8);
  Tensor i8_d = i8.to(kGpu);
  expect_error("fill_ of int8 with 300 on the device", [&] { i8_d.fill_(300); });
  expect_error("fill_ of int8 with 300 on the CPU", [&] { i8.fill_(300); });
  expect_same(i8_d, from_vector(std::vector<int8_t>{1, 2}), "a refused fill_ leaves the tensor alone");
  i8_d.fill_(-128);
  expect_same(i8_d, from_vector(std::vector<int8_t>{-128, -128}), "fill_ of int8 with its minimum");
  // Factories on the device.
  TensorOptions on_gpu;
  on_gpu.device = kGpu;
  TensorOptions on_cpu;
  for (ScalarType dt : {kFloat16, kFloat8_e4m3fn, kInt32, kBool}) {
    on_gpu.dtype = on_cpu.dtype = dt;
    expect_same(full({3, 4}, 2.5, on_gpu), full({3, 4}, 2.5, on_cpu), "full on the device, " + name(dt));
    expect_same(zeros({5}, on_gpu), zeros({5}, on_cpu), "zeros on the device, " + name(dt));
    expect_same(ones({2, 0}, on_gpu), ones({2, 0}, on_cpu), "empty ones on the device, " + name(dt));
    const Tensor e = empty({7}, on_gpu);
    expect(e.is_cuda() && e.dtype() == dt && e.sizes() == Shape{7}, "empty on the device, " + name(dt));
  }
  Tensor expanded = host({1.0}, kFloat32).to(kGpu).expand({4});
  expect_error("fill_ of an expanded tensor", [&] { expanded.fill_(1.0); });
}

// `a op b` on the device vs the same on the CPU (inputs copied to the CPU).
void check_binary(const std::string& what, const Tensor& a, const Tensor& b,
                  const std::function<Tensor(const Tensor&, const Tensor&)>& op) {
  const Tensor got = op(a, b);
  expect(got.is_cuda(), what + ": result on the device");
  const Tensor ha = a.is_cuda() ? a.cpu() : a, hb = b.is_cuda() ? b.cpu() : b;
  expect_same(got, op(ha, hb), what);
}

// `a op b` for same-dtype operands against a host loop in opmath (independent of the CPU kernels).
template <class T>
void check_against_loop(const std::string& what, const Tensor& got, const Tensor& a, const Tensor& b, double alpha,
                        bool is_add) {
  using M = opmath_t<T>;
  const auto av = a.to_vector<T>(), bv = b.to_vector<T>();
  std::vector<T> want(av.size());
  for (size_t i = 0; i < av.size(); ++i) {
    const M x = static_cast<M>(av[i]), y = static_cast<M>(bv[i]);
    volatile M prod = static_cast<M>(alpha) * y;  // two roundings, as the kernels do
    want[i] = convert<T>(is_add ? static_cast<M>(x + prod) : static_cast<M>(x * y));
  }
  expect_same(got, from_vector(want, a.sizes()), what + " (host loop)");
}

void test_binary() {
  const auto va = random_values(3 * 4 * 5, 11), vb = random_values(3 * 4 * 5, 12);
  for (ScalarType dt : kFloats) {
    const Tensor a = host(va, dt, {3, 4, 5}), b = host(vb, dt, {3, 4, 5});
    const Tensor da = a.to(kGpu), db = b.to(kGpu);
    const std::string n = name(dt);
    check_binary("add " + n, da, db, [](const Tensor& x, const Tensor& y) { return add(x, y); });
    check_binary("add alpha=0.3 " + n, da, db, [](const Tensor& x, const Tensor& y) { return add(x, y, 0.3); });
    check_binary("mul " + n, da, db, [](const Tensor& x, const Tensor& y) { return mul(x, y); });
    visit_dtype<dtypes::kFloating>(dt, "test", [&](auto tag) {
      using T = typename decltype(tag)::type;
      check_against_loop<T>("add alpha=0.3 " + n, add(da, db, 0.3), a, b, 0.3, true);
      check_against_loop<T>("mul " + n, mul(da, db), a, b, 1.0, false);
    });
    check_binary("mul by 0.5 " + n, da, db, [](const Tensor& x, const Tensor&) { return x * 0.5; });
    check_binary("add 2 (int scalar) alpha=1.7 " + n, da, db,
                 [](const Tensor& x, const Tensor&) { return add(x, 2, 1.7); });
    check_binary("0.1 * t " + n, da, db, [](const Tensor& x, const Tensor&) { return 0.1 * x; });
    check_binary("broadcast [3,4,5] * [4,1] " + n, da, db.select(2, 0).slice(0, 0, 1).t().expand({4, 1}),
                 [](const Tensor& x, const Tensor& y) { return mul(x, y); });
    check_binary("transposed operands " + n, da.permute({2, 1, 0}), db.permute({2, 1, 0}),
                 [](const Tensor& x, const Tensor& y) { return add(x, y, -1.25); });
    check_binary("cuda 0-dim operand " + n, da, db.select(0, 1).select(0, 2).select(0, 3),
                 [](const Tensor& x, const Tensor& y) { return mul(y, x); });
  }
  // Mixed dtypes promote (the narrower input is cast on the device).
  const Tensor h = host(va, kFloat16, {3, 4, 5}), f = host(vb, kFloat32, {3, 4, 5});
  const Tensor bf = host(vb, kBFloat16, {3, 4, 5}), f64 = host(va, kFloat64, {3, 4, 5});
  check_binary("float16 + float32", h.to(kGpu), f.to(kGpu), [](const Tensor& x, const Tensor& y) { return x + y; });
  check_binary("bfloat16 * float16", bf.to(kGpu), h.to(kGpu), [](const Tensor& x, const Tensor& y) { return x * y; });
  check_binary("float64 + float32", f64.to(kGpu), f.to(kGpu), [](const Tensor& x, const Tensor& y) { return x + y; });
  // CPU 0-dim tensors act as scalars on CUDA (values exact in the compute dtype: the CPU rounds them to it).
  check_binary("float16 * cpu 0-dim float32", h.to(kGpu), zero_dim(1.75, kFloat32),
               [](const Tensor& x, const Tensor& y) { return x * y; });
  check_binary("cpu 0-dim float64 + bfloat16", zero_dim(-3.25, kFloat64), bf.to(kGpu),
               [](const Tensor& x, const Tensor& y) { return add(x, y, 2); });
  expect(mul(h.to(kGpu), f.to(kGpu)).dtype() == kFloat32, "float16 * float32 gives float32");
  // In-place forms.
  {
    Tensor x = h.to(kGpu), y = h.clone();
    x.add_(f.to(kGpu), 0.5);  // computed in float32, stored as float16
    y.add_(f, 0.5);
    expect_same(x, y, "float16.add_(float32, alpha)");
    x.mul_(0.25);
    y.mul_(0.25);
    expect_same(x, y, "mul_ by a scalar");
    Tensor xt = x.transpose(0, 2), yt = y.transpose(0, 2);
    xt.mul_(h.transpose(0, 2).to(kGpu));
    yt.mul_(h.transpose(0, 2));
    expect_same(x, y, "mul_ into a transposed view");
    x.add_(x);
    y.add_(y);
    expect_same(x, y, "add_ of itself");
    Tensor sq = host(random_values(49, 5), kFloat32, {7, 7});
    Tensor sq_d = sq.to(kGpu);
    sq_d.add_(sq_d.t());
    sq.add_(sq.t());
    expect_same(sq_d, sq, "add_ of its own transpose");
    const uint32_t v0 = sq_d.version();
    sq_d.mul_(2);
    expect(sq_d.version() > v0, "mul_ bumps the version");
  }
  if (g_small) return;
  // Large operands exercise the grid-stride loops.
  const int64_t big = (int64_t{1} << 24) + 5;
  std::vector<double> lv(static_cast<size_t>(big));
  for (int64_t i = 0; i < big; ++i) lv[static_cast<size_t>(i)] = static_cast<double>(i % 1000) * 0.37;
  const Tensor la = host(lv, kFloat32);
  check_binary("large add", la.to(kGpu), la.to(kGpu), [](const Tensor& x, const Tensor& y) { return add(x, y, 0.3); });
  check_binary("large broadcast mul", la.to(kGpu).view({-1, 1}).expand({big, 2}), host({0.5, 3.0}, kFloat32).to(kGpu),
               [](const Tensor& x, const Tensor& y) { return x * y; });
}

// Float8 ops run the float32 kernels on widened operands (Note [Float8 elementwise through
// float32]): every family, in place, into a strided view, with scalars the kernel rounds
// to float8 first, against the CPU's float8 kernels, over every float8 value.
void test_float8_elementwise() {
  for (ScalarType dt : {kFloat8_e4m3fn, kFloat8_e5m2}) {
    const std::string n = name(dt);
    std::vector<double> va, vb;
    for (int code = 0; code < 256; ++code) {
      const double x = dt == kFloat8_e4m3fn ? static_cast<float>(Float8_e4m3fn::from_bits(static_cast<uint8_t>(code)))
                                            : static_cast<float>(Float8_e5m2::from_bits(static_cast<uint8_t>(code)));
      va.push_back(x);
      vb.push_back(code % 7 == 0 ? 0.3 : -0.75 * (code % 5));
    }
    const Tensor a = host(va, dt, {16, 16}), b = host(vb, dt, {16, 16});
    const Tensor da = a.to(kGpu), db = b.to(kGpu);
    const auto same = [&](const std::string& what, const Tensor& got, const Tensor& want) {
      expect_same(got, want, what + " " + n);
    };
    same("exp", exp(da), exp(a));
    same("sigmoid", sigmoid(da), sigmoid(a));
    same("relu", relu(da), relu(a));
    same("clamp(-1.3, 2.2)", clamp(da, -1.3, 2.2), clamp(a, -1.3, 2.2));
    same("isnan (bool)", isnan(da), isnan(a));
    same("div", div(da, db), div(a, b));
    same("pow 2 (scalar)", pow(da, 2), pow(a, 2));
    same("maximum, broadcast row", maximum(da, db.select(0, 3)), maximum(a, b.select(0, 3)));
    same("add 0.3 alpha 1.7", add(da, 0.3, 1.7), add(a, 0.3, 1.7));
    // 0.3 is first rounded to float8 (0.3125 in e4m3fn): x == 0.3 holds there.
    same("eq 0.3 (scalar rounded first)", eq(da, 0.3), eq(a, 0.3));
    same("eq 0.3 of b", eq(db, 0.3), eq(b, 0.3));
    same("lt 0-dim float8 tensor", lt(da, zero_dim(0.3, dt)), lt(a, zero_dim(0.3, dt)));
    same("where", where(gt(da, db), da, db), where(gt(a, b), a, b));
    same("lerp 0.25", lerp(da, db, 0.25), lerp(a, b, 0.25));
    same("addcmul 0.5", addcmul(da, db, da, 0.5), addcmul(a, b, a, 0.5));
    Tensor x = a.clone(), dx = da.clone();
    exp_(dx);
    exp_(x);
    same("exp_ in place", dx, x);
    Tensor y = a.clone(), dy = da.clone();
    Tensor yt = y.t(), dyt = dy.t();
    dyt.mul_(db);
    yt.mul_(b);
    same("mul_ into a transposed view", dy, y);
  }
}

void test_errors() {
  const Tensor c = host({1, 2, 3}, kFloat32), g = c.to(kGpu);
  expect_error("add of a CPU and a CUDA tensor", [&] { add(c, g); });
  expect_error("mul of a CUDA and a CPU tensor", [&] { mul(g, c); });
  expect_error("add of float8 and float16 (no promotion)", [&] { add(g.to(kFloat8_e4m3fn), g.to(kFloat16)); });
  const Tensor gi = host({1, 2, 3}, kInt64).to(kGpu);
  // Integer arithmetic and casts to and from integers run on the device now: the CPU's values.
  expect_same(add(gi, gi).to(Device::cpu()), add(gi.to(Device::cpu()), gi.to(Device::cpu())), "int64 add on CUDA");
  const Tensor i32 = host({1, -2, 3}, kInt32);
  expect_same(i32.to(kGpu).to(kFloat32).to(Device::cpu()), i32.to(kFloat32), "int32 -> float32 cast on the device");
  const Tensor f = host({1.7, -2.2, 3.5}, kFloat32);
  expect_same(f.to(kGpu).to(kInt32).to(Device::cpu()), f.to(kInt32), "float32 -> int32 cast on the device");
  expect_error("add with shapes that do not broadcast", [&] { add(g, host({1, 2}, kFloat32).to(kGpu)); });
  Tensor g2 = g;
  expect_error("in-place add_ with a result type that cannot be stored", [&] {
    Tensor i = gi;
    i.add_(g);
  });
  expect_error("add with a bool alpha", [&] { add(g, g, true); });
  expect_error("copy_ with shapes that do not broadcast", [&] { g2.copy_(host({1, 2}, kFloat32)); });
  Tensor expanded = g.slice(0, 0, 1).expand({3});
  expect_error("copy_ into an expanded tensor", [&] { expanded.copy_(c); });
  expect_error("tensor on a device that does not exist", [&] { c.to(Device::cuda(cuda::device_count())); });
}

}  // namespace

int main() {
  std::printf("cuda::is_compiled() = %d\n", cuda::is_compiled() ? 1 : 0);
  if (const int status = testing::cuda_unavailable_status("test_cuda_slice"); status >= 0) return status;
  std::printf("CUDA devices: %d\n", cuda::device_count());
  group("round trips of every dtype", test_round_trips);
  group("casts between floating dtypes (bit exact)", test_casts);
  group("strided, broadcast and large copies", test_strided_copies);
  group("fill_ and factories", test_fill);
  group("add / mul", test_binary);
  group("float8 elementwise through float32", test_float8_elementwise);
  group("errors", test_errors);
  group("synchronize", [] { cuda::synchronize(); });
  std::printf("test_cuda_slice: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
