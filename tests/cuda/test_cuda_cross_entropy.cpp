// cross_entropy_rows and cross_entropy_rows_backward on CUDA (Note [Fused cross-entropy])
// against a float64 reference built from other ops (log_softmax, gather, weighted sums;
// its gradient by autograd) and against the CPU kernels: float32, float64, float16 and
// bfloat16 logits, int64 and int32 targets, class weights, ignore_index (also one that
// names a class), label smoothing, C = 1, rows that fit the block's row cache and rows
// far longer (C = 9000 and 50000), strided logits, NaN and infinite rows, empty inputs,
// targets out of bounds (reported by the device, raised at the next wait), and cross_entropy
// (which runs on the rows) with its gradient against the CPU's. Own main
// (no Catch2): exits 77, which meson reports as SKIP, only on a machine without a GPU.
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <mixt/kernels/cuda/cross_entropy_launch.h>
#include <mixt/kernels/cuda/device_error.h>
#include <mixt/mixt.h>

#include "gpu_checks.h"
#include "gpu_skip.h"
#include "gpu_tensors.h"

using namespace mixt;
using nn::functional::cross_entropy;
using nn::functional::cross_entropy_rows;
using nn::functional::cross_entropy_rows_backward;
using nn::functional::CrossEntropyRows;
using nn::functional::log_softmax;
using testing::expect;
using testing::expect_error;
using testing::g_checks;
using testing::g_failures;
using testing::group;
using testing::name;
using testing::values;

namespace {

const Device kGpu = Device::cuda(0);
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// |got - want| <= rel |want| + abs elementwise (NaN where the reference has NaN, the same
// infinity where it has one), after
// checking got's dtype and shape; got may be on the GPU.
void expect_close(const Tensor& got_any, const Tensor& want_any, ScalarType dtype, double rel, double abs,
                  const std::string& what) {
  if (got_any.dtype() != dtype || got_any.sizes() != want_any.sizes()) {
    expect(false, what + ": got " + got_any.describe() + ", expected " + std::string(dtype_name(dtype)) + " of shape " +
                      want_any.describe());
    return;
  }
  const Tensor got = got_any.cpu().to(kFloat64).contiguous(), want = want_any.detach().to(kFloat64).contiguous();
  const double *g = got.data_ptr<double>(), *w = want.data_ptr<double>();
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const bool ok = std::isnan(w[i])   ? std::isnan(g[i])
                    : std::isinf(w[i]) ? g[i] == w[i]
                                       : std::fabs(g[i] - w[i]) <= rel * std::fabs(w[i]) + abs;
    if (!ok && bad++ == 0) first = i;
  }
  expect(bad == 0, what + ": " + std::to_string(bad) + " of " + std::to_string(want.numel()) + " elements off, the first at " +
                       std::to_string(first) + (first >= 0 ? " (got " + std::to_string(g[first]) + ", expected " +
                                                                 std::to_string(w[first]) + ")"
                                                           : std::string()));
}

// The tolerances of a result computed in the logits' compute type (float, or double for
// float64) and stored in `stored`: relative, and absolute (for the cancellation at the
// target's gradient and the rounding of small values).
struct Tolerance {
  double rel, abs;
};
Tolerance tolerance(ScalarType compute, ScalarType stored) {
  if (compute == kFloat64) return {1e-12, 1e-13};
  if (stored == kFloat16) return {1.0e-3, 2e-6};
  if (stored == kBFloat16) return {8.0e-3, 2e-6};
  return {4e-6, 2e-6};
}

struct Reference {
  Tensor loss, lse, grad;  // float64, on the CPU
};

