// mm, bmm, addmm, baddbmm, linear and linear_backward on the CPU. float32/float64 go to OpenBLAS (strided operands are
// passed without a copy when one of their strides is 1); bfloat16 goes to OpenBLAS's sbgemm on CPUs with AVX512-BF16
// (Note [bfloat16 GEMM on the CPU]); float16, fp8 and bfloat16 elsewhere are widened to float32, multiplied with sgemm
// (f32 accumulation) and rounded once; integers use an int64-accumulating loop. Everything accumulates into a
// contiguous buffer of the accumulate type that is then copied (and rounded) into the output. scaled_mm, the
// float8 GEMM with scales, is the CPU reference of its CUDA kernel (Note [Scaled mm]).
#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cblas.h>
#include <dlfcn.h>
#include <omp.h>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/gemm_key.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/common/matmul_plan.h>
#include <mixt/kernels/cpu/gemm_widening.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/matmul.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/kernels/cpu/vec/convert.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cpu {
namespace {

// Below this many multiply-adds per matrix, a batch is split across threads (each BLAS call stays on its thread).
constexpr int64_t kSmallGemm = 64 * 1024;
// Multiply-adds per thread the integer loop and the batch split aim for.
constexpr int64_t kWorkGrain = 32 * 1024;
// Products of at least this many multiply-adds are split by rows across threads.
constexpr int64_t kParallelGemm = 1 << 20;
// Column tile of the integer loop (the row accumulator stays in L1).
constexpr int64_t kIntTile = 256;

// An operand as BLAS reads it: row-major (or transposed) matrices `ld` elements apart, `batch_stride` between them.
struct BlasOperand {
  Tensor keep;  // the tensor the pointer refers to (a contiguous copy when the strides do not fit)
  const void* data = nullptr;
  int64_t batch_stride = 0;
  int64_t ld = 0;
  bool trans = false;
};

// Describes `t` ([B?, rows, cols]) for BLAS, copying it only when neither of its matrix strides is 1.
BlasOperand blas_operand(const OpCall& c, const Tensor& t) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  // The rule the CUDA engine uses too (row-major BLAS's transpose is cuBLAS's column-major op).
  const gemm::OperandLayout l = gemm::operand_layout(rows, cols, t.stride(-2), t.stride(-1));
  BlasOperand op;
  op.keep = l.fits ? t : host::contiguous(t, c);
  op.trans = l.trans;
  op.ld = l.ld;
  op.data = op.keep.data_ptr();
  op.batch_stride = t.dim() == 3 ? op.keep.stride(0) : 0;
  MIXT_CHECK_OP(rows <= INT_MAX && cols <= INT_MAX && op.ld <= INT_MAX, c,
                "matrix of shape {} is too large for BLAS (32-bit sizes)", t.sizes());
  return op;
}

// BLAS calls of one element type (the result's rows are `ldc` elements apart).
void gemm(bool ta, bool tb, int n, int m, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* out, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, n, m, k, alpha, a, lda,
              b, ldb, beta, out, ldc);
}
void gemm(bool ta, bool tb, int n, int m, int k, double alpha, const double* a, int lda, const double* b, int ldb,
          double beta, double* out, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, n, m, k, alpha, a, lda,
              b, ldb, beta, out, ldc);
}

// OpenBLAS's cblas_sbgemm, looked up when first needed: Debian's OpenBLAS declares it
// in cblas.h but builds without it, so mixt neither links against it nor assumes it.
using SbgemmFn = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                          const bfloat16*, blasint, const bfloat16*, blasint, float, float*, blasint);
SbgemmFn sbgemm_symbol() {
  static const SbgemmFn fn = reinterpret_cast<SbgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
  return fn;
}

void gemm(bool ta, bool tb, int n, int m, int k, float alpha, const BFloat16* a, int lda, const BFloat16* b, int ldb,
          float beta, float* out, int ldc) {
  static_assert(sizeof(BFloat16) == sizeof(bfloat16), "mixt's BFloat16 is OpenBLAS's bfloat16 bit pattern");
  sbgemm_symbol()(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, n, m, k, alpha,
                  reinterpret_cast<const bfloat16*>(a), lda, reinterpret_cast<const bfloat16*>(b), ldb, beta, out, ldc);
}

