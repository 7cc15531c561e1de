// The GEMM engine on a real GPU: mm, bmm, addmm, baddbmm and linear for float32 (also under
// TF32), float64, float16 and bfloat16 (and float32 results from the narrow floats) with
// every operand layout (row-major, transposed, offset and strided views, broadcast batches),
// the bias/ReLU/GELU epilogues and GELU's aux output, linear_backward's BGRADB bias gradient, scaled_mm for every
// float8 pair, result dtype, scale mode, bias and fast-accumulation flag, all against the CPU reference; the refused
// float8 shapes; autotuning, the tuning file round trip, the plan cache's counters, determinism and threads. The key,
// hash and file parser are tested on the host (tests/cpu/test_gemm_plan.cpp). Own main (no Catch2): exits 77 (SKIP)
// only on a machine without a GPU (gpu_skip.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#if defined(MIXT_CUDA_EMULATED)
#include <mixt/kernels/cuda/emulated/cublaslt_state.h>
#endif
#include <mixt/kernels/cuda/gemm/engine.h>
#include <mixt/kernels/cuda/gemm/matmul.h>
#include <mixt/mixt.h>

#include "gpu_checks.h"
#include "gpu_skip.h"

using namespace mixt;
using namespace mixt::testing;
namespace F = mixt::nn::functional;
namespace eng = mixt::cuda::gemm;

namespace {

const Device kGpu = Device::cuda(0);

Tensor values(const Shape& s, uint64_t seed, ScalarType dt = kFloat32, double lo = -1, double hi = 1) {
  Generator g(seed);
  return add(mul(rand(s, {}, &g), hi - lo), lo).to(dt);
}

// max |x - ref| / max(max |ref|, 1e-30), both read as double on the host.
double rel_error(const Tensor& x, const Tensor& ref) {
  const std::vector<double> a = x.to(Device::cpu()).to_vector<double>(), b = ref.to(Device::cpu()).to_vector<double>();
  if (a.size() != b.size()) return INFINITY;
  double num = 0, den = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) != std::isnan(b[i])) return INFINITY;
    if (std::isnan(a[i])) continue;
    num = std::max(num, std::abs(a[i] - b[i]));
    den = std::max(den, std::abs(b[i]));
  }
  return num / den;
}

// The tolerance of a GEMM of `dt` results (float32 accumulation differs from the CPU's only in order).
double tolerance(ScalarType dt, bool tf32 = false) {
  if (tf32) return 5e-3;
  switch (dt) {
    case ScalarType::Float64: return 1e-12;
    case ScalarType::Float32: return 2e-5;
    case ScalarType::Float16: return 2e-3;
    case ScalarType::BFloat16: return 1.6e-2;
    default: return 0.13;  // float8 results: 2^-3 relative spacing (e4m3), one rounding
  }
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  const double e = rel_error(got, want);
  expect(got.sizes() == want.sizes() && got.dtype() == want.dtype() && e <= tol,
         what + ": relative error " + std::to_string(e) + " > " + std::to_string(tol) + " (" + got.describe() + " vs " +
             want.describe() + ")");
}

std::string name(ScalarType t) { return std::string(dtype_name(t)); }

