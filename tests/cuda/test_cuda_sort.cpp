// sort, argsort, topk, unique, nonzero and masked_select on CUDA against the CPU kernels,
// bit for bit (Note [Sort keys]: the same order, ties in input order, NaN largest, -0.0
// equal to +0.0): every dtype, lines that are not powers of two, a long line, strided
// inputs, empty and 0-dim tensors, broadcast masks, and the errors. Own main (no Catch2):
// exits 77, which meson reports as SKIP, only on a machine without a GPU (gpu_skip.h).
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <mixt/mixt.h>

#include "gpu_checks.h"
#include "gpu_skip.h"
#include "gpu_tensors.h"

using namespace mixt;
using testing::expect;
using testing::expect_error;
using testing::expect_same_bits;
using testing::g_checks;
using testing::g_failures;
using testing::group;
using testing::kAll;
using testing::name;
using testing::values;

namespace {

const Device kGpu = Device::cuda(0);

// Values with many ties: whole numbers in [-5, 5] (floats too), and for floating dtypes
// some NaN, +-inf and -0.0 among them.
Tensor tied(ScalarType dt, const Shape& shape, uint64_t seed) {
  Tensor x = values(dt == kBool ? kBool : kInt64, shape, -5, 5, seed).to(kFloat64);
  if (is_floating(dt) && x.numel() >= 8) {
    double* p = static_cast<double*>(x.data_ptr());
    const double specials[] = {std::numeric_limits<double>::quiet_NaN(), -0.0, std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity(), 0.0, -std::numeric_limits<double>::quiet_NaN()};
    for (int64_t i = 0; i < x.numel(); i += 7) p[i] = specials[(i / 7) % 6];
  }
  return x.to(dt);
}

void check_sort(const Tensor& x, int64_t dim, bool descending, const std::string& what) {
  const ValuesIndices want = sort(x, dim, descending);
  const ValuesIndices got = sort(x.to(kGpu), dim, descending);
  expect_same_bits(got.values, want.values, what + " values");
  expect_same_bits(got.indices, want.indices, what + " indices");
  expect_same_bits(argsort(x.to(kGpu), dim, descending), want.indices, what + " argsort");
}

void check_topk(const Tensor& x, int64_t k, int64_t dim, bool largest, const std::string& what) {
  const ValuesIndices want = topk(x, k, dim, largest);
  const ValuesIndices got = topk(x.to(kGpu), k, dim, largest);
  expect_same_bits(got.values, want.values, what + " values");
  expect_same_bits(got.indices, want.indices, what + " indices");
}

void check_unique(const Tensor& x, const std::string& what) {
  const UniqueResult want = unique(x, true, true, true);
  const UniqueResult got = unique(x.to(kGpu), true, true, true);
  expect_same_bits(got.values, want.values, what + " values");
  expect_same_bits(got.inverse, want.inverse, what + " inverse");
  expect_same_bits(got.counts, want.counts, what + " counts");
  expect_same_bits(unique(x.to(kGpu)).values, want.values, what + " values alone");
}

}  // namespace