// Note [bfloat16 GEMM on the CPU]: OpenBLAS's sbgemm multiplies bfloat16 operands
// with float32 accumulation, the same arithmetic as widening both operands to float32
// and calling sgemm (a product of two bfloat16 values is exact in float32), minus the
// widening copies. Only its AVX512-BF16 kernels are fast: elsewhere OpenBLAS falls back
// to a generic loop far slower than sgemm, so mixt calls sbgemm only where the CPU has
// AVX512-BF16 (or when a test forces it, set_native_bf16_gemm), and only when the
// OpenBLAS loaded at run time exports it (Debian 12's does not: there every bfloat16
// product is widened). The two paths differ only in the order of the float32 sums.
std::atomic<int> g_native_bf16 = -1;  // -1: follow the CPU; 0 / 1: forced

bool native_bf16_gemm() {
  if (sbgemm_symbol() == nullptr) return false;
  const int forced = g_native_bf16.load(std::memory_order_relaxed);
  if (forced >= 0) return forced == 1;
  static const bool cpu_has = __builtin_cpu_supports("avx512bf16");
  return cpu_has;
}

// acc[i] = alpha * a[i] @ b[i] + beta * acc[i] for every matrix of the batch, through BLAS (T = float or double,
// In = T, or BFloat16 with T = float).
template <class T, class In = T>
void blas_product(const OpCall& c, const MatmulPlan& p, const Tensor& a, const Tensor& b, T* acc, T alpha, T beta) {
  const BlasOperand A = blas_operand(c, a), B = blas_operand(c, b);
  MIXT_CHECK_OP(p.n * p.m <= INT_MAX, c, "result of {} x {} is too large for BLAS (32-bit sizes)", p.n, p.m);
  const int m = static_cast<int>(p.m), k = static_cast<int>(p.k);
  const In* pa = static_cast<const In*>(A.data);
  const In* pb = static_cast<const In*>(B.data);
  // Note [GEMM threads]: OpenBLAS runs single-threaded; the batch and, for large
  // products, blocks of the result are spread over mixt's OpenMP threads instead, so
  // the elementwise loops and the GEMMs share one pool and never compete for the
  // cores. Blocks are rows first (16 at least each); a product with too few rows for
  // every thread (skinny M: decoding, small batches) is split by columns too (64 at
  // least each).
  const int64_t work = p.n * p.m * p.k;
  const int64_t threads = omp_get_max_threads();
  const int64_t blocks = work >= kParallelGemm && p.batch < threads ? threads : 1;
  const int64_t row_blocks = std::max<int64_t>(1, std::min(blocks, p.n / 16));
  const int64_t col_blocks = std::max<int64_t>(1, std::min(blocks / row_blocks, p.m / 64));
  const int64_t per_matrix = row_blocks * col_blocks;
  const int64_t tasks = p.batch * per_matrix;
  const int64_t grain = std::max<int64_t>(1, kWorkGrain / std::max<int64_t>(1, work / per_matrix));
  parallel_for(tasks, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t i = t / per_matrix, rb = (t / col_blocks) % row_blocks, cb = t % col_blocks;
      const int64_t r0 = p.n * rb / row_blocks, r1 = p.n * (rb + 1) / row_blocks;
      const int64_t c0 = p.m * cb / col_blocks, c1 = p.m * (cb + 1) / col_blocks;
      if (r0 == r1 || c0 == c1) continue;
      // Rows r0..r1 of the result read rows r0..r1 of A (columns, when A is transposed);
      // columns c0..c1 read columns c0..c1 of B (rows, when B is transposed).
      const In* a_rows = pa + i * A.batch_stride + (A.trans ? r0 : r0 * A.ld);
      const In* b_cols = pb + i * B.batch_stride + (B.trans ? c0 * B.ld : c0);
      gemm(A.trans, B.trans, static_cast<int>(r1 - r0), static_cast<int>(c1 - c0), k, alpha, a_rows,
           static_cast<int>(A.ld), b_cols, static_cast<int>(B.ld), beta, acc + i * p.n * p.m + r0 * p.m + c0, m);
    }
  });
}