void products_group() {
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    const double tol = tolerance(dt);
    const Tensor a = values({33, 70}, 1, dt), b = values({70, 45}, 2, dt);
    const Tensor ga = a.to(kGpu), gb = b.to(kGpu);
    const std::string n = name(dt);
    expect_close(mm(ga, gb), mm(a, b), tol, "mm " + n);
    expect_close(mm(ga.t().contiguous().t(), gb), mm(a, b), tol, "mm column-major a " + n);
    expect_close(mm(ga, gb.t().contiguous().t()), mm(a, b), tol, "mm column-major b " + n);
    expect_close(mm(gb.t(), ga.t()), mm(b.t(), a.t()), tol, "mm transposed views " + n);
    // An offset view (unaligned start) and a strided one (copied).
    const Tensor wide = values({33, 72}, 3, dt);
    const Tensor off = narrow(wide, 1, 1, 70), goff = narrow(wide.to(kGpu), 1, 1, 70);
    expect_close(mm(goff, gb), mm(off, b), tol, "mm offset view " + n);
    const Tensor strided = slice(values({66, 70}, 4, dt), 0, 0, 66, 2);
    expect_close(mm(strided.to(kGpu).t().t(), gb), mm(strided, b), tol, "mm contiguous copy of a strided view " + n);
    expect_close(mm(slice(values({66, 70}, 4, dt).to(kGpu), 0, 0, 66, 2), gb), mm(strided, b), tol,
                 "mm strided rows " + n);
    // Skinny and single-row shapes.
    const Tensor row = values({1, 70}, 5, dt);
    expect_close(mm(row.to(kGpu), gb), mm(row, b), tol, "mm M = 1 " + n);
    const Tensor a3 = values({4, 17, 24}, 6, dt), b3 = values({4, 24, 9}, 7, dt);
    expect_close(bmm(a3.to(kGpu), b3.to(kGpu)), bmm(a3, b3), tol, "bmm " + n);
    expect_close(bmm(a3.to(kGpu).transpose(1, 2).contiguous().transpose(1, 2), b3.to(kGpu)), bmm(a3, b3), tol,
                 "bmm column-major a " + n);
    const Tensor b1 = values({1, 24, 9}, 8, dt);
    expect_close(bmm(a3.to(kGpu), b1.to(kGpu).expand({4, 24, 9})), bmm(a3, b1.expand({4, 24, 9})), tol,
                 "bmm broadcast b " + n);
    const Tensor bias = values({45}, 9, dt), bias2 = values({33, 45}, 10, dt);
    expect_close(addmm(bias.to(kGpu), ga, gb), addmm(bias, a, b), tol, "addmm bias epilogue " + n);
    expect_close(addmm(bias.to(kGpu), ga, gb, 0.5, 2), addmm(bias, a, b, 0.5, 2), tol, "addmm beta 0.5 alpha 2 " + n);
    expect_close(addmm(bias2.to(kGpu), ga, gb, 1, -1), addmm(bias2, a, b, 1, -1), tol, "addmm 2-D bias " + n);
    expect_close(addmm(bias.to(kGpu), ga, gb, 0), addmm(bias, a, b, 0), tol, "addmm beta 0 " + n);
    const Tensor bb = values({4, 17, 9}, 11, dt);
    expect_close(baddbmm(bb.to(kGpu), a3.to(kGpu), b3.to(kGpu), 2, 0.5), baddbmm(bb, a3, b3, 2, 0.5), tol,
                 "baddbmm " + n);
    const Tensor x = values({2, 5, 70}, 12, dt), w = values({45, 70}, 13, dt);
    expect_close(F::linear(x.to(kGpu), w.to(kGpu)), F::linear(x, w), tol, "linear " + n);
    expect_close(F::linear(x.to(kGpu), w.to(kGpu), bias.to(kGpu)), F::linear(x, w, bias), tol, "linear bias " + n);
    // k = 0: the bias (times beta) or zeros.
    const Tensor e0 = values({33, 0}, 14, dt), e1 = values({0, 45}, 15, dt);
    expect_close(addmm(bias.to(kGpu), e0.to(kGpu), e1.to(kGpu), 3), addmm(bias, e0, e1, 3), tol, "addmm k = 0 " + n);
    expect_close(mm(e0.to(kGpu), e1.to(kGpu)), mm(e0, e1), tol, "mm k = 0 " + n);
    // out_dtype float32 from the narrow floats (autocast's lower_f32_out).
    if (dt == kFloat16 || dt == kBFloat16) {
      expect_close(mm(ga, gb, kFloat32), mm(a, b, kFloat32), tolerance(kFloat32) * 4, "mm out float32 " + n);
      expect_close(bmm(a3.to(kGpu), b3.to(kGpu), kFloat32), bmm(a3, b3, kFloat32), tolerance(kFloat32) * 4,
                   "bmm out float32 " + n);
      expect_close(F::linear(x.to(kGpu), w.to(kGpu), bias.to(kGpu), kFloat32), F::linear(x, w, bias, kFloat32),
                   tolerance(kFloat32) * 4, "linear out float32 " + n);
    }
  }
  // Integers and float8 are refused with the op's name.
  bool refused = false;
  try {
    (void)mm(ones({4, 4}, {.dtype = kInt32}).to(kGpu), ones({4, 4}, {.dtype = kInt32}).to(kGpu));
  } catch (const Error& e) {
    refused = std::string(e.what()).find("mm") != std::string::npos;
  }
  expect(refused, "mm of int32 on CUDA raises mixt::Error naming mm");
}

void tf32_group() {
  const Tensor a = values({256, 512}, 20), b = values({512, 128}, 21);
  const Tensor exact = mm(a.to(kFloat64), b.to(kFloat64));
  set_float32_matmul_precision(Float32MatmulPrecision::High);
  const Tensor fast = mm(a.to(kGpu), b.to(kGpu));
  set_float32_matmul_precision(Float32MatmulPrecision::Highest);
  const Tensor full_precision = mm(a.to(kGpu), b.to(kGpu));
  expect_close(fast.to(kFloat64), exact, tolerance(kFloat32, true), "TF32 mm within TF32's error");
  expect_close(full_precision.to(kFloat64), exact, tolerance(kFloat32), "float32 mm within float32's error");
  expect(rel_error(fast, full_precision) > 0, "TF32 changes the result (the knob reaches cuBLASLt)");
}

