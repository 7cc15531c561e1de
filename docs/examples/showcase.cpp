// The README's demo: a short tour of the runtime — the dtype table, the op table,
// the path of one call through the dispatcher, ops in several precisions on the
// CPU (and the GPU when there is one), and what an error looks like. It checks the
// figures it shows (errors within each dtype's rounding, the fp8 rules, the dispatch
// target) and exits with 1 when one is wrong.
#include <chrono>
#include <cstdio>
#include <limits>
#include <string>

#include <mixt/mixt.h>

#include "example_support.h"

using namespace mixt;

namespace {

std::string keys_str(DispatchKeySet ks) {
  std::string s;
  for (int k = kNumDispatchKeys - 1; k >= 0; --k) {
    if (!ks.has(static_cast<DispatchKey>(k))) continue;
    if (!s.empty()) s += ", ";
    s += dispatch_key_name(static_cast<DispatchKey>(k));
  }
  return "{" + s + "}";
}

void section(const char* title) { std::printf("\n== %s ==\n", title); }

void show_dtypes() {
  section("dtypes");
  std::printf("%-15s %5s %-9s %s\n", "dtype", "bytes", "category", "accumulates in");
  for (int i = 0; i < kNumDtypes; ++i) {
    const DtypeInfo& d = dtype_info(static_cast<ScalarType>(i));
    const char* cat = d.category == DtypeCategory::Floating ? "floating"
                      : d.category == DtypeCategory::Integral ? "integral" : "bool";
    std::printf("%-15s %5d %-9s %s\n", std::string(d.name).c_str(), d.size, cat,
                std::string(dtype_name(d.accumulate)).c_str());
  }
}

void show_op_table() {
  section("op table");
  int cpu = 0, cuda_k = 0, composite = 0;
  for (int i = 0; i < kNumBuiltinOps; ++i) {
    const OpEntry& e = op_entry(static_cast<OpId>(i));
    cpu += e.mask.has(DispatchKey::CPU);
    cuda_k += e.mask.has(DispatchKey::CUDA);
    composite += e.has(op_flags::Composite) || e.has(op_flags::View);
  }
  std::printf("%d built-in ops; kernels: CPU %d, CUDA %d (%d views/composites serve every backend)\n",
              kNumBuiltinOps, cpu, cuda_k, composite);
  std::printf("e.g.:");
  for (OpId id : {OpId::add, OpId::mm, OpId::linear, OpId::softplus, OpId::cumsum, OpId::scatter_add})
    std::printf(" %s", std::string(op_name(id)).c_str());
  std::printf("\n");
}

void show_dispatch_path() {
  section("the path of add(a, b)");
  Tensor a = ones({2, 2}), b = ones({2, 2});
  OpCall c(OpId::add);
  c.push(a);
  c.push(b);
  const OpEntry& e = op_entry(OpId::add);
  std::printf("input keys       %s\n", keys_str(c.input_keys(e)).c_str());
  std::printf("tls excluded     %s   (autocast starts off)\n", keys_str(tls_dispatch_keys.excluded).c_str());
  std::printf("kernels for add  %s\n", keys_str(e.mask).c_str());
  std::printf("=> dispatched to %s\n", keys_str(DispatchKeySet(dispatch_keys(c).highest())).c_str());
  example::require(dispatch_keys(c).highest() == DispatchKey::Autograd, "add dispatches to Autograd first");
  {
    UnexcludeKeysGuard autocast_on(DispatchKey::AutocastCPU);
    std::printf("with AutocastCPU enabled the set is %s: add has no autocast rule, so it falls through\n",
                keys_str(dispatch_keys(c)).c_str());
  }
}

double rel_err(const Tensor& got, const Tensor& ref) {
  const Tensor diff = max((got.to(Device::cpu(), kFloat64) - ref).abs());
  return diff.item<double>() / max(ref.abs()).item<double>();
}

// The largest error (relative to the largest |result|) a 256x256 product of N(0, 1)
// operands may show: rounding the operands to `t` (unit roundoff u each) moves each
// result by about sqrt(2 K / 3) u on a largest result of about 4.5 sqrt(K), so by
// about u after normalization; 4 u leaves a margin. The float32 accumulation of K = 256
// terms adds a few sqrt(K) 2^-24 (6e-7 measured with OpenBLAS; 64 2^-24 allowed, as
// the order of the sums differs between BLAS kernels), rounding the result to `out` one
// unit of it.
double allowed_error(ScalarType t, ScalarType out) {
  auto unit = [](ScalarType d) {
    switch (d) {
      case kFloat32: return 0x1p-24;
      case kBFloat16: return 0x1p-9;
      case kFloat16: return 0x1p-11;
      case kFloat8_e4m3fn: return 0x1p-4;
      default: return 1.0;
    }
  };
  return 4 * unit(t) + 64 * 0x1p-24 + unit(out);
}

void show_precisions(Device dev) {
  section(("matmul 256x256 in every precision on " + dev.str()).c_str());
  manual_seed(1);
  Tensor a = randn({256, 256}, {.dtype = kFloat64}), b = randn({256, 256}, {.dtype = kFloat64});
  const Tensor ref = mm(a, b);
  std::printf("%-16s %-14s %s\n", "operands", "result", "max rel. error vs float64");
  for (ScalarType t : {kFloat32, kBFloat16, kFloat16, kFloat8_e4m3fn}) {
    Tensor x = a.to(dev, t), y = b.to(dev, t);
    // Narrow operands: once rounded to their own dtype, once with the float32 accumulator kept.
    const std::vector<ScalarType> outs = t == kFloat32 ? std::vector<ScalarType>{t} : std::vector<ScalarType>{t, kFloat32};
    for (ScalarType out : outs) {
      try {
        Tensor r = mm(x, y, out);
        const double e = rel_err(r, ref);
        std::printf("%-16s %-14s %.2e\n", std::string(dtype_name(t)).c_str(),
                    std::string(dtype_name(r.dtype())).c_str(), e);
        example::require(r.dtype() == out && e <= allowed_error(t, out),
                         std::string(dtype_name(t)) + " -> " + std::string(dtype_name(out)) + " error");
      } catch (const Error& err) {
        std::printf("%-16s %-14s not available here: %s\n", std::string(dtype_name(t)).c_str(),
                    std::string(dtype_name(out)).c_str(), err.message().c_str());
      }
    }
  }
}

void show_speed() {
  section("CPU speed");
  Tensor a = randn({512, 512}), b = randn({512, 512});
  mm(a, b);
  const auto t0 = std::chrono::steady_clock::now();
  const int reps = 20;
  for (int i = 0; i < reps; ++i) mm(a, b);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
  std::printf("mm 512x512 float32 (OpenBLAS): %.2f ms, %.1f GFLOP/s\n", s * 1e3, 2.0 * 512 * 512 * 512 / s / 1e9);
  Tensor big = randn({1 << 22});
  const auto t1 = std::chrono::steady_clock::now();
  Tensor g = nn::functional::gelu(big);
  const double s2 = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::printf("gelu over 4M float32 elements: %.2f ms (%.2f GB/s)\n", s2 * 1e3, 8.0 * (1 << 22) / s2 / 1e9);
}

void show_fp8() {
  section("fp8 rounding rules");
  Tensor v = from_vector(std::vector<float>{0.3f, 300.f, 448.f, 500.f, 57344.f, 61440.f, 1e9f});
  std::printf("input          %s\n", v.str().c_str());
  std::printf("float8_e4m3fn  %s  (saturates at 448)\n", v.to(kFloat8_e4m3fn).to(kFloat32).str().c_str());
  std::printf("float8_e5m2    %s  (Inf from 61440)\n", v.to(kFloat8_e5m2).to(kFloat32).str().c_str());
  const double inf = std::numeric_limits<double>::infinity();
  example::require(v.to(kFloat8_e4m3fn).to_vector<double>() == std::vector<double>{0.3125, 288, 448, 448, 448, 448, 448},
                   "float8_e4m3fn rounding and saturation");
  example::require(v.to(kFloat8_e5m2).to_vector<double>() == std::vector<double>{0.3125, 320, 448, 512, 57344, inf, inf},
                   "float8_e5m2 rounding and overflow");
}

void show_error() {
  section("errors name the op and its inputs");
  bool raised = false;
  try {
    add(ones({2, 3}), ones({4}));
  } catch (const Error& e) {
    std::printf("%s\n", e.what());
    raised = true;
  }
  example::require(raised, "add of [2, 3] and [4] raises mixt::Error");
}

}  // namespace

int main() {
  std::printf("mixt showcase\n");
  std::printf("CUDA backend compiled: %s; GPU: %s\n", cuda::is_compiled() ? "yes" : "no",
              cuda::is_available() ? "available" : cuda::unavailable_reason().c_str());
  show_dtypes();
  show_op_table();
  show_dispatch_path();
  show_precisions(Device::cpu());
  if (cuda::is_available()) show_precisions(Device::cuda(0));
  show_fp8();
  show_speed();
  show_error();
  return 0;
}