// acc = alpha * a @ b + beta * acc for integer operands, accumulating in (wrapping) 64-bit arithmetic.
template <class T>
void int_product(const OpCall& c, const MatmulPlan& p, const Tensor& a_in, const Tensor& b_in, int64_t* acc,
                 int64_t alpha, int64_t beta) {
  const Tensor a = host::contiguous(a_in, c), b = host::contiguous(b_in, c);
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());
  const int64_t n = p.n, k = p.k, m = p.m;
  const uint64_t ua = static_cast<uint64_t>(alpha), ub = static_cast<uint64_t>(beta);
  const int64_t grain = std::max<int64_t>(1, kWorkGrain / std::max<int64_t>(1, k * m));
  parallel_for(p.batch * n, grain, [&](int64_t lo, int64_t hi) {
    uint64_t sum[kIntTile];
    for (int64_t r = lo; r < hi; ++r) {
      const T* arow = pa + r * k;  // batch-major rows: row r of the flattened [B * n, k]
      const T* bmat = pb + (r / n) * k * m;
      int64_t* out = acc + r * m;
      for (int64_t j0 = 0; j0 < m; j0 += kIntTile) {
        const int64_t w = std::min(kIntTile, m - j0);
        std::fill(sum, sum + w, uint64_t{0});
        for (int64_t q = 0; q < k; ++q) {
          const uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(arow[q]));
          const T* brow = bmat + q * m + j0;
          for (int64_t j = 0; j < w; ++j) sum[j] += x * static_cast<uint64_t>(static_cast<int64_t>(brow[j]));
        }
        for (int64_t j = 0; j < w; ++j) {
          uint64_t v = ua * sum[j];
          if (ub != 0) v += ub * static_cast<uint64_t>(out[j0 + j]);
          out[j0 + j] = static_cast<int64_t>(v);
        }
      }
    }
  });
}

// acc *= beta over `count` contiguous elements (the k = 0 case, where no GEMM runs).
template <class T>
void scale_buffer(T* acc, int64_t count, const Scalar& beta) {
  if constexpr (std::is_same_v<T, int64_t>) {
    const uint64_t b = static_cast<uint64_t>(beta.to_int());
    for (int64_t i = 0; i < count; ++i) acc[i] = static_cast<int64_t>(b * static_cast<uint64_t>(acc[i]));
  } else {
    const T b = static_cast<T>(beta.to_double());
    for (int64_t i = 0; i < count; ++i) acc[i] *= b;
  }
}

// The output tensor: the caller's (out= calls, checked) or a new one.
Tensor output_for(OpCall& c, const MatmulPlan& p) {
  Tensor& out = c.out[0];
  if (!out.defined()) return make_empty(p.out_shape, p.out_dtype, p.a.device());
  MIXT_CHECK_OP(out.sizes() == p.out_shape && out.dtype() == p.out_dtype && out.device() == p.a.device(), c,
                "the output is {} but the result is {}{} {}", out.describe(), p.out_dtype, p.out_shape,
                p.a.device());
  return out;
}

// True when `out` can be the accumulator itself: contiguous, of the accumulate dtype, sharing no input's memory.
bool can_accumulate_in(const Tensor& out, const MatmulPlan& p, ScalarType acc_dtype) {
  if (out.dtype() != acc_dtype || !out.is_contiguous()) return false;
  if (out.shares_storage(p.a) || out.shares_storage(p.b)) return false;
  return !(p.bias.defined() && out.shares_storage(p.bias));
}

// The op's name for dtype errors (built-in names are string literals).
const char* dtype_error_name(const OpCall& c) { return op_name(c.op).data(); }

// True when `operand` is (a view of) one of the call's inputs that is a parameter: a leaf
// that requires grad, whose float32 copy the widening cache may keep (Note [GEMM widening cache]).
bool is_parameter_operand(const OpCall& c, const Tensor& operand) {
  for (const Tensor& in : c.in)
    if (in.defined() && in.shares_storage(operand) && in.requires_grad() && in.is_leaf()) return true;
  return false;
}

// A float16 / bfloat16 operand as float32 (vector conversion over the threads; cached for parameters).
Tensor widened(const OpCall& c, const Tensor& t) { return widened_operand(t, is_parameter_operand(c, t), c); }