// Host tanh-GELU and ReLU of a CPU tensor.
Tensor host_act(const Tensor& t, eng::Activation act) {
  if (act == eng::Activation::Relu) return relu(t);
  if (act == eng::Activation::Gelu) return F::gelu(t, "tanh");
  return t;
}

void epilogue_group() {
  for (ScalarType dt : {kFloat32, kFloat16, kBFloat16}) {
    const Tensor x = values({3, 16, 64}, 30, dt), w = values({40, 64}, 31, dt), bias = values({40}, 32, dt);
    const Tensor ref = F::linear(x.to(kFloat32), w.to(kFloat32), bias.to(kFloat32));
    // cuBLASLt may evaluate GELU's tanh with a fast approximation: 2e-3 relative at most.
    auto tol = [&](eng::Activation act) { return std::max(tolerance(dt) * 2, act == eng::Activation::Gelu ? 2e-3 : 0.0); };
    for (eng::Activation act : {eng::Activation::None, eng::Activation::Relu, eng::Activation::Gelu}) {
      const Tensor want = host_act(ref, act).to(dt);
      const Tensor got = eng::linear_epilogue(x.to(kGpu), w.to(kGpu), bias.to(kGpu), act);
      expect_close(got, want, tol(act), "linear epilogue " + name(dt) + " act " + std::to_string(int(act)));
      const Tensor no_bias = eng::linear_epilogue(x.to(kGpu), w.to(kGpu), Tensor(), act);
      expect_close(no_bias, host_act(F::linear(x.to(kFloat32), w.to(kFloat32)), act).to(dt), tol(act),
                   "linear epilogue without bias " + name(dt));
    }
    Tensor pre;
    const Tensor y = eng::linear_epilogue(x.to(kGpu), w.to(kGpu), bias.to(kGpu), eng::Activation::Gelu, &pre);
    expect(pre.defined() && pre.sizes() == Shape{48, 40}, "GELU_AUX returns the pre-activation [rows, out]");
    expect_close(pre, reshape(ref, {48, 40}).to(dt), tolerance(dt) * 2, "GELU_AUX pre-activation " + name(dt));
    expect_close(y, F::gelu(ref, "tanh").to(dt), tol(eng::Activation::Gelu), "GELU_AUX result " + name(dt));
  }
}

// The backward through GELU: DGELU_BGRAD against the CPU's autograd of tanh-GELU.
void dgelu_group() {
  for (ScalarType dt : {kFloat32, kFloat16, kBFloat16}) {
    const Tensor x = values({32, 64}, 90, dt), w1 = values({48, 64}, 91, dt), b1 = values({48}, 92, dt);
    const Tensor w2 = values({24, 48}, 93, dt), dy = values({32, 24}, 94, dt);
    Tensor pre, db;
    (void)eng::linear_epilogue(x.to(kGpu), w1.to(kGpu), b1.to(kGpu), eng::Activation::Gelu, &pre);
    const Tensor dz = eng::linear_dgelu(dy.to(kGpu), w2.to(kGpu), pre, &db);
    const Tensor dz_only = eng::linear_dgelu(dy.to(kGpu), w2.to(kGpu), pre.contiguous());
    // The reference: autograd of tanh-GELU at the GPU's own pre-activation, in float32.
    Tensor z = pre.cpu().to(kFloat32).detach();
    z.requires_grad_();
    F::gelu(z, "tanh").backward(mm(dy.to(kFloat32), w2.to(kFloat32)));
    const double tol = std::max(tolerance(dt) * 2, 2e-3);
    expect_close(dz, z.grad().to(dt), tol, "DGELU_BGRAD gradient " + name(dt));
    expect_close(dz_only, z.grad().to(dt), tol, "DGELU gradient " + name(dt));
    expect_close(db, sum(z.grad(), {0}).to(dt), tol * 4, "DGELU_BGRAD bias gradient " + name(dt));
  }
}

