// Tensors larger than one multi-tensor chunk (kChunk = 65,536 elements) and than
// one parallel grain (kParallelGrain = 32,768; loops split at twice that), with
// odd remainders, so the chunked and multi-threaded paths of every CPU kernel
// that has them run: the fused optimizer steps, unscale + inf check, softmax,
// the norms, im2col/col2im and convolution, reductions (split ranges, many
// outputs, both memory orders), scans, index ops, elementwise loops, matmul,
// factories and conversions. Every element is compared with the double
// references of tests/support (exactly, or within the ulps of Note [Tolerances
// in ulps]). meson runs this suite with OMP_NUM_THREADS=2.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <omp.h>

#include <mixt/mixt.h>

#include "op_case_builder.h"
#include "reference_nn.h"
#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
namespace F = mixt::nn::functional;
namespace nnf = mixt::nn::functional;
using ref::Ref;
using Vec = std::vector<double>;

namespace {

// Sizes past the chunk and grain boundaries with odd remainders: 2 chunks + 12,345 elements, and a
// prime just above 3 grains.
constexpr int64_t kChunks = 2 * 65536 + 12345;
constexpr int64_t kOdd = 100003;

// The values of a tensor with its sizes.
Ref ref_of(const Tensor& t) { return {t.sizes().vec(), t.to_vector<double>()}; }

// Checks every element of `got` against `want` (compare_with_reference: the first mismatch is reported).
void check_all(const Tensor& got, const Ref& want, const Tolerance& tol) {
  const std::string why = compare_with_reference(got, want, tol);
  INFO(got.describe() << ": " << why);
  CHECK(why.empty());
}

// Rounds x to dt: how a parameter of dt is stored after each optimizer step.
std::function<double(double)> store_in(ScalarType dt) {
  return [dt](double x) { return round_to(dt, x); };
}

}  // namespace

TEST_CASE("the large-tensor suite runs with more than one OpenMP thread", "[large]") {
  // meson sets OMP_NUM_THREADS=2: without a second thread the threaded paths below would not run.
  REQUIRE(omp_get_max_threads() >= 2);
}

TEST_CASE("fused Adam and SGD steps across chunks and threads", "[large][optim]") {
  // One parameter of 2 chunks + a remainder, one of 3 elements and one just above a chunk, in one call:
  // the chunk list interleaves tensors, and the threads split it.
  const std::vector<int64_t> sizes{kChunks, 3, 65537};
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    const ScalarType work = dt == kFloat64 ? kFloat64 : kFloat32;
    std::vector<Tensor> params, grads, m, v, vmax, steps, bufs, sgd_steps, sgd_params;
    for (size_t i = 0; i < sizes.size(); ++i) {
      params.push_back(data(dt, {sizes[i]}, -1, 1, static_cast<uint32_t>(70 + i)));
      grads.push_back(data(dt, {sizes[i]}, -1, 1, static_cast<uint32_t>(80 + i)));
      for (auto* st : {&m, &v, &vmax, &bufs}) st->push_back(zeros({sizes[i]}, {.dtype = work}));
      steps.push_back(zeros({}, {.dtype = kFloat32}));
      sgd_steps.push_back(zeros({}, {.dtype = kFloat32}));
      sgd_params.push_back(params.back().clone());
    }
    std::vector<Ref> start;
    for (const Tensor& p : params) start.push_back(ref_of(p));
    const Tensor go = zeros({}, {.dtype = kFloat32}), skip = full({}, 1.0, {.dtype = kFloat32});
    const optim::fused::AdamHyper adam{.lr = 0.05, .weight_decay = 0.1, .amsgrad = true, .decoupled = true};
    const optim::fused::SgdHyper sgd{.lr = 0.1, .momentum = 0.9, .dampening = 0.5, .weight_decay = 0.1};
    for (int t = 0; t < 2; ++t) {
      optim::fused::adam_step_(params, grads, m, v, vmax, steps, go, adam);
      optim::fused::sgd_step_(sgd_params, grads, bufs, sgd_steps, go, sgd);
    }
    // A predicated step with found_inf set changes nothing (step counters included).
    optim::fused::adam_step_(params, grads, m, v, vmax, steps, skip, adam);
    CHECK(steps[0].item<double>() == 2);
    // Tolerance as the adam_step_ case (op_cases_amp.cpp): one ulp of the dtype at the first step's stored
    // value (a near-tie may round the other way), half an ulp for the last rounding, a dozen float32
    // (float64) operations at |p| <= 1.
    const Tolerance tol{0.5, 12, 1};
    const auto ulp = [dt](double x) { return ulp_of(dt, x); };
    for (size_t i = 0; i < sizes.size(); ++i) {
      INFO("parameter " << i << " of " << sizes[i] << " elements");
      const ref::AdamState a{{.lr = 0.05, .weight_decay = 0.1, .amsgrad = true, .decoupled = true}};
      const ref::SgdState s{{.lr = 0.1, .momentum = 0.9, .dampening = 0.5, .weight_decay = 0.1}};
      const Vec g = ref_of(grads[i]).v;
      check_all(params[i], ref::steps_in_dtype(a, start[i], g, 2, store_in(dt), ulp), tol);
      check_all(sgd_params[i], ref::steps_in_dtype(s, start[i], g, 2, store_in(dt), ulp), tol);
    }
  }
}