// Note [Fused widening]: a float16 / bfloat16 product big enough to be split over the
// threads by rows runs in one parallel region. Each thread widens its share of the operands
// that are not cached parameters (into contiguous float32 copies made here), waits for the
// others, multiplies its row blocks of the result with sgemm, then rounds those rows into
// the output while they are in its cache. The row blocks and the sgemm calls are those of
// blas_product (one block per thread, no column split), on the same float32 values, so the
// result has the bits of the unfused path; what goes is three passes over memory (widen a,
// widen b, round the result), each with its own fork and join of the threads.
bool fuses_widening(const MatmulPlan& p, bool use_beta) {
  if ((p.in_dtype != kBFloat16 && p.in_dtype != kFloat16) || p.batch != 1 || use_beta || p.k == 0) return false;
  if (p.in_dtype == kBFloat16 && native_bf16_gemm()) return false;
  const int64_t threads = omp_get_max_threads();
  // blas_product's split: `threads` row blocks exactly when it splits at all and has rows for each.
  return threads >= 2 && !omp_in_parallel() && p.n * p.m * p.k >= kParallelGemm && p.n / 16 >= threads;
}

// An operand's float32 form for the fused region: a cached parameter's copy, or a new
// contiguous buffer that the region fills from `source` (null when nothing is left to do).
struct WideOperand {
  Tensor wide;
  const void* source = nullptr;
};

WideOperand wide_operand(const OpCall& c, const Tensor& t) {
  if (is_parameter_operand(c, t) || !t.is_contiguous()) return {widened(c, t), nullptr};
  return {make_empty(t.sizes(), kFloat32, t.device()), t.data_ptr()};
}

template <class In>
void widen_share(const WideOperand& w, int64_t t, int64_t parts) {
  if (!w.source) return;
  const int64_t n = w.wide.numel(), begin = split_point(n, t, parts), end = split_point(n, t + 1, parts);
  vec::to_float(static_cast<const In*>(w.source) + begin, static_cast<float*>(w.wide.data_ptr()) + begin,
                static_cast<size_t>(end - begin));
}

// The product of Note [Fused widening] into `acc` ([n, m] float32); `narrow_out`, when
// given, receives the rounded rows (contiguous, of the operands' dtype).
template <class In>
void fused_widening_product(const OpCall& c, const MatmulPlan& p, float* acc, In* narrow_out) {
  const WideOperand wa = wide_operand(c, p.a), wb = wide_operand(c, p.b);
  const BlasOperand A = blas_operand(c, wa.wide), B = blas_operand(c, wb.wide);
  const float alpha = static_cast<float>(p.alpha.to_double());
  const int64_t blocks = omp_get_max_threads();
  const int k = static_cast<int>(p.k), m = static_cast<int>(p.m);
#pragma omp parallel num_threads(static_cast<int>(blocks))
  {
    const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    widen_share<In>(wa, t, T);
    widen_share<In>(wb, t, T);
#pragma omp barrier
    for (int64_t rb = t; rb < blocks; rb += T) {
      const int64_t r0 = p.n * rb / blocks, r1 = p.n * (rb + 1) / blocks;
      const float* a_rows = static_cast<const float*>(A.data) + (A.trans ? r0 : r0 * A.ld);
      gemm(A.trans, B.trans, static_cast<int>(r1 - r0), m, k, alpha, a_rows, static_cast<int>(A.ld),
           static_cast<const float*>(B.data), static_cast<int>(B.ld), 0.0f, acc + r0 * p.m, m);
      if (narrow_out) vec::from_float(acc + r0 * p.m, narrow_out + r0 * p.m, static_cast<size_t>((r1 - r0) * p.m));
    }
  }
}

// Runs the GEMM of the accumulate type T into `acc` (already holding the bias when beta is used).
template <class T>
void run_product(const OpCall& c, const MatmulPlan& p, T* acc, bool use_beta) {
  if constexpr (std::is_same_v<T, int64_t>) {
    const int64_t alpha = p.alpha.to_int(), beta = use_beta ? p.beta.to_int() : 0;
    visit_dtype<dtypes::kIntegral>(p.in_dtype, dtype_error_name(c), [&](auto tag) {
      using I = typename decltype(tag)::type;
      int_product<I>(c, p, p.a, p.b, acc, alpha, beta);
    });
  } else {
    const T alpha = static_cast<T>(p.alpha.to_double()), beta = use_beta ? static_cast<T>(p.beta.to_double()) : T(0);
    if (p.in_dtype == dtype_of<T>) {
      blas_product<T>(c, p, p.a, p.b, acc, alpha, beta);
    } else if (std::is_same_v<T, float> && p.in_dtype == kBFloat16 && native_bf16_gemm()) {
      if constexpr (std::is_same_v<T, float>) blas_product<float, BFloat16>(c, p, p.a, p.b, acc, alpha, beta);
    } else {  // narrow floats: widen to float32 once, accumulate in float32
      blas_product<T>(c, p, widened(c, p.a), widened(c, p.b), acc, alpha, beta);
    }
  }
}

