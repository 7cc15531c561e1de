// cumsum/cumprod and the ordered scatter on CUDA against the CPU, at the sizes where the
// device shares a line among many threads (Note [Chunked scans], Note [Ordered scatter]
// in docs/notes/cuda.md): long 1-D lines, many short lines, strided lines, every dtype.
// Integer and bool scans, short-line scans and every ordered scatter give the CPU's bits;
// chunked floating scans stay within the bound the note states. Own main (no Catch2):
// exits 77, which meson reports as SKIP, only on a machine without a GPU (gpu_skip.h).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <mixt/kernels/common/scan_plan.h>
#include <mixt/kernels/common/scatter_plan.h>
#include <mixt/mixt.h>
#include <mixt/runtime/determinism.h>

#include "gpu_checks.h"
#include "gpu_tensors.h"
#include "gpu_skip.h"

using namespace mixt;
using testing::expect;
using testing::expect_error;
using testing::g_checks;
using testing::g_failures;
using testing::group;
using testing::kAll;
using testing::expect_same_bits;
using testing::name;
using testing::values;

namespace {

const Device kGpu = Device::cuda(0);
const ScalarType kNoAtomics[] = {kBool, kUInt8, kInt8, kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2};
const ScalarType kAtomics[] = {kInt32, kInt64, kFloat32, kFloat64};

// The spacing of dtype dt's values at magnitude v (its subnormal spacing near zero).
double ulp_of(ScalarType dt, double v) {
  int mantissa = 52, min_exp = -1022;
  switch (dt) {
    case ScalarType::Float32: mantissa = 23, min_exp = -126; break;
    case ScalarType::Float16: mantissa = 10, min_exp = -14; break;
    case ScalarType::BFloat16: mantissa = 7, min_exp = -126; break;
    case ScalarType::Float8_e4m3fn: mantissa = 3, min_exp = -6; break;
    case ScalarType::Float8_e5m2: mantissa = 2, min_exp = -14; break;
    default: break;
  }
  const int e = v == 0 ? min_exp : std::max(std::ilogb(v), min_exp);
  return std::ldexp(1.0, e - mantissa);
}

// A chunked floating scan against the CPU's (Note [Chunked scans]): element k of a line of
// n differs by at most 2 gamma_n * m_k plus one ulp of the result, where gamma_n = n u / (1 - n u)
// (u = 2^-53) and m_k is the prefix of |x| (sums) or |the CPU's result| (products).
// Returns how many elements differ at all.
int64_t expect_scan_close(const Tensor& got_any, const Tensor& want, const Tensor& x, int64_t dim, bool prod,
                          const std::string& what) {
  const Tensor got = got_any.cpu();
  if (got.dtype() != want.dtype() || got.sizes() != want.sizes()) {
    expect(false, what + ": got " + got.describe() + ", expected " + want.describe());
    return 0;
  }
  const int64_t n = x.size(dim);
  const double nu = static_cast<double>(n) * std::ldexp(1.0, -53), g2 = 2 * nu / (1 - nu);
  const std::vector<double> gv = got.contiguous().to_vector<double>(), wv = want.contiguous().to_vector<double>();
  const std::vector<double> mv =
      prod ? want.to(kFloat64).abs().contiguous().to_vector<double>()
           : cumsum(x.to(kFloat64).abs(), dim).contiguous().to_vector<double>();
  int64_t differ = 0, bad = 0, first = -1;
  for (size_t i = 0; i < gv.size(); ++i) {
    if (std::memcmp(&gv[i], &wv[i], sizeof(double)) == 0) continue;
    ++differ;
    const bool ok = std::isfinite(gv[i]) && std::isfinite(wv[i]) &&
                    std::fabs(gv[i] - wv[i]) <= g2 * mv[i] * (1 + g2) +
                                                    ulp_of(want.dtype(), std::max(std::fabs(gv[i]), std::fabs(wv[i])));
    if (!ok && bad++ == 0) first = static_cast<int64_t>(i);
  }
  expect(bad == 0, what + ": " + std::to_string(bad) + " elements beyond the bound, the first at " +
                       std::to_string(first) + (first >= 0 ? " (got " + std::to_string(gv[first]) + ", CPU " +
                                                               std::to_string(wv[first]) + ")"
                                                         : std::string()));
  return differ;
}

// cumsum or cumprod of x (a CPU tensor) along dim on the GPU, judged against the CPU's:
// bit for bit for integers, bool and unchunked lines, within the bound otherwise.
void check_scan(const Tensor& x, int64_t dim, bool prod, const std::string& what, ScalarType dtype = ScalarType::Undefined) {
  const Tensor want = prod ? cumprod(x, dim, dtype) : cumsum(x, dim, dtype);
  const Tensor got = prod ? cumprod(x.to(kGpu), dim, dtype) : cumsum(x.to(kGpu), dim, dtype);
  const Tensor xs = dtype == ScalarType::Undefined ? x : x.to(dtype);
  const ScanPlan p = make_scan_plan(x.numel() / std::max<int64_t>(1, x.size(dim)), x.size(dim));
  if (!is_floating(want.dtype()) || p.chunks == 1) expect_same_bits(got, want, what);
  else expect_scan_close(got, want, xs, dim, prod, what);
}

// Runs `f` with set_deterministic(on), restoring the previous setting.
void with_deterministic(bool on, const std::function<void()>& f) {
  const bool before = is_deterministic();
  set_deterministic(on);
  try {
    f();
  } catch (...) {
    set_deterministic(before);
    throw;
  }
  set_deterministic(before);
}

}  // namespace