TEST_CASE("unscale and inf check across chunks and threads", "[large][amp]") {
  for (ScalarType dt : {kFloat16, kBFloat16, kFloat32, kFloat64}) {
    INFO(dtype_name(dt));
    // A dense gradient of 2 chunks + a remainder, a strided one (a transposed view), a small one.
    const Tensor a = data(dt, {kChunks}, -8, 8, 90), s = data(dt, {301, 333}, -8, 8, 91).t(), c = data(dt, {5}, -8, 8, 92);
    const Ref ra = ref_of(a), rs = ref_of(s), rc = ref_of(c);
    const Tensor inv = full({}, 1.0 / 65536, {.dtype = kFloat32});
    const auto unscaled = [dt](const Ref& r) {  // x * 2^-16, rounded (float16 results may be subnormal)
      return ref::map(r, [dt](double x) { return round_to(dt, x / 65536); });
    };
    Tensor found = zeros({}, {.dtype = kFloat32});
    amp::unscale_check_({{a, s, c}}, found, inv);
    CHECK(found.item<double>() == 0);
    check_all(a, unscaled(ra), kExact);
    check_all(s, unscaled(rs), kExact);
    check_all(c, unscaled(rc), kExact);
    // One Inf in the last chunk of the big gradient (the second thread's part): found, and the others
    // are still unscaled.
    Tensor b = data(dt, {kChunks}, -8, 8, 93);
    b.select(0, kChunks - 7).fill_(INFINITY);
    const Ref rb = ref_of(b);
    amp::unscale_check_({{b}}, found, inv);
    CHECK(found.item<double>() == 1);
    check_all(b, unscaled(rb), kExact);
  }
}