// linear_backward on CUDA against the CPU's kernel: grad_input (one GEMM), grad_weight with the
// bias gradient from the same GEMM's BGRADB epilogue (counted), or without the bias gradient;
// float64 takes the fallback (a GEMM and `sum`); a strided grad_output; and autograd through
// linear on CUDA ends in the same op. The CPU sums the bias gradient in float32 (float64) and
// rounds once; cuBLASLt's reduction order is its own: a few roundings of the sum's size.
void linear_backward_group() {
  for (ScalarType dt : {kFloat32, kFloat16, kBFloat16, kFloat64}) {
    const Tensor g = values({4, 24, 40}, 110, dt), x = values({4, 24, 64}, 111, dt), w = values({40, 64}, 112, dt);
    const Tensor gg = g.to(kGpu), gx = x.to(kGpu), gw = w.to(kGpu);
    const double tol = tolerance(dt) * 2;
    for (bool with_bias : {true, false}) {
      const std::string what = "linear_backward " + name(dt) + (with_bias ? " with bias grad" : " without bias grad");
      const F::LinearGrads want = F::linear_backward(g, x, w, true, true, with_bias);
      const int64_t fused_before = eng::bias_grad_epilogue_gemms();
      const F::LinearGrads got = F::linear_backward(gg, gx, gw, true, true, with_bias);
      const int64_t fused = eng::bias_grad_epilogue_gemms() - fused_before;
      expect_close(got.input, want.input, tol, what + ": grad_input");
      expect_close(got.weight, want.weight, tol, what + ": grad_weight");
      expect(got.bias.defined() == with_bias, what + ": grad_bias defined only when asked for");
      if (with_bias) expect_close(got.bias, want.bias, tol * 4, what + ": grad_bias");
      // float32/float16/bfloat16 write the bias gradient in the weight GEMM (cuBLASLt has BGRADB
      // for them on Hopper); float64 never does.
      expect(fused == (with_bias && dt != kFloat64 ? 1 : 0), what + ": BGRADB GEMMs run: " + std::to_string(fused));
    }
    // Only the bias gradient (a frozen weight): `sum`, no weight GEMM.
    const F::LinearGrads only_bias = F::linear_backward(gg, gx, gw, false, false, true);
    expect(!only_bias.input.defined() && !only_bias.weight.defined(), "linear_backward: unasked grads undefined");
    expect_close(only_bias.bias, F::linear_backward(g, x, w, false, false, true).bias, tol * 4,
                 "linear_backward bias only " + name(dt));
  }
  // A transposed (non-contiguous) grad_output: the operand layouts change, the results do not.
  {
    const Tensor gt = values({40, 48}, 113, kFloat32).t(), x = values({48, 64}, 114, kFloat32);
    const Tensor w = values({40, 64}, 115, kFloat32);
    const F::LinearGrads want = F::linear_backward(gt, x, w, true, true, true);
    const F::LinearGrads got = F::linear_backward(gt.to(kGpu), x.to(kGpu), w.to(kGpu), true, true, true);
    expect_close(got.input, want.input, tolerance(kFloat32) * 2, "linear_backward strided g: grad_input");
    expect_close(got.weight, want.weight, tolerance(kFloat32) * 2, "linear_backward strided g: grad_weight");
    expect_close(got.bias, want.bias, tolerance(kFloat32) * 8, "linear_backward strided g: grad_bias");
  }
  // Autograd through linear on CUDA: one linear_backward with the bias gradient fused.
  for (ScalarType dt : {kFloat32, kBFloat16}) {
    const Tensor x = values({8, 32}, 116, dt), w = values({16, 32}, 117, dt), b = values({16}, 118, dt);
    Tensor xc = x.detach(), wc = w.detach(), bc = b.detach();
    Tensor xg = x.to(kGpu).detach(), wg = w.to(kGpu).detach(), bg = b.to(kGpu).detach();
    for (Tensor* t : {&xc, &wc, &bc, &xg, &wg, &bg}) t->requires_grad_();
    sum(F::linear(xc, wc, bc)).backward();
    const int64_t fused_before = eng::bias_grad_epilogue_gemms();
    sum(F::linear(xg, wg, bg)).backward();
    expect(eng::bias_grad_epilogue_gemms() - fused_before == 1, "autograd through linear uses BGRADB " + name(dt));
    const double tol = tolerance(dt) * 2;
    expect_close(xg.grad(), xc.grad(), tol, "autograd linear grad_input " + name(dt));
    expect_close(wg.grad(), wc.grad(), tol, "autograd linear grad_weight " + name(dt));
    expect_close(bg.grad(), bc.grad(), tol * 4, "autograd linear grad_bias " + name(dt));
  }
}

// The float8 operands: values in [-2, 2] rounded to `dt`.
Tensor f8(const Shape& s, uint64_t seed, ScalarType dt) { return values(s, seed, kFloat32, -2, 2).to(dt); }