// Runs a planned product into `out` (of the plan's shape and out_dtype): accumulates in
// the accumulate type and writes the output.
void run_plan(const OpCall& c, const MatmulPlan& p, Tensor& out) {
  MIXT_CHECK_OP(p.a.is_cpu(), c, "expected both operands on the CPU, but found {} and {}", p.a.device(), p.b.device());
  const ScalarType acc_dtype = accumulate_type(p.in_dtype);
  Tensor acc = can_accumulate_in(out, p, acc_dtype) ? out : make_empty(p.out_shape, acc_dtype, out.device());
  const bool use_beta = p.bias.defined() && p.beta.to_double() != 0.0;
  if (out.numel() > 0 && fuses_widening(p, use_beta)) {
    // The sgemm calls overwrite every element (beta = 0): no zeroing first.
    const bool round_here = !acc.is_same(out) && out.is_contiguous() && out.dtype() == p.in_dtype;
    visit_dtype<dtypes::bit(kBFloat16) | dtypes::bit(kFloat16)>(p.in_dtype, dtype_error_name(c), [&](auto tag) {
      using In = typename decltype(tag)::type;
      fused_widening_product<In>(c, p, static_cast<float*>(acc.data_ptr()),
                                 round_here ? static_cast<In*>(out.data_ptr()) : nullptr);
    });
    if (!acc.is_same(out) && !round_here) host::copy_into(out, acc, c);
    return;
  }
  if (out.numel() > 0) {
    if (use_beta) {
      host::copy_into(acc, p.bias, c);
    } else {
      std::memset(acc.data_ptr(), 0, static_cast<size_t>(acc.nbytes()));  // beta = 0: the bias is never read
    }
    visit_dtype<dtypes::bit(kFloat32) | dtypes::bit(kFloat64) | dtypes::bit(kInt64)>(
        acc_dtype, dtype_error_name(c), [&](auto tag) {
          using T = typename decltype(tag)::type;
          T* data = static_cast<T*>(acc.data_ptr());
          if (p.k == 0) {
            if (use_beta) scale_buffer(data, acc.numel(), p.beta);
          } else {
            run_product<T>(c, p, data, use_beta);
          }
        });
    if (!acc.is_same(out)) host::copy_into(out, acc, c);
  }
}

// Shared body of the four product kernels: plan, then run into the output.
void product_kernel(OpCall& c, bool batched, bool scaled) {
  const MatmulPlan p = plan_matmul(c, batched, scaled);
  Tensor out = output_for(c, p);
  run_plan(c, p, out);
  c.out[0] = out;
}

// linear as one fused GEMM with the bias (the CPU's own kernel beside linear's
// composite; Note [Composite and backend kernels]).
void linear_kernel(OpCall& c, DispatchKeySet) {
  const LinearPlan l = plan_linear(c);
  Tensor out = make_empty(l.product.out_shape, l.product.out_dtype, l.product.a.device());
  run_plan(c, l.product, out);
  Tensor result = make_view(out, l.result_shape, contiguous_strides(l.result_shape), 0);
  if (c.out[0].defined()) {
    MIXT_CHECK_OP(c.out[0].sizes() == l.result_shape, c, "the output has shape {} but the result has shape {}",
                  c.out[0].sizes(), l.result_shape);
    host::copy_into(c.out[0], result, c);
  } else {
    c.out[0] = result;
  }
}

// Output `i` of the call: `value` itself (a new tensor of the result's dtype), or, for an out= call, `value`
// written into the caller's tensor, which must have the result's shape and dtype.
void set_output(OpCall& c, int i, const Tensor& value, ScalarType dtype) {
  Tensor& out = c.out[static_cast<size_t>(i)];
  if (!out.defined()) {
    out = value.dtype() == dtype ? value : host::converted(value, dtype, c);
    return;
  }
  MIXT_CHECK_OP(out.sizes() == value.sizes() && out.dtype() == dtype, c, "output {} is {} but the result is {}{}", i,
                out.describe(), dtype, value.sizes());
  host::copy_into(out, value, c);
}