TEST_CASE("softmax, log_softmax and the norms over many rows and long rows", "[large][nn]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    // 1001 rows of 67 (rows split across threads), along the last dim and along dim 0.
    const Tensor x = data(dt, {1001, 67}, -3, 3, 100);
    const Ref rx = ref_of(x);
    const Tolerance sm{0.5, 9};  // as the softmax cases: |x - m| <= 6, plus three roundings
    check_all(nnf::softmax(x, 1), ref::softmax(rx, 1, false), sm);
    check_all(nnf::softmax(x, 0), ref::softmax(rx, 0, false), sm);
    check_all(nnf::log_softmax(x, 1), ref::softmax(rx, 1, true), {0.5, 3, 9});
    // One line of 100003 values. Its sums differ from the reference's by their double roundings:
    // the kernel's (32 slots, kOdd / 32 + 5 roundings) and the reference's (in index order, kOdd),
    // relative to the sum of |terms|; they matter in float64 only.
    const double line_sums = kOdd + kOdd / 32.0 + 5;
    const Tensor line = data(dt, {kOdd}, -3, 3, 101);
    check_all(nnf::softmax(line, 0), ref::softmax(ref_of(line), 0, false), {0.5, 9 + line_sums});
    // layer_norm / rms_norm: statistics and output in double, one rounding.
    const Tensor w = data(dt, {67}, 0.5, 1.5, 102), b = data(dt, {67}, -1, 1, 103);
    const Tolerance in_double{0.5, 8, 4, kFloat64};
    check_all(nnf::layer_norm(x, {67}, w, b, 1e-5), ref::layer_norm(rx, 67, ref_of(w).v, ref_of(b).v, 1e-5), in_double);
    check_all(nnf::rms_norm(x, {67}, w, 1e-5), ref::rms_norm(rx, 67, ref_of(w).v, 1e-5), in_double);
    check_all(nnf::layer_norm(line, {kOdd}), ref::layer_norm(ref_of(line), kOdd, {}, {}, 1e-5),
              {0.5, 8 + line_sums, 4, kFloat64});
  }
}

TEST_CASE("im2col, col2im and convolution over many planes", "[large][conv]") {
  for (ScalarType dt : {kFloat32, kBFloat16}) {
    INFO(dtype_name(dt));
    // 4 x 8 planes of 34 x 35 (37,000 values); a 3 x 3 window: 9 * 32 * 33 taps per plane.
    const Tensor x = data(dt, {4, 8, 34, 35}, -2, 2, 110);
    const Ref rx = ref_of(x);
    const ref::ConvGeom g{.sh = 1, .sw = 1, .ph = 0, .pw = 1, .dh = 1, .dw = 1};
    const Tensor cols = nnf::im2col(x, {3, 3}, {1, 1}, {0, 1}, {1, 1});
    check_all(cols, ref::im2col(rx, 3, 3, g), kExact);
    // col2im sums up to 9 overlapping taps in double and rounds once.
    check_all(nnf::col2im(cols, {34, 35}, {3, 3}, {1, 1}, {0, 1}, {1, 1}), ref::col2im(ref_of(cols), 34, 35, 3, 3, g),
              {0.5, 9, 18, kFloat64});
    // conv2d: 8 * 9 = 72 taps of |x w| <= 2, then the bias (as the conv cases).
    const Tensor w = data(dt, {6, 8, 3, 3}, -1, 1, 111), b = data(dt, {6}, -1, 1, 112);
    check_all(nnf::conv2d(x, w, b, {1, 1}, {0, 1}), ref::conv2d(rx, ref_of(w), ref_of(b).v, g), {0.5, 73, 145});
  }
}