void scaled_mm_group() {
  const int64_t M = 40, K = 64, N = 48;
  const std::pair<ScalarType, ScalarType> pairs[] = {
      {kFloat8_e4m3fn, kFloat8_e4m3fn}, {kFloat8_e4m3fn, kFloat8_e5m2}, {kFloat8_e5m2, kFloat8_e4m3fn}};
  int cases = 0;
  for (const auto& [ta, tb] : pairs) {
    const Tensor a = f8({M, K}, 40, ta), w = f8({N, K}, 41, tb);
    const Tensor b = w.t();  // [K, N] column-major: Hopper's TN without a copy
    const Tensor b_row = w.t().contiguous();  // [K, N] row-major: transposed copy inside
    for (ScalarType out : {kBFloat16, kFloat16, kFloat32, kFloat8_e4m3fn, kFloat8_e5m2}) {
      if (out == kFloat8_e5m2 && ta != kFloat8_e5m2 && tb != kFloat8_e5m2) continue;
      for (bool rowwise : {false, true}) {
        if (rowwise && is_float8(out)) continue;  // refused (below)
        for (bool with_bias : {false, true}) {
          if (with_bias && out == kFloat32) continue;
          for (bool fast : {false, true}) {
            const Tensor sa = rowwise ? values({M, 1}, 42, kFloat32, 0.1, 1) : full({}, 0.3, {.dtype = kFloat32});
            const Tensor sb = rowwise ? values({1, N}, 43, kFloat32, 0.1, 1) : full({}, 1.7, {.dtype = kFloat32});
            ScaledMmOptions o;
            o.out_dtype = out;
            o.use_fast_accum = fast;
            if (with_bias) o.bias = values({N}, 44, out == kFloat16 ? kFloat16 : kBFloat16);
            if (is_float8(out)) o.scale_result = full({}, 0.5, {.dtype = kFloat32});
            const ScaledMmResult want = scaled_mm(a, b, sa, sb, o);
            ScaledMmOptions og = o;
            if (o.bias.defined()) og.bias = o.bias.to(kGpu);
            if (o.scale_result.defined()) og.scale_result = o.scale_result.to(kGpu);
            const std::string what = "scaled_mm " + name(ta) + " x " + name(tb) + " -> " + name(out) +
                                     (rowwise ? " rowwise" : " tensorwise") + (with_bias ? " bias" : "") +
                                     (fast ? " fast_accum" : "");
            for (const Tensor& bb : {b, b_row}) {
              const ScaledMmResult got = scaled_mm(a.to(kGpu), bb.to(kGpu), sa.to(kGpu), sb.to(kGpu), og);
              expect_close(got.out.to(kFloat32), want.out.to(kFloat32), tolerance(out) + (fast ? 1e-2 : 0), what);
              if (is_float8(out))
                expect(got.amax.defined() && rel_error(got.amax, want.amax) < 1e-2, what + ": amax");
              ++cases;
            }
          }
        }
      }
    }
  }
  expect(cases > 100, "scaled_mm combinations ran");
  // Refused: e5m2 x e5m2, K or N not a multiple of 16, row-wise scales with a float8 result.
  auto raises = [](auto f, std::initializer_list<const char*> texts) {
    try {
      f();
    } catch (const Error& e) {
      const std::string what = e.what();
      return std::all_of(texts.begin(), texts.end(), [&](const char* t) { return what.find(t) != std::string::npos; });
    }
    return false;
  };
  const Tensor s = full({}, 1.0, {.dtype = kFloat32}).to(kGpu);
  expect(raises([&] { (void)scaled_mm(f8({16, 32}, 1, kFloat8_e5m2).to(kGpu), f8({32, 16}, 2, kFloat8_e5m2).to(kGpu), s, s); },
                {"e5m2"}),
         "scaled_mm refuses e5m2 x e5m2");
  expect(raises([&] { (void)scaled_mm(f8({16, 24}, 1, kFloat8_e4m3fn).to(kGpu), f8({24, 16}, 2, kFloat8_e4m3fn).to(kGpu), s, s); },
                {"multiples of 16"}),
         "scaled_mm refuses K = 24");
  // cuBLASLt's outer-vector scaling has no D scale and writes no float8 D: refused by the plan, as on the CPU.
  const Tensor rows = values({M, 1}, 45, kFloat32, 0.1, 1).to(kGpu), cols = values({1, N}, 46, kFloat32, 0.1, 1).to(kGpu);
  const Tensor a5 = f8({M, K}, 47, kFloat8_e5m2).to(kGpu), w4 = f8({N, K}, 48, kFloat8_e4m3fn).to(kGpu);
  for (ScalarType out : {kFloat8_e4m3fn, kFloat8_e5m2}) {
    ScaledMmOptions o;
    o.out_dtype = out;
    expect(raises([&] { (void)scaled_mm(a5, w4.t(), rows, cols, o); }, {"scaled_mm", "row-wise scales", name(out).c_str()}),
           "scaled_mm refuses row-wise scales with a " + name(out) + " result, naming the op and the dtype");
  }
}