// A plain product a [n, k] @ b [k, m] of `dtype` operands into a new [n, m] tensor of `dtype`
// (accumulated in the accumulate type, rounded once), through run_plan as mm runs it.
Tensor product_of(const OpCall& c, const Tensor& a, const Tensor& b, ScalarType dtype) {
  const MatmulPlan p = plain_product(a, b, dtype);
  Tensor out = make_empty(p.out_shape, dtype, a.device());
  run_plan(c, p, out);
  return out;
}

// The column sums of g [rows, cols] (storage type In) in the accumulate type T (float32 for the
// narrow floats, float64, int64 for integers, wrapping), read without a widened copy; each
// column is summed in row order whatever the threads: deterministic. Returns a [cols] tensor of T.
template <class In, class T>
Tensor column_sums(const OpCall& c, const Tensor& g) {
  const Tensor src = host::contiguous(g, c);
  const int64_t rows = src.size(0), cols = src.size(1);
  Tensor acc = make_empty({cols}, dtype_of<T>, g.device());
  const In* in = static_cast<const In*>(src.data_ptr());
  T* out = static_cast<T*>(acc.data_ptr());
  const int64_t grain = std::max<int64_t>(64, kWorkGrain / std::max<int64_t>(1, rows));
  parallel_for(cols, grain, [&](int64_t lo, int64_t hi) {
    std::fill(out + lo, out + hi, T(0));
    for (int64_t r = 0; r < rows; ++r) {
      const In* row = in + r * cols;
      for (int64_t j = lo; j < hi; ++j) {
        const T v = static_cast<T>(static_cast<opmath_t<In>>(row[j]));
        if constexpr (std::is_same_v<T, int64_t>) {
          out[j] = static_cast<int64_t>(static_cast<uint64_t>(out[j]) + static_cast<uint64_t>(v));
        } else {
          out[j] += v;
        }
      }
    }
  });
  return acc;
}

// linear's backward as one op (grad_output g [*, out], input x [*, in], weight w [out, in]):
// grad_input = g @ w and grad_weight = g^T @ x through the GEMM path mm uses, grad_bias the
// column sums of g in the accumulate type rounded once to the dtype. Only the asked-for ones.
void linear_backward_kernel(OpCall& c, DispatchKeySet) {
  const LinearBackwardPlan p = plan_linear_backward(c);
  MIXT_CHECK_OP(c.in[0].is_cpu(), c, "expected CPU tensors, but the operands are on {}", c.in[0].device());
  const Tensor g2 = as_rows(c.in[0], p.rows, p.out);
  const Tensor& w = c.in[2];
  if (p.input_grad) {
    const Tensor gi = product_of(c, g2, w, p.dtype);
    set_output(c, 0, make_view(gi, p.input_shape, contiguous_strides(p.input_shape), 0), p.dtype);
  }
  if (p.weight_grad) {
    const Tensor x2 = as_rows(c.in[1], p.rows, p.in);
    const Tensor gt = make_view(g2, {p.out, p.rows}, {g2.stride(1), g2.stride(0)}, g2.storage_offset());
    set_output(c, 1, product_of(c, gt, x2, p.dtype), p.dtype);
  }
  if (p.bias_grad) {
    visit_dtype<dtypes::kNumeric>(p.dtype, dtype_error_name(c), [&](auto tag) {
      using In = typename decltype(tag)::type;
      using T = std::conditional_t<std::is_integral_v<opmath_t<In>>, int64_t,
                                   std::conditional_t<std::is_same_v<In, double>, double, float>>;
      set_output(c, 2, column_sums<In, T>(c, g2), p.dtype);  // the one rounding to the dtype
    });
  }
}

// max(a, b) that keeps a NaN from either side.
float nan_max(float a, float b) { return std::isnan(a) || a >= b ? a : b; }