TEST_CASE("reductions: split ranges, many outputs and both memory orders", "[large][reduce]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    // Sums in double, rounded once (compute float64); `work` counts double additions at sum |x|.
    const auto dbl = [](double work, double magnitude) { return Tolerance{0.5, work, magnitude, kFloat64}; };
    // A full reduction of 100003 values: the range is split across threads and the partials merged.
    const Tensor x = data(dt, {kOdd}, -3, 3, 120);
    const Ref rx = ref_of(x);
    check_all(sum(x), ref::sum(rx), dbl(kOdd, 3 * kOdd));
    check_all(mean(x), ref::mean(rx), dbl(kOdd, 3));
    check_all(var(x), ref::var(rx, {}, 1.0), dbl(4 * kOdd, 9));
    check_all(mixt::std(x), ref::std_dev(rx, {}, 1.0), dbl(4 * kOdd, 3));
    check_all(norm(x), ref::norm(rx, 2.0), dbl(kOdd, 0));
    check_all(norm(x, 3.0), ref::norm(rx, 3.0), dbl(4 * kOdd, 0));
    check_all(norm(x, INFINITY), ref::norm(rx, INFINITY), kExact);
    check_all(logsumexp(x, {0}), ref::logsumexp(rx, {0}), dbl(kOdd, 0));
    check_all(amax(x), ref::amax(rx), kExact);
    check_all(argmax(x), ref::max_dim(rx, 0, false).indices, kExact);  // the first maximum (ties in bfloat16)
    check_all(argmin(x), ref::max_dim(rx, 0, false, false).indices, kExact);
    const Tensor near_one = data(dt, {kOdd}, 0.9999, 1.0001, 121);
    check_all(prod(near_one), ref::prod(ref_of(near_one)), dbl(kOdd, 0));
    // Many outputs: rows (parallel over outputs) and columns (a block of outputs per pass).
    const Tensor m = data(dt, {1001, 257}, -3, 3, 122);
    const Ref rm = ref_of(m);
    for (int64_t d : {0, 1}) {
      INFO("dim " << d);
      check_all(sum(m, {d}), ref::sum(rm, {d}), dbl(1001, 3 * 1001));
      check_all(var(m, {d}), ref::var(rm, {d}, 1.0), dbl(4 * 1001, 9));
      check_all(amax(m, {d}), ref::amax(rm, {d}), kExact);
      check_all(max(m, d).indices, ref::max_dim(rm, d, false).indices, kExact);
      check_all(sum(m.t(), {1 - d}), ref::sum(rm, {d}), dbl(1001, 3 * 1001));  // the other memory order
    }
    check_all(any(gt(m, 2.5)), ref::any(ref::map(rm, [](double v) { return v > 2.5 ? 1.0 : 0.0; })), kExact);
    check_all(all(gt(m, -3.5), {1}), ref::all(ref::map(rm, [](double v) { return v > -3.5 ? 1.0 : 0.0; }), {1}), kExact);
  }
}

TEST_CASE("scans, index ops, factories and conversions over many lines", "[large][scan][index]") {
  for (ScalarType dt : {kFloat32, kBFloat16}) {
    INFO(dtype_name(dt));
    const Tensor x = data(dt, {1001, 67}, -3, 3, 130);
    const Ref rx = ref_of(x);
    const Tolerance scan{0.5, 1001, 3 * 1001, kFloat64};  // running sums in double, each output rounded once
    check_all(cumsum(x, 1), ref::scan(rx, 1, false), scan);
    check_all(cumsum(x, 0), ref::scan(rx, 0, false), scan);
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < 1500; ++i) idx.push_back((i * 7919) % 1001);
    const Tensor index = from_vector(idx);
    check_all(index_select(x, 0, index), ref::index_select(rx, 0, ref_of(index)), kExact);
    std::vector<int64_t> cols(1001 * 67);
    for (size_t i = 0; i < cols.size(); ++i) cols[i] = static_cast<int64_t>((i * 31) % 67);
    const Tensor gidx = from_vector(cols, {1001, 67});
    check_all(gather(x, 1, gidx), ref::gather(rx, 1, ref_of(gidx)), kExact);
    // Lines of a strided input (index_select of a transposed view), embedding rows, scatters along dim 1:
    // the rows are permuted (scatter: no duplicates) or folded onto 13 columns (scatter_add, each addition
    // rounded to the dtype in index order, as the reference rounds).
    check_all(index_select(x.t(), 1, index), ref::index_select(ref::transpose(rx, 0, 1), 1, ref_of(index)), kExact);
    check_all(F::embedding(index.view({30, 50}), x), ref::embedding(rx, ref_of(index.view({30, 50}))), kExact);
    std::vector<int64_t> perm(1001 * 67), fold(1001 * 67);
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>((i % 67 * 5 + i / 67) % 67), fold[i] = (i * 7) % 13;
    const Tensor pidx = from_vector(perm, {1001, 67}), fidx = from_vector(fold, {1001, 67});
    const Tensor src = data(dt, {1001, 67}, -3, 3, 132);
    check_all(scatter(x, 1, pidx, src), ref::scatter(rx, 1, ref_of(pidx), ref_of(src)), kExact);
    check_all(scatter_add(x, 1, fidx, src),
              ref::scatter_add(rx, 1, ref_of(fidx), ref_of(src), [dt](double v) { return round_to(dt, v); }), kExact);
    // Conversions and factories.
    const Tensor f = data(kFloat32, {kOdd}, -3, 3, 131);
    check_all(f.to(dt), ref::map(ref_of(f), [dt](double v) { return round_to(dt, v); }), kExact);
    check_all(arange(0, kOdd, 1, {.dtype = kFloat32}), ref::arange(0, kOdd, 1), kExact);
    // step = 2 / (n - 1) is rounded, and start + i * step carries i times its error: up to half an ulp of
    // the range 2 (the second half counts down from the end).
    check_all(linspace(-1, 1, kOdd, {.dtype = kFloat64}), ref::linspace(-1, 1, kOdd), {0.5, 1, 2});
    check_all(full({kChunks}, 0.1, {.dtype = dt}), ref::full({kChunks}, 0.1), kExact);
  }
}