void plan_cache_group() {
  gemm::clear_plan_cache();
  const Tensor a = values({512, 384}, 50, kBFloat16).to(kGpu), b = values({384, 256}, 51, kBFloat16).to(kGpu);
  const Tensor first = mm(a, b);
  gemm::PlanCacheStats s = gemm::plan_cache_stats();
  expect(s.plans == 1 && s.misses == 1 && s.hits == 0, "one plan after the first call");
  const Tensor again = mm(a, b);
  s = gemm::plan_cache_stats();
  expect(s.plans == 1 && s.hits == 1, "the second call hits the plan");
  expect(rel_error(first, again) == 0, "the same plan gives the same bits");
  // Autotune: the key's first call times the candidates.
  gemm::clear_plan_cache();
  gemm::set_algo_selection(gemm::AlgoSelection::Autotune);
  const Tensor tuned = mm(a, b);
  s = gemm::plan_cache_stats();
  expect(s.autotuned <= 1 && s.plans == 1, "autotune: one plan, at most one timing");
  expect_close(tuned, mm(a.to(Device::cpu()), b.to(Device::cpu())), tolerance(kBFloat16), "autotuned mm");
  const Tensor tuned_again = mm(a, b);
  expect(rel_error(tuned, tuned_again) == 0, "the tuned plan is kept");
  // The tuning file: save, clear, load, and the loaded algorithm gives the same bits.
  const std::string path = (std::filesystem::temp_directory_path() / "mixt_test_cuda_gemm.tuning").string();
  gemm::save_tuning(path);
  gemm::clear_plan_cache();
  gemm::set_algo_selection(gemm::AlgoSelection::Heuristic);
  gemm::load_tuning(path);
  const Tensor loaded = mm(a, b);
  expect(rel_error(loaded, tuned) == 0, "the loaded algorithm reproduces the tuned result");
  expect(gemm::plan_cache_stats().autotuned == 0, "a loaded plan is not timed again");
  std::filesystem::remove(path);
  gemm::clear_plan_cache();
}

// Multiples of 1/16 in [-4, 4] stored in `dt`: exact in float16 and bfloat16; their products are multiples of
// 2^-8 of at most 16, so any sum of up to 2^10 of them (in any order) is exact in float32.
Tensor grid(const Shape& s, uint32_t seed, ScalarType dt) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  uint32_t x = seed * 2654435761u + 12345u;
  for (double& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<double>(static_cast<int>((x >> 8) % 129) - 64) / 16;
  }
  return from_vector(v, s).to(dt);
}

// float16/bfloat16 results with a long K: cuBLASLt may split K, and its partial sums must stay in float32
// (CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE), never be rounded to the result's dtype (INPLACE, OUTPUT_TYPE).
// On grid() data the float32 sum is exact whatever the order, so the GPU must give the CPU's bits (one
// rounding of the exact sum); a partial sum rounded to float16/bfloat16 changes some of them.
void split_k_group() {
  for (ScalarType dt : {kFloat16, kBFloat16}) {
    for (int64_t k : {int64_t{256}, int64_t{1024}}) {
      const Tensor a = grid({48, k}, 120, dt), b = grid({k, 40}, 121, dt);
      const Tensor want = mm(a, b);
      const std::string what = name(dt) + " k = " + std::to_string(k);
      expect(rel_error(want, mm(a.to(kFloat64), b.to(kFloat64)).to(dt)) == 0,
             "the CPU's float32 sums are exact on grid data: " + what);
      auto bit_equal = [&](const Tensor& got, const Tensor& ref, const std::string& label) {
        const double e = rel_error(got, ref);
        expect(e == 0, label + " with float32 partial sums, bit-equal: " + what + " (relative error " +
                           std::to_string(e) + ")");
      };
      bit_equal(mm(a.to(kGpu), b.to(kGpu)), want, "mm");
      bit_equal(mm(a.to(kGpu), b.t().contiguous().to(kGpu).t()), want, "mm (column-major b)");
      const Tensor a3 = grid({2, 24, k}, 122, dt), b3 = grid({2, k, 16}, 123, dt);
      bit_equal(bmm(a3.to(kGpu), b3.to(kGpu)), bmm(a3, b3), "bmm");
    }
  }
}