int main() {
  if (const int status = testing::cuda_unavailable_status("test_cuda_sort"); status >= 0) return status;

  group("sort: every dtype, [37, 300] along both dims, both directions", [] {
    for (ScalarType dt : kAll) {
      const Tensor x = tied(dt, {37, 300}, 1);
      for (int64_t dim : {0, 1})
        for (bool descending : {false, true})
          check_sort(x, dim, descending, "sort " + name(dt) + " dim " + std::to_string(dim) +
                                             (descending ? " descending" : ""));
    }
  });

  group("sort: a 70000-element line with ties, NaN, inf and -0.0", [] {
    for (ScalarType dt : {kFloat32, kBFloat16, kInt32}) {
      const Tensor x = tied(dt, {70000}, 2);
      check_sort(x, 0, false, "long " + name(dt));
      check_sort(x, 0, true, "long descending " + name(dt));
    }
    // Distinct values: a permutation, so the indices say exactly where each came from.
    const Tensor x = values(kFloat64, {5000}, -1, 1, 3);
    check_sort(x, 0, false, "distinct float64");
  });

  group("sort: strided, 3-D, length 1, 0-dim and empty inputs", [] {
    const Tensor a = tied(kFloat32, {64, 33}, 4);
    check_sort(a.t(), 1, false, "transposed");
    check_sort(a.t(), 0, true, "transposed along dim 0");
    check_sort(tied(kFloat16, {3, 17, 5}, 5), 1, false, "3-D middle dim");
    check_sort(tied(kInt64, {4, 1}, 6), 1, true, "lines of one");
    check_sort(full({}, 2.5), 0, false, "0-dim");
    check_sort(zeros({0, 5}), 1, false, "no lines");
    check_sort(zeros({5, 0}), 1, false, "empty lines");
  });

  group("topk: k of 0, 1, some and all; largest and smallest", [] {
    for (ScalarType dt : {kFloat32, kFloat16, kInt64, kUInt8, kBool}) {
      const Tensor x = tied(dt, {9, 41}, 7);
      for (int64_t k : {0, 1, 5, 41}) {
        check_topk(x, k, 1, true, "topk " + name(dt) + " k " + std::to_string(k));
        check_topk(x, k, 1, false, "topk smallest " + name(dt) + " k " + std::to_string(k));
      }
      check_topk(x, 3, 0, true, "topk dim 0 " + name(dt));
    }
  });

  group("unique: every dtype, a long input, NaN and -0.0, empty", [] {
    for (ScalarType dt : kAll) check_unique(tied(dt, {13, 29}, 8), "unique " + name(dt));
    check_unique(values(kInt64, {100000}, -300, 300, 9), "unique 10^5 int64");
    check_unique(tied(kFloat32, {20000}, 10), "unique 2*10^4 float32 with specials");
    check_unique(zeros({0}), "unique empty");
    check_unique(full({}, 3.0), "unique 0-dim");
  });

  group("nonzero: every dtype, 1-D to 3-D, 0-dim, none selected", [] {
    for (ScalarType dt : kAll) {
      const Tensor x = tied(dt, {7, 11, 13}, 11);
      expect_same_bits(nonzero(x.to(kGpu)), nonzero(x), "nonzero " + name(dt));
    }
    const Tensor v = tied(kFloat32, {1000}, 12);
    expect_same_bits(nonzero(v.to(kGpu)), nonzero(v), "nonzero 1-D");
    expect_same_bits(nonzero(full({}, 1.0).to(kGpu)), nonzero(full({}, 1.0)), "nonzero 0-dim");
    expect_same_bits(nonzero(zeros({4, 5}).to(kGpu)), nonzero(zeros({4, 5})), "nonzero of zeros");
    expect_same_bits(nonzero(tied(kInt32, {6, 8}, 13).t().to(kGpu)), nonzero(tied(kInt32, {6, 8}, 13).t()),
                     "nonzero of a transposed input");
  });

  group("masked_select: every dtype, broadcast masks, nothing selected", [] {
    for (ScalarType dt : kAll) {
      const Tensor x = tied(dt, {7, 13}, 14), mask = values(kBool, {7, 13}, 0, 1, 15);
      expect_same_bits(masked_select(x.to(kGpu), mask.to(kGpu)), masked_select(x, mask), "masked_select " + name(dt));
    }
    const Tensor x = tied(kFloat32, {7, 13}, 16), row = values(kBool, {1, 13}, 0, 1, 17),
                 col = values(kBool, {5, 1, 1}, 0, 1, 18);
    expect_same_bits(masked_select(x.to(kGpu), row.to(kGpu)), masked_select(x, row), "masked_select row mask");
    expect_same_bits(masked_select(x.to(kGpu), col.to(kGpu)), masked_select(x, col), "masked_select [5,1,1] mask");
    expect_same_bits(masked_select(x.t().to(kGpu), row.t().to(kGpu)), masked_select(x.t(), row.t()),
                     "masked_select transposed");
    const Tensor none = zeros({7, 13}, {.dtype = kBool});
    expect_same_bits(masked_select(x.to(kGpu), none.to(kGpu)), masked_select(x, none), "masked_select none");
  });

  group("errors: bad masks, k and dims raise mixt::Error", [] {
    const Tensor x = tied(kFloat32, {4, 6}, 19).to(kGpu);
    expect_error("masked_select with a float mask", [&] { masked_select(x, ones({4, 6}).to(kGpu)); });
    expect_error("masked_select with a mask that does not broadcast",
                 [&] { masked_select(x, ones({5}, {.dtype = kBool}).to(kGpu)); });
    expect_error("masked_select with the mask on the CPU", [&] { masked_select(x, ones({4, 6}, {.dtype = kBool})); });
    expect_error("topk with k beyond the dim", [&] { topk(x, 7, 1); });
    expect_error("topk with a negative k", [&] { topk(x, -1, 1); });
    expect_error("sort along dim 2 of a 2-D tensor", [&] { sort(x, 2); });
  });

  std::printf("test_cuda_sort: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
