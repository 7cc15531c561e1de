// The GEMM engine's knobs (docs/gemm.md): float32 matmul precision, heuristic vs autotuned
// algorithms, the plan cache's counters, and tuning files that let a later run start tuned.
// On the CPU there are no plans (OpenBLAS needs none) and the same calls work; with
// MIXT_EXAMPLE_DEVICE=cuda the products go through cuBLASLt and the cache fills. It checks
// what it prints and exits with 1 when something is wrong.
#include <cstdio>
#include <fstream>
#include <string>

#include <mixt/mixt.h>

#include "example_support.h"

using namespace mixt;
namespace F = mixt::nn::functional;

int main() {
  using example::require;
  example::ScratchDir dir;

  // TF32 for float32 GEMMs on CUDA (the CPU keeps float32), and timed algorithm choice.
  set_float32_matmul_precision(Float32MatmulPrecision::High);
  gemm::set_algo_selection(gemm::AlgoSelection::Autotune);
  gemm::clear_plan_cache();

  const Tensor x = randn({128, 256}), w = randn({64, 256}), b = randn({64});
  const bool on_gpu = x.is_cuda();
  const Tensor y = F::linear(x, w, b);  // one GEMM with the bias fused (a cuBLASLt epilogue on CUDA)
  const Tensor y2 = F::linear(x, w, b);  // the same key: the cached plan
  const Tensor z = addmm(b, x, w.t());   // the same product as addmm
  require(y.sizes() == Shape{128, 64}, "linear's shape");
  const double diff = amax(abs(sub(y.to(kFloat32), z.to(kFloat32)))).item<double>();
  require(diff < 1e-2, "linear and addmm agree");
  require(amax(abs(sub(y, y2))).item<double>() == 0.0, "a cached plan gives the same bits");

  const gemm::PlanCacheStats s = gemm::plan_cache_stats();
  std::printf("device %s: %lld plans, %lld hits, %lld misses, %lld autotuned\n", on_gpu ? "cuda" : "cpu",
              static_cast<long long>(s.plans), static_cast<long long>(s.hits), static_cast<long long>(s.misses),
              static_cast<long long>(s.autotuned));
  if (on_gpu) require(s.plans >= 1 && s.hits >= 1, "the second linear found its plan");
  else require(s.plans == 0 && s.hits == 0, "the CPU has no plans");

  // Save the tuned choices; a later run loads them before its first GEMM.
  const std::string path = dir.file("gemm.tuning");
  gemm::save_tuning(path);
  std::ifstream in(path);
  std::string first_line;
  std::getline(in, first_line);
  require(first_line == "mixt-gemm-tuning 1", "the file's first line names the format");
  gemm::clear_plan_cache();
  gemm::load_tuning(path);

  // A damaged file is refused as a whole, naming the file and the line; nothing changes.
  const std::string bad = dir.file("bad.tuning");
  std::ofstream(bad) << "mixt-gemm-tuning 1\ndevice x\ncublaslt 0\nentries 1\nm=-1\nend\n";
  try {
    gemm::load_tuning(bad);
    require(false, "a damaged tuning file is refused");
  } catch (const Error& e) {
    std::printf("refused: %s\n", e.what());
    require(std::string(e.what()).find("bad.tuning:5:") != std::string::npos, "the error names file and line");
  }

  // set_deterministic(true) keeps the heuristic's choice (no timing, no loaded algorithms).
  set_deterministic(true);
  require(gemm::algo_selection() == gemm::AlgoSelection::Heuristic, "deterministic runs use the heuristic");
  set_deterministic(false);
  gemm::set_algo_selection(gemm::AlgoSelection::Heuristic);
  set_float32_matmul_precision(Float32MatmulPrecision::Highest);
  std::printf("ok\n");
  return 0;
}