// A bfloat16 product out [M, N] = a [M, K] @ b [K, N] (row-major, on the GPU) as the engine's call: column-major
// out^T = b^T @ a^T. `align` caps the alignment the key declares for A and B (the pointers keep theirs): a small
// one makes the heuristic pick an algorithm that takes misaligned operands.
eng::GemmCall bf16_product(const Tensor& a, const Tensor& b, Tensor& out, uint16_t align) {
  eng::GemmCall call;
  mixt::gemm::GemmKey& k = call.key;
  k.m = b.size(1);
  k.n = a.size(0);
  k.k = a.size(1);
  k.a = k.b = k.c = k.d = kBFloat16;
  k.lda = b.size(1);
  k.ldb = a.size(1);
  k.ldc = k.ldd = b.size(1);
  k.align_a = std::min(mixt::gemm::pointer_alignment(b.data_ptr()), align);
  k.align_b = std::min(mixt::gemm::pointer_alignment(a.data_ptr()), align);
  k.align_c = k.align_d = mixt::gemm::pointer_alignment(out.data_ptr());
  call.a = b.data_ptr();
  call.b = a.data_ptr();
  call.c = call.d = out.data_ptr();
  return call;
}

// load_tuning after a key has run: the key's cached (heuristic) plan must give way to the loaded algorithm.
// The other algorithm is the one the heuristic picks for the same product with 2-byte operand alignment
// (valid for the aligned operands too); plan_source reports the plan's origin and algorithm.
void tuning_reload_group() {
  gemm::clear_plan_cache();
  gemm::set_algo_selection(gemm::AlgoSelection::Heuristic);
  const Tensor a = values({64, 128}, 130, kBFloat16), b = values({128, 96}, 131, kBFloat16);
  const Tensor ga = a.to(kGpu), gb = b.to(kGpu);
  Tensor out = empty({64, 96}, {.dtype = kBFloat16, .device = kGpu});
  const eng::GemmCall aligned = bf16_product(ga, gb, out, mixt::gemm::kMaxAlignment);
  const eng::GemmCall loose = bf16_product(ga, gb, out, 2);
  eng::run(loose, 0, "test_cuda_gemm");
  eng::PlanSource source{};
  mixt::gemm::TunedAlgo loose_algo, heuristic_algo, now;
  expect(eng::plan_source(loose.key, 0, &source, &loose_algo) && source == eng::PlanSource::Heuristic,
         "the 2-byte-aligned key has a heuristic plan");
  eng::run(aligned, 0, "test_cuda_gemm");
  expect(eng::plan_source(aligned.key, 0, &source, &heuristic_algo) && source == eng::PlanSource::Heuristic,
         "the aligned key has a heuristic plan");
  expect(heuristic_algo.algo != loose_algo.algo, "the two keys' heuristic algorithms differ");
  // A tuning file giving the aligned key the other algorithm, loaded after the key has run.
  mixt::gemm::TuningFile file;
  file.entries = {{aligned.key, loose_algo}};
  const std::string path = (std::filesystem::temp_directory_path() / "mixt_test_cuda_gemm_reload.tuning").string();
  {
    std::ofstream f(path, std::ios::binary);
    f << mixt::gemm::format_tuning(file);
  }
  gemm::load_tuning(path);
  std::filesystem::remove(path);
  eng::run(aligned, 0, "test_cuda_gemm");
  const bool found = eng::plan_source(aligned.key, 0, &source, &now);
  expect(found && source == eng::PlanSource::Loaded,
         "after load_tuning the key's plan is the loaded one (source " + std::to_string(int(source)) + ")");
  expect(found && now.algo == loose_algo.algo, "after load_tuning the key runs the loaded algorithm");
  expect_close(out, mm(a, b), tolerance(kBFloat16), "the loaded algorithm's product");
  gemm::clear_plan_cache();
}