// The float64 reference of one call: loss_i = (1 - eps) w_t (-log p_t) + (eps / C) sum of
// w_c (-log p_c), 0 where the target is ignore_index; the gradient of sum of g_i loss_i by
// autograd through log_softmax.
Reference reference(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index, double eps,
                    const Tensor& g) {
  const int64_t rows = x.size(0), classes = x.size(1);
  const Tensor t = target.to(kInt64).contiguous();
  std::vector<int64_t> safe(static_cast<size_t>(rows));
  std::vector<double> keep(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t v = t.data_ptr<int64_t>()[i];
    const bool ignored = v == ignore_index;
    safe[static_cast<size_t>(i)] = ignored ? 0 : v;
    keep[static_cast<size_t>(i)] = ignored ? 0.0 : 1.0;
  }
  Tensor safe_t = empty({rows}, {.dtype = kInt64}), keep_t = empty({rows}, {.dtype = kFloat64});
  for (int64_t i = 0; i < rows; ++i) {
    safe_t.data_ptr<int64_t>()[i] = safe[static_cast<size_t>(i)];
    keep_t.data_ptr<double>()[i] = keep[static_cast<size_t>(i)];
  }
  Tensor xd = x.detach().to(kFloat64).contiguous();
  xd.requires_grad_();
  const Tensor w = weight.defined() ? weight.to(kFloat64) : ones({classes}, {.dtype = kFloat64});
  const Tensor logp = log_softmax(xd, 1);
  const Tensor picked = squeeze(gather(logp, 1, unsqueeze(safe_t, 1)), {1});
  const Tensor nll = mul(mul(picked, index_select(w, 0, safe_t)), -(1.0 - eps));
  const Tensor smooth = mul(sum(mul(logp, w), {1}), -eps / static_cast<double>(classes));
  const Tensor loss = mul(add(nll, smooth), keep_t);
  sum(mul(loss, g.to(kFloat64))).backward();
  return {loss.detach(), logsumexp(xd.detach(), {1}), xd.grad()};
}

struct Case {
  ScalarType dtype = kFloat32;
  int64_t rows = 37, classes = 300;
  bool weight = false;
  int64_t ignore_index = -100;
  double eps = 0;
  ScalarType target_dtype = kInt64;
  bool transposed = false;  // logits as the transpose of a [C, N] tensor
  uint64_t seed = 1;
};

std::string describe(const Case& k) {
  return name(k.dtype) + " [" + std::to_string(k.rows) + ", " + std::to_string(k.classes) + "]" +
         (k.weight ? " weight" : "") + " ignore " + std::to_string(k.ignore_index) + " eps " + std::to_string(k.eps) +
         " " + name(k.target_dtype) + (k.transposed ? " transposed" : "");
}

// Runs one case on the GPU and checks it against the reference and, when `cpu`, the CPU kernels.
void check_case(const Case& k, bool cpu = true) {
  const std::string what = describe(k);
  const ScalarType acc = k.dtype == kFloat64 ? kFloat64 : kFloat32;
  const Tensor x = k.transposed ? values(k.dtype, {k.classes, k.rows}, -6, 6, k.seed).t()
                                : values(k.dtype, {k.rows, k.classes}, -6, 6, k.seed);
  Tensor target = values(kInt64, {k.rows}, 0, static_cast<double>(k.classes - 1), k.seed + 1);
  // Every fifth row (and the first) ignored when ignore_index is not a class; a class
  // ignore_index is met wherever the random targets name it.
  if (k.ignore_index < 0)
    for (int64_t i = 0; i < k.rows; i += 5) target.data_ptr<int64_t>()[i] = k.ignore_index;
  target = target.to(k.target_dtype);
  const Tensor weight = k.weight ? values(acc, {k.classes}, 0.25, 2, k.seed + 2) : Tensor();
  const Tensor g = values(acc, {k.rows}, -2, 2, k.seed + 3);
  const Reference ref = reference(x, target, weight, k.ignore_index, k.eps, g);

  const Tensor xg = x.to(kGpu), tg = target.to(kGpu), wg = weight.defined() ? weight.to(kGpu) : Tensor();
  const CrossEntropyRows got = cross_entropy_rows(xg, tg, wg, k.ignore_index, k.eps);
  const Tensor grad = cross_entropy_rows_backward(g.to(kGpu), xg, tg, got.lse, wg, k.ignore_index, k.eps);
  const Tolerance row_tol = tolerance(acc, acc), grad_tol = tolerance(acc, k.dtype);
  expect_close(got.loss, ref.loss, acc, row_tol.rel, row_tol.abs, what + ": loss");
  expect_close(got.lse, ref.lse, acc, row_tol.rel, row_tol.abs, what + ": lse");
  expect_close(grad, ref.grad, k.dtype, grad_tol.rel, grad_tol.abs, what + ": gradient");
  if (!cpu) return;
  const CrossEntropyRows want = cross_entropy_rows(x, target, weight, k.ignore_index, k.eps);
  const Tensor want_grad = cross_entropy_rows_backward(g, x, target, want.lse, weight, k.ignore_index, k.eps);
  expect_close(got.loss, want.loss, acc, row_tol.rel, row_tol.abs, what + ": loss against the CPU");
  expect_close(got.lse, want.lse, acc, row_tol.rel, row_tol.abs, what + ": lse against the CPU");
  expect_close(grad, want_grad, k.dtype, grad_tol.rel, grad_tol.abs, what + ": gradient against the CPU");
}