int main() {
  if (const int status = testing::cuda_unavailable_status("test_cuda_scan_scatter"); status >= 0) return status;

  group("scan: a 10^6-element line, integers and bool exact", [] {
    const Shape s{1000000};
    check_scan(values(kInt64, s, -1000, 1000, 1), 0, false, "cumsum int64");
    check_scan(values(kInt32, s, -1000, 1000, 2), 0, false, "cumsum int32 -> int64");
    check_scan(values(kInt32, s, -1000, 1000, 2), 0, false, "cumsum int32 -> int32 (wraps)", kInt32);
    check_scan(values(kUInt8, s, 0, 255, 3), 0, false, "cumsum uint8 -> uint8 (wraps)", kUInt8);
    check_scan(values(kBool, s, 0, 1, 4), 0, false, "cumsum bool -> int64");
    check_scan(values(kInt64, s, -3, 3, 5), 0, true, "cumprod int64 (wraps)");
  });

  group("scan: a 10^6-element float line within the bound", [] {
    const Shape s{1000000};
    for (ScalarType dt : {kFloat32, kFloat64}) {
      const Tensor x = values(dt, s, -1, 1, 6);
      const Tensor got = cumsum(x.to(kGpu), 0);
      const int64_t differ = expect_scan_close(got, cumsum(x, 0), x, 0, false, "cumsum " + name(dt));
      std::printf("  cumsum %s over 10^6: %lld of 10^6 elements differ from the CPU's\n", name(dt).c_str(),
                  static_cast<long long>(differ));
      expect_same_bits(cumsum(x.to(kGpu), 0), got, "cumsum " + name(dt) + ": a second run, the same bits");
      check_scan(values(dt, s, 0.999, 1.001, 7), 0, true, "cumprod " + name(dt));
    }
    check_scan(values(kFloat16, s, -1, 1, 8), 0, false, "cumsum float16 -> float32", kFloat32);
  });

  group("scan: every dtype, long lines along dim 1, dim 0 and strided", [] {
    for (ScalarType dt : kAll) {
      const bool fp8 = dt == kFloat8_e4m3fn || dt == kFloat8_e5m2;
      const int64_t n = fp8 ? 3000 : 20000;  // float8 prefixes stay in range
      const double lo = dt == kUInt8 ? 0 : -3, hi = 3;
      const Tensor rows = values(dt, {3, n}, lo, hi, 10);
      check_scan(rows, 1, false, "cumsum " + name(dt) + " [3, n] dim 1");
      check_scan(rows.t(), 0, false, "cumsum " + name(dt) + " transposed [n, 3] dim 0");
      check_scan(values(dt, {n, 3}, lo, hi, 11), 0, false, "cumsum " + name(dt) + " [n, 3] dim 0");
      const Tensor near1 = is_floating(dt) ? values(dt, {2, 1000}, 0.9, 1.1, 12) : values(dt, {2, 1000}, lo, hi, 12);
      check_scan(near1, 1, true, "cumprod " + name(dt) + " [2, 1000] dim 1");
    }
  });

  group("scan: many short lines give the CPU's bits", [] {
    for (ScalarType dt : kAll) {
      const Tensor x = values(dt, {3000, 50}, dt == kUInt8 ? 0 : -3, 3, 13);
      expect(make_scan_plan(3000, 50).chunks == 1, "one thread per line");
      expect_same_bits(cumsum(x.to(kGpu), 1), cumsum(x, 1), "cumsum " + name(dt) + " [3000, 50] dim 1");
      const Tensor xt = x.t();  // [50, 3000] dim 0: 3000 strided lines of 50
      expect_same_bits(cumsum(xt.to(kGpu), 0), cumsum(xt, 0), "cumsum " + name(dt) + " [50, 3000] dim 0");
      expect_same_bits(cumprod(xt.to(kGpu), 0), cumprod(xt, 0), "cumprod " + name(dt) + " [50, 3000] dim 0");
    }
  });

  group("scatter_add without atomics: a long 1-D line, the CPU's bits", [] {
    for (ScalarType dt : kNoAtomics) {
      const int64_t n = dt == kFloat16 ? 1000000 : 100000, size = 1000;
      const Tensor index = values(kInt64, {n}, -size, size - 1, 20);  // negatives count from the end
      const Tensor src = values(dt, {n}, dt == kUInt8 ? 0 : -2, 2, 21);
      const Tensor self = values(dt, {size}, dt == kUInt8 ? 0 : -2, 2, 22);
      expect_same_bits(scatter_add(self.to(kGpu), 0, index.to(kGpu), src.to(kGpu)), scatter_add(self, 0, index, src),
                       "scatter_add " + name(dt) + " 1-D, " + std::to_string(n) + " indices");
    }
  });

  group("ordered scatter under set_deterministic: the CPU's bits", [] {
    with_deterministic(true, [] {
      const int64_t n = 200000, size = 300;
      const Tensor index = values(kInt64, {n}, 0, size - 1, 23);
      for (ScalarType dt : kAtomics) {
        const Tensor src = values(dt, {n}, -2, 2, 24), self = values(dt, {size}, -2, 2, 25);
        expect_same_bits(scatter_add(self.to(kGpu), 0, index.to(kGpu), src.to(kGpu)),
                         scatter_add(self, 0, index, src), "scatter_add " + name(dt));
      }
      for (ScalarType dt : kAll) {  // duplicates: the last write in index order wins, as on the CPU
        const Tensor src = values(dt, {n}, dt == kUInt8 ? 0 : -100, 100, 26), self = values(dt, {size}, 0, 1, 27);
        expect_same_bits(scatter(self.to(kGpu), 0, index.to(kGpu), src.to(kGpu)), scatter(self, 0, index, src),
                         "scatter " + name(dt));
      }
      const Tensor self = values(kFloat32, {size}, 0, 1, 28);
      expect_same_bits(scatter(self.to(kGpu), 0, index.to(kGpu), Scalar(2.5)), scatter(self, 0, index, Scalar(2.5)),
                       "scatter float32, a value");
    });
  });

  group("ordered scatter: many lines, strided index, src and output", [] {
    with_deterministic(true, [] {
      for (ScalarType dt : {kBFloat16, kFloat32, kInt8}) {
        // index [5000, 64] along dim 0 into [300, 64]: 64 lines of 5000 (the index transposed).
        const Tensor index = values(kInt64, {64, 5000}, 0, 299, 30).t();
        const Tensor src = values(dt, {64, 5000}, -2, 2, 31).t();
        const Tensor base = values(dt, {64, 300}, -2, 2, 32);
        Tensor want = base.clone().t();
        scatter_add_(want, 0, index, src);
        Tensor out = base.to(kGpu).t();  // strided output, in place
        scatter_add_(out, 0, index.to(kGpu), src.to(kGpu));
        expect_same_bits(out, want, "scatter_add_ " + name(dt) + " strided, dim 0");
        const Tensor rows = values(kInt64, {40, 3000}, 0, 99, 33), rsrc = values(dt, {40, 3000}, -2, 2, 34);
        const Tensor rself = values(dt, {40, 100}, -2, 2, 35);
        expect_same_bits(scatter_add(rself.to(kGpu), 1, rows.to(kGpu), rsrc.to(kGpu)),
                         scatter_add(rself, 1, rows, rsrc), "scatter_add " + name(dt) + " [40, 3000] dim 1");
        const Tensor shorts = values(kInt64, {2000, 8}, 0, 7, 36), ssrc = values(dt, {2000, 8}, -2, 2, 37);
        const Tensor sself = values(dt, {2000, 8}, -2, 2, 38);
        expect_same_bits(scatter_add(sself.to(kGpu), 1, shorts.to(kGpu), ssrc.to(kGpu)),
                         scatter_add(sself, 1, shorts, ssrc), "scatter_add " + name(dt) + " short lines");
      }
    });
  });

  group("ordered scatter: a bad index in a long line is reported, the rest applied", [] {
    const int64_t n = 50000, size = 500;
    Tensor index = values(kInt64, {n}, 0, size - 1, 40);
    const Tensor src = values(kFloat16, {n}, -2, 2, 41), self = values(kFloat16, {size}, -2, 2, 42);
    // The bad index's element is left alone: the CPU's result without it.
    const Tensor good = cat({index.narrow(0, 0, 777), index.narrow(0, 778, n - 778)}, 0);
    const Tensor good_src = cat({src.narrow(0, 0, 777), src.narrow(0, 778, n - 778)}, 0);
    index[777].fill_(size);
    const Tensor got = scatter_add(self.to(kGpu), 0, index.to(kGpu), src.to(kGpu));
    expect_error("the bad index, at the next sync", [&] { cuda::synchronize(); });
    expect_same_bits(got, scatter_add(self, 0, good, good_src), "the other indices applied");
  });

  std::printf("test_cuda_scan_scatter: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