// A tuning file cannot give a bfloat16 result a split-K algorithm that adds its partial
// sums in D's type (INPLACE): the engine's reduction-scheme mask keeps such algorithms
// from narrow results, and a loaded algorithm goes through the same rule. The split-K
// algorithm's bytes are the emulated cuBLASLt's (emulated builds only).
void tuned_split_k_group() {
#if defined(MIXT_CUDA_EMULATED)
  namespace lt = mixt::cuda::emulated::lt;
  gemm::clear_plan_cache();
  gemm::set_algo_selection(gemm::AlgoSelection::Heuristic);
  const Tensor a = values({64, 512}, 140, kBFloat16), b = values({512, 96}, 141, kBFloat16);  // k >= 256
  const Tensor ga = a.to(kGpu), gb = b.to(kGpu);
  Tensor out = empty({64, 96}, {.dtype = kBFloat16, .device = kGpu});
  const eng::GemmCall call = bf16_product(ga, gb, out, mixt::gemm::kMaxAlignment);
  lt::AlgoInfo inplace;
  for (const lt::AlgoInfo& info : lt::kAlgos)
    if (info.reduction == CUBLASLT_REDUCTION_SCHEME_INPLACE) inplace = info;
  expect(inplace.split_k > 1, "the emulated cuBLASLt has a split-K INPLACE algorithm (test precondition)");
  const cublasLtMatmulAlgo_t algo = lt::encode_algo(inplace);
  mixt::gemm::TunedAlgo split;
  std::memcpy(split.algo.data(), &algo, sizeof algo);
  split.workspace = inplace.workspace;
  mixt::gemm::TuningFile file;
  file.entries = {{call.key, split}};
  const std::string path = (std::filesystem::temp_directory_path() / "mixt_test_cuda_gemm_split_k.tuning").string();
  {
    std::ofstream f(path, std::ios::binary);
    f << mixt::gemm::format_tuning(file);
  }
  gemm::load_tuning(path);
  std::filesystem::remove(path);
  eng::run(call, 0, "test_cuda_gemm");
  eng::PlanSource source{};
  mixt::gemm::TunedAlgo now;
  expect(eng::plan_source(call.key, 0, &source, &now) && source != eng::PlanSource::Loaded && now.algo != split.algo,
         "the loaded split-K INPLACE algorithm is refused for a bfloat16 result (source " + std::to_string(int(source)) +
             ")");
  expect_close(out, mm(a, b), tolerance(kBFloat16), "the product of the algorithm taken instead");
  gemm::clear_plan_cache();
#endif
}

void determinism_group() {
  gemm::set_algo_selection(gemm::AlgoSelection::Autotune);
  set_deterministic(true);
  const Tensor a = values({1024, 2048}, 60, kBFloat16).to(kGpu), b = values({2048, 512}, 61, kBFloat16).to(kGpu);
  gemm::clear_plan_cache();
  const Tensor r1 = mm(a, b);
  gemm::clear_plan_cache();
  const Tensor r2 = mm(a, b);
  expect(rel_error(r1, r2) == 0, "deterministic: the same bits after rebuilding the plan");
  expect(gemm::plan_cache_stats().autotuned == 0, "deterministic: no timed autotune");
  set_deterministic(false);
  gemm::set_algo_selection(gemm::AlgoSelection::Heuristic);
  gemm::clear_plan_cache();
}

void threads_group() {
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &ok] {
      const Tensor a = values({64 + 16 * t, 96}, 70 + t, kFloat32), b = values({96, 80}, 80 + t, kFloat32);
      const Tensor want = mm(a, b);
      const Tensor ga = a.to(kGpu), gb = b.to(kGpu);
      bool all = true;
      for (int i = 0; i < 20; ++i) all = all && rel_error(mm(ga, gb), want) <= tolerance(kFloat32);
      ok[static_cast<size_t>(t)] = all ? 1 : 0;
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) expect(ok[static_cast<size_t>(t)] == 1, "thread " + std::to_string(t) + " matches the CPU");
}

}  // namespace

int main() {
  if (const int status = cuda_unavailable_status("test_cuda_gemm"); status >= 0) return status;
  group("mm, bmm, addmm, baddbmm, linear vs CPU (every dtype and layout)", products_group);
  group("float32 under TF32", tf32_group);
  group("bias / ReLU / GELU epilogues and GELU's aux", epilogue_group);
  group("DGELU / DGELU_BGRAD: the backward through GELU", dgelu_group);
  group("linear_backward: BGRADB bias gradient in the weight GEMM", linear_backward_group);
  group("scaled_mm: float8 pairs, results, scales, bias, fast accum", scaled_mm_group);
  group("float16/bfloat16 long K: float32 split-K sums, CPU's bits", split_k_group);
  group("plan cache, autotune, tuning file round trip", plan_cache_group);
  group("load_tuning replaces a key's cached plan", tuning_reload_group);
  group("a tuning file cannot bring split-K INPLACE to a bfloat16 result", tuned_split_k_group);
  group("set_deterministic: heuristic, same bits", determinism_group);
  group("four threads sharing plans", threads_group);
  std::printf("test_cuda_gemm: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