const ScalarType kDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16};

}  // namespace

int main() {
  group("target_kind: classes, ignore_index (even a class), out of bounds", [] {
    using cuda::TargetKind;
    expect(cuda::target_kind(0, 5, -100) == TargetKind::Class, "0 is a class");
    expect(cuda::target_kind(4, 5, -100) == TargetKind::Class, "C - 1 is a class");
    expect(cuda::target_kind(-100, 5, -100) == TargetKind::Ignored, "ignore_index");
    expect(cuda::target_kind(3, 5, 3) == TargetKind::Ignored, "ignore_index naming a class");
    expect(cuda::target_kind(5, 5, -100) == TargetKind::OutOfBounds, "C");
    expect(cuda::target_kind(-1, 5, -100) == TargetKind::OutOfBounds, "-1 (no wrapping)");
    expect(cuda::target_kind(0, 1, -100) == TargetKind::Class, "C = 1");
    const std::string text = cuda::device_error_text(cuda::DeviceError::CrossEntropyTargetOutOfBounds);
    expect(text.find("cross_entropy") != std::string::npos, "the device error names cross_entropy: " + text);
  });

  if (const int status = testing::cuda_unavailable_status("test_cuda_cross_entropy"); status >= 0) return status;

  group("every dtype: plain, weight + ignore + smoothing, int32", [] {
    for (ScalarType dt : kDtypes) {
      check_case({.dtype = dt, .seed = 10});
      check_case({.dtype = dt, .weight = true, .eps = 0.1, .seed = 11});
      check_case({.dtype = dt, .rows = 29, .classes = 77, .eps = 0.2, .target_dtype = kInt32, .seed = 12});
      check_case({.dtype = dt, .rows = 40, .classes = 9, .weight = true, .ignore_index = 3, .eps = 0.05, .seed = 13});
    }
  });

  group("C = 1, strided logits, label_smoothing 1, empty", [] {
    for (ScalarType dt : {kFloat32, kFloat16}) {
      check_case({.dtype = dt, .rows = 17, .classes = 1, .seed = 20});
      check_case({.dtype = dt, .rows = 17, .classes = 1, .weight = true, .eps = 0.3, .seed = 21});
    }
    check_case({.dtype = kFloat32, .rows = 33, .classes = 65, .weight = true, .eps = 0.1, .transposed = true, .seed = 22});
    check_case({.dtype = kBFloat16, .rows = 33, .classes = 65, .target_dtype = kInt32, .transposed = true, .seed = 23});
    check_case({.dtype = kFloat64, .rows = 12, .classes = 40, .weight = true, .eps = 1.0, .seed = 24});
    const CrossEntropyRows none = cross_entropy_rows(zeros({0, 5}).to(kGpu), zeros({0}, {.dtype = kInt64}).to(kGpu));
    expect(none.loss.sizes() == Shape{0} && none.lse.sizes() == Shape{0} && none.loss.dtype() == kFloat32,
           "no rows: empty loss and lse");
    const Tensor none_grad = cross_entropy_rows_backward(zeros({0}).to(kGpu), zeros({0, 5}).to(kGpu),
                                                         zeros({0}, {.dtype = kInt64}).to(kGpu), zeros({0}).to(kGpu));
    expect(none_grad.sizes() == (Shape{0, 5}), "no rows: an empty gradient");
  });

  group("rows longer than the row cache: C = 9000, 5000 (float64), 50000", [] {
    check_case({.dtype = kFloat32, .rows = 6, .classes = 9000, .weight = true, .eps = 0.1, .seed = 30});
    check_case({.dtype = kFloat64, .rows = 5, .classes = 5000, .weight = true, .eps = 0.2, .seed = 31});
    check_case({.dtype = kFloat32, .rows = 3, .classes = 50000, .weight = true, .eps = 0.1, .target_dtype = kInt32,
                .seed = 32});
    check_case({.dtype = kBFloat16, .rows = 3, .classes = 50000, .seed = 33});
    check_case({.dtype = kFloat16, .rows = 2, .classes = 50000, .weight = true, .eps = 0.05, .seed = 34});
  });

  group("NaN and infinite rows: NaN loss and lse, as the CPU's", [] {
    Tensor x = values(kFloat32, {6, 20}, -3, 3, 40);
    float* p = x.data_ptr<float>();
    p[0 * 20 + 7] = static_cast<float>(kNaN);
    p[1 * 20 + 3] = static_cast<float>(kInf);
    for (int j = 0; j < 20; ++j) p[2 * 20 + j] = static_cast<float>(-kInf);
    p[3 * 20 + 5] = static_cast<float>(-kInf);  // one -inf among finite values: the smoothing term is +inf
    Tensor target = values(kInt64, {6}, 0, 19, 41);
    target.data_ptr<int64_t>()[4] = -100;
    const CrossEntropyRows got = cross_entropy_rows(x.to(kGpu), target.to(kGpu), Tensor(), -100, 0.1);
    const CrossEntropyRows want = cross_entropy_rows(x, target, Tensor(), -100, 0.1);
    expect_close(got.loss, want.loss, kFloat32, 4e-6, 2e-6, "special rows: loss");
    expect_close(got.lse, want.lse, kFloat32, 4e-6, 2e-6, "special rows: lse");
    const Tensor loss = got.loss.cpu();
    expect(std::isnan(loss.data_ptr<float>()[0]) && std::isnan(loss.data_ptr<float>()[1]) &&
               std::isnan(loss.data_ptr<float>()[2]) && loss.data_ptr<float>()[3] == static_cast<float>(kInf) &&
               std::isfinite(got.lse.cpu().data_ptr<float>()[3]),
           "NaN for NaN, +inf and all -inf rows; +inf (finite lse) with one -inf");
  });

  group("cross_entropy through the rows and autograd: CUDA against the CPU", [] {
    for (ScalarType dt : {kFloat32, kBFloat16, kFloat64}) {
      const ScalarType acc = dt == kFloat64 ? kFloat64 : kFloat32;
      const Tensor x = values(dt, {3, 40, 2}, -4, 4, 45);  // [N, C, d]: the class dim moves last
      Tensor t = values(kInt64, {3, 2}, 0, 39, 46);
      t.data_ptr<int64_t>()[1] = -100;
      const Tensor w = values(acc, {40}, 0.5, 2, 47);
      for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
        const std::string what = "cross_entropy " + name(dt) + " reduction " + std::to_string(static_cast<int>(r));
        Tensor xc = x.detach(), xg = x.to(kGpu);
        xc.requires_grad_();
        xg.requires_grad_();
        const Tensor lc = cross_entropy(xc, t, w, -100, r, 0.1);
        const Tensor lg = cross_entropy(xg, t.to(kGpu), w.to(kGpu), -100, r, 0.1);
        const Tolerance row_tol = tolerance(acc, dt), grad_tol = tolerance(acc, dt);
        expect_close(lg, lc.detach(), dt, row_tol.rel, row_tol.abs, what + ": loss");
        sum(lc).backward();
        sum(lg).backward();
        expect_close(xg.grad(), xc.grad(), dt, grad_tol.rel, grad_tol.abs, what + ": gradient");
      }
    }
  });

  group("targets out of bounds: mixt::Error at the next wait, once", [] {
    const Tensor x = values(kFloat32, {8, 30}, -2, 2, 50).to(kGpu);
    for (ScalarType td : {kInt64, kInt32})
      for (int64_t bad : {int64_t{30}, int64_t{-1}, int64_t{1} << 40}) {
        if (td == kInt32 && bad > 30) continue;
        const std::string what = "target " + std::to_string(bad) + " as " + name(td);
        Tensor t = values(kInt64, {8}, 0, 29, 51);
        t.data_ptr<int64_t>()[5] = bad;
        const Tensor tg = t.to(td).to(kGpu);
        const CrossEntropyRows r = cross_entropy_rows(x, tg);
        expect_error(what + ": forward", [] { cuda::synchronize(); });
        cuda::synchronize();  // the word was cleared: nothing more to raise
        expect(true, what + ": the error raised once");
        const Tensor grad = cross_entropy_rows_backward(ones({8}).to(kGpu), x, tg, r.lse);
        expect_error(what + ": backward", [&] { grad.cpu(); });
        const Tensor loss = r.loss.cpu(), gx = grad.cpu();
        expect(std::isnan(loss.data_ptr<float>()[5]) && std::isnan(gx.data_ptr<float>()[5 * 30]) &&
                   std::isfinite(loss.data_ptr<float>()[4]),
               what + ": the bad row is NaN, the others computed");
      }
    // Through cross_entropy: the call itself does not wait for the device (no sync per loss);
    // the kernel's finding raises at the next wait.
    {
      Tensor t = zeros({8}, {.dtype = kInt64});
      t.data_ptr<int64_t>()[3] = 31;
      bool raised_at_call = false;
      try {
        (void)nn::functional::cross_entropy(x, t.to(kGpu));
      } catch (const Error&) {
        raised_at_call = true;
      }
      expect(!raised_at_call, "cross_entropy with a bad target does not wait for the device at the call");
      expect_error("cross_entropy with a bad target: at the next wait", [] { cuda::synchronize(); });
    }
    // The error names the kernel's finding.
    Tensor t = zeros({8}, {.dtype = kInt64});
    t.data_ptr<int64_t>()[0] = 99;
    (void)cross_entropy_rows(x, t.to(kGpu));
    try {
      cuda::synchronize();
      expect(false, "a bad target: no error");
    } catch (const Error& e) {
      expect(std::string(e.what()).find("cross_entropy") != std::string::npos,
             std::string("the message names cross_entropy: ") + e.what());
    }
  });

  group("bad inputs raise mixt::Error at the call", [] {
    const Tensor x = values(kFloat32, {4, 6}, -2, 2, 60).to(kGpu);
    const Tensor t = zeros({4}, {.dtype = kInt64}).to(kGpu);
    expect_error("a float target", [&] { cross_entropy_rows(x, zeros({4}).to(kGpu)); });
    expect_error("a target of the wrong length", [&] { cross_entropy_rows(x, zeros({5}, {.dtype = kInt64}).to(kGpu)); });
    expect_error("a float64 weight for float32 logits",
                 [&] { cross_entropy_rows(x, t, ones({6}, {.dtype = kFloat64}).to(kGpu)); });
    expect_error("a weight on the CPU", [&] { cross_entropy_rows(x, t, ones({6})); });
    expect_error("1-D logits", [&] { cross_entropy_rows(zeros({6}).to(kGpu), t); });
    expect_error("label_smoothing above 1", [&] { cross_entropy_rows(x, t, Tensor(), -100, 1.5); });
    expect_error("a float16 lse for the backward",
                 [&] { cross_entropy_rows_backward(ones({4}).to(kGpu), x, t, zeros({4}, {.dtype = kFloat16}).to(kGpu)); });
  });

  std::printf("test_cuda_cross_entropy: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