// Note [Scaled mm]: the float8 GEMM's CPU reference. Both operands are widened to
// float32 (exact), multiplied through sgemm with float32 accumulation, and each
// element then goes through the epilogue in float32:
//   v = acc * (scale_a * scale_b) + bias            (scales per tensor, or scale_a[i] * scale_b[j])
//   float8 results: amax = max |v| (NaN if any v is NaN), then v * scale_result saturated to the
//   format's finite range (+-448, +-57344; NaN stays NaN) before the one rounding to out_dtype.
// use_fast_accum changes nothing here (the accumulation is float32 anyway).
void scaled_mm_kernel(OpCall& c, DispatchKeySet) {
  const ScaledMmPlan p = plan_scaled_mm(c);
  MIXT_CHECK_OP(p.a.is_cpu(), c, "expected CPU tensors, but the operands are on {}", p.a.device());
  Tensor acc = make_empty(p.out_shape, kFloat32, p.a.device());
  float* r = static_cast<float*>(acc.data_ptr());
  if (acc.numel() > 0 && p.k > 0) {
    MatmulPlan g;  // the product as mm plans it: [m, k] @ [k, n] in float32, one matrix
    g.n = p.m;
    g.k = p.k;
    g.m = p.n;
    blas_product<float>(c, g, host::converted(p.a, kFloat32, c), host::converted(p.b, kFloat32, c), r, 1.0f, 0.0f);
  } else if (acc.numel() > 0) {
    std::memset(r, 0, static_cast<size_t>(acc.nbytes()));  // k = 0: an empty sum
  }
  const Tensor sa = host::contiguous(p.scale_a, c), sb = host::contiguous(p.scale_b, c);
  const float* scale_a = static_cast<const float*>(sa.data_ptr());
  const float* scale_b = static_cast<const float*>(sb.data_ptr());
  const Tensor bias = p.bias.defined() ? host::contiguous(host::converted(p.bias, kFloat32, c), c) : Tensor();
  const float* b = bias.defined() ? static_cast<const float*>(bias.data_ptr()) : nullptr;
  const float scale_result =
      p.scale_result.defined() ? static_cast<const float*>(host::contiguous(p.scale_result, c).data_ptr())[0] : 1.0f;
  const float limit = p.out_dtype == kFloat8_e5m2 ? 57344.0f : 448.0f;
  std::vector<float> row_amax(static_cast<size_t>(p.m), 0.0f);
  const int64_t m = p.m, n = p.n;
  parallel_for(m, std::max<int64_t>(1, kWorkGrain / std::max<int64_t>(1, n)), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      float* row = r + i * n;
      float amax = 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        float v = row[j] * (p.rowwise ? scale_a[i] * scale_b[j] : scale_a[0] * scale_b[0]);
        if (b) v += b[j];
        if (p.float8_out) {
          amax = nan_max(amax, std::abs(v));
          v *= scale_result;
          v = v > limit ? limit : v < -limit ? -limit : v;  // comparisons with NaN are false: NaN stays
        }
        row[j] = v;
      }
      row_amax[static_cast<size_t>(i)] = amax;
    }
  });
  set_output(c, 0, acc, p.out_dtype);  // the one rounding to out_dtype
  if (p.float8_out) {
    Tensor amax = make_empty({}, kFloat32, p.a.device());
    float all = 0.0f;
    for (float x : row_amax) all = nan_max(all, x);
    *static_cast<float*>(amax.data_ptr()) = all;
    set_output(c, 1, amax, kFloat32);
  }
}

void mm_kernel(OpCall& c, DispatchKeySet) { product_kernel(c, false, false); }
void bmm_kernel(OpCall& c, DispatchKeySet) { product_kernel(c, true, false); }
void addmm_kernel(OpCall& c, DispatchKeySet) { product_kernel(c, false, true); }
void baddbmm_kernel(OpCall& c, DispatchKeySet) { product_kernel(c, true, true); }

}  // namespace

void set_native_bf16_gemm(int mode) { g_native_bf16.store(mode < 0 ? -1 : mode > 0 ? 1 : 0); }
bool native_bf16_gemm_enabled() { return native_bf16_gemm(); }
bool bf16_gemm_available() { return sbgemm_symbol() != nullptr; }

void register_matmul_kernels() {
  // See Note [GEMM threads]; MIXT_BLAS_THREADS overrides.
  const char* env = std::getenv("MIXT_BLAS_THREADS");
  openblas_set_num_threads(env ? std::max(1, std::atoi(env)) : 1);
  register_kernel(OpId::mm, DispatchKey::CPU, mm_kernel);
  register_kernel(OpId::bmm, DispatchKey::CPU, bmm_kernel);
  register_kernel(OpId::addmm, DispatchKey::CPU, addmm_kernel);
  register_kernel(OpId::baddbmm, DispatchKey::CPU, baddbmm_kernel);
  register_kernel(OpId::linear, DispatchKey::CPU, linear_kernel);
  register_kernel(OpId::linear_backward, DispatchKey::CPU, linear_backward_kernel);
  register_kernel(OpId::scaled_mm, DispatchKey::CPU, scaled_mm_kernel);
}

}  // namespace mixt::cpu