TEST_CASE("elementwise loops: contiguous, broadcast and transposed operands", "[large][elementwise]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    const Tensor a = data(dt, {kOdd}, -3, 3, 140), b = data(dt, {kOdd}, -3, 3, 141);
    const Ref ra = ref_of(a), rb = ref_of(b);
    check_all(exp(a), ref::map(ra, [](double v) { return std::exp(v); }), kOneOp);
    check_all(add(a, b, 2), ref::zip(ra, rb, [](double u, double v) { return u + 2 * v; }), {0.5, 1, 9});
    Tensor c = a.clone();
    mul_(c, b);
    check_all(c, ref::zip(ra, rb, [](double u, double v) { return u * v; }), kExact);
    // [301, 333] + [333] broadcast, and a transposed [333, 301] operand.
    const Tensor m = data(dt, {301, 333}, -3, 3, 142), row = data(dt, {333}, -3, 3, 143);
    const Tensor mt = data(dt, {333, 301}, -3, 3, 144).t();
    const Ref rm = ref_of(m), rrow = ref_of(row), rmt = ref_of(mt);
    check_all(add(m, row), ref::zip(rm, rrow, [](double u, double v) { return u + v; }), kExact);
    check_all(sub(mt, m), ref::zip(rmt, rm, [](double u, double v) { return u - v; }), kExact);
    check_all(where(gt(m, 0), m, mt), ref::zip(rm, rmt, [](double u, double v) { return u > 0 ? u : v; }), kExact);
    check_all(addcmul(m, mt, row, 2), ref::zip3(rm, rmt, rrow, [](double u, double v, double w) { return u + 2 * v * w; }),
              {0.5, 3, 21});
    check_all(eq(m, mt), ref::zip(rm, rmt, [](double u, double v) { return u == v ? 1.0 : 0.0; }), kExact);
  }
}

TEST_CASE("matmul: row blocks and batches split across threads", "[large][matmul]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat64, kInt32}) {
    INFO(dtype_name(dt));
    // 301 x 203 @ 203 x 151: 9.2M multiply-adds, split by rows; a batch of 67 products of 33 x 33.
    const Tensor a = data(dt, {301, 203}, -2, 2, 150), b = data(dt, {203, 151}, -2, 2, 151);
    check_all(mm(a, b), ref::matmul(ref_of(a), ref_of(b)), {0.5, 203, 4 * 203});
    check_all(mm(b.t(), a.t()), ref::matmul(ref_of(b.t()), ref_of(a.t())), {0.5, 203, 4 * 203});
    const Tensor p = data(dt, {67, 33, 33}, -2, 2, 152), q = data(dt, {67, 33, 33}, -2, 2, 153);
    check_all(bmm(p, q), ref::matmul(ref_of(p), ref_of(q)), {0.5, 33, 4 * 33});
  }
}
