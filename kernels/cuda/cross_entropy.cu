// Device kernels of cross_entropy_rows and its backward (Note [Fused cross-entropy];
// docs/notes/cuda.md), shaped as softmax.cu's row kernels: one block per row of C logits.
// - Forward: the row maximum m in the compute type M (NaN wins), then one pass for the sum
//   s of exp(x - m) in double and, with label smoothing, the weighted gaps
//   G = sum of w_c (m - x_c) in double; both folded in the fixed tree of reduce.cuh (Note
//   [Deterministic reductions]). The row is read from global memory once when it fits in
//   shared memory. lse = m + log(s) and the loss (cross_entropy_math::row_loss) are
//   rounded once to the accumulate type. A row whose maximum is NaN or infinite gets NaN
//   sums, as the CPU's.
// - Backward: per row the constants of cross_entropy_math::row_grad, then each logit's
//   gradient from p_c = exp(x_c - lse), rounded once to the logits' dtype.
// W, the sum of the class weights, is folded once per launch by a one-block kernel (only
// with a weight and label smoothing). A target that is neither a class nor ignore_index is
// reported to the device error word and its row gets NaN (cross_entropy_launch.h).
#include <limits>

#include <mixt/kernels/common/cross_entropy_math.h>
#include <mixt/kernels/common/reducers.h>
#include <mixt/kernels/cuda/cross_entropy_launch.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/kernels/cuda/reduce.cuh>
#include <mixt/kernels/cuda/row_kernels.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

namespace cem = cross_entropy_math;

// The forward's two row sums, folded together (16 bytes: kRowPartialBytes per thread).
struct RowSums {
  double s = 0, gaps = 0;
};
struct RowSumsReducer {
  using acc_t = RowSums;
  MIXT_HD void combine(acc_t& a, const acc_t& b) const {
    a.s += b.s;
    a.gaps += b.gaps;
  }
};

// Loads element j of a row of storage type T in its compute type.
template <class T>
__device__ __forceinline__ opmath_t<T> load_at(const T* row, int64_t j) {
  return load_opmath<T>(reinterpret_cast<const char*>(row + j));
}

// *out = the sum of the n weights in double (one block; the fixed tree order).
template <class M>
__global__ void sum_weights_kernel(const M* w, int64_t n, double* out) {
  const int threads = static_cast<int>(blockDim.x), lane = static_cast<int>(threadIdx.x);
  double s = 0;
  for (int64_t j = lane; j < n; j += threads) s += static_cast<double>(w[j]);
  s = block_sum(s);
  if (lane == 0) *out = s;
}

template <class T, class I>
__global__ void cross_entropy_rows_kernel(CrossEntropyArgs a, bool cache) {
  using M = opmath_t<T>;
  const T* logits = static_cast<const T*>(a.logits);
  const I* targets = static_cast<const I*>(a.target);
  const M* w = static_cast<const M*>(a.weight);
  M* loss = static_cast<M*>(a.loss);
  M* lse = static_cast<M*>(a.lse);
  const int threads = static_cast<int>(blockDim.x), lane = static_cast<int>(threadIdx.x);
  M* row = reinterpret_cast<M*>(shared_bytes() + threads * kRowPartialBytes);
  const int64_t n = a.classes;
  const double classes = static_cast<double>(n), eps = a.label_smoothing;
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const T* x = logits + r * n;
    const int64_t t = static_cast<int64_t>(targets[r]);
    const TargetKind kind = target_kind(t, n, a.ignore_index);
    const bool gaps = eps > 0 && kind == TargetKind::Class;  // G is read only then
    const M m = row_max_to_all(x, n, cache ? row : nullptr);
    const double md = static_cast<double>(m);
    RowSums sums;
    for (int64_t j = lane; j < n; j += threads) {
      const M v = cache ? row[j] : load_at(x, j);
      sums.s += static_cast<double>(exp_m(v - m));
      if (gaps) {
        const double gap = md - static_cast<double>(v);
        sums.gaps += w ? gap * static_cast<double>(w[j]) : gap;
      }
    }
    sums = group_reduce(RowSumsReducer{}, sums, threads);
    if (lane == 0) {
      // m - m is 0 only for a finite m: a NaN, +Inf or all -Inf row gives NaN (the CPU's rule).
      const double nan = std::numeric_limits<double>::quiet_NaN();
      const bool finite = md - md == 0.0;
      const double s = finite ? sums.s : nan, log_s = ::log(s);
      lse[r] = static_cast<M>(md + log_s);
      if (kind == TargetKind::Class) {
        const double w_t = w ? static_cast<double>(w[t]) : 1.0;
        const double target_gap = md - static_cast<double>(cache ? row[t] : load_at(x, t));
        const double sum_w = a.sum_w ? *a.sum_w : classes;
        const double gap_sum = finite ? sums.gaps : nan;
        loss[r] = static_cast<M>(cem::row_loss(log_s, target_gap, w_t, gap_sum, sum_w, eps, classes));
      } else {
        if (kind == TargetKind::OutOfBounds) report_device_error(a.error, DeviceError::CrossEntropyTargetOutOfBounds);
        loss[r] = kind == TargetKind::Ignored ? M(0) : static_cast<M>(nan);
      }
    }
    __syncthreads();  // the cache is reused by the next row
  }
}

template <class T, class I>
__global__ void cross_entropy_rows_backward_kernel(CrossEntropyArgs a) {
  using M = opmath_t<T>;
  const T* logits = static_cast<const T*>(a.logits);
  const I* targets = static_cast<const I*>(a.target);
  const M* w = static_cast<const M*>(a.weight);
  const M* grad_loss = static_cast<const M*>(a.grad_loss);
  const M* lses = static_cast<const M*>(a.lse_in);
  T* out = static_cast<T*>(a.grad);
  const int threads = static_cast<int>(blockDim.x), lane = static_cast<int>(threadIdx.x);
  const int64_t n = a.classes;
  const double classes = static_cast<double>(n);
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const T* x = logits + r * n;
    T* o = out + r * n;
    const int64_t t = static_cast<int64_t>(targets[r]);
    const TargetKind kind = target_kind(t, n, a.ignore_index);
    if (kind != TargetKind::Class) {
      if (kind == TargetKind::OutOfBounds && lane == 0) report_device_error(a.error, DeviceError::CrossEntropyTargetOutOfBounds);
      const M v = kind == TargetKind::Ignored ? M(0) : std::numeric_limits<M>::quiet_NaN();
      for (int64_t j = lane; j < n; j += threads) o[j] = store_as<T>(v);
      continue;
    }
    const double w_t = w ? static_cast<double>(w[t]) : 1.0;
    const double sum_w = a.sum_w ? *a.sum_w : classes;
    const cem::RowGrad<M> rg = cem::row_grad<M>(static_cast<double>(grad_loss[r]), w_t, sum_w, a.label_smoothing, classes);
    const M l = lses[r];
    for (int64_t j = lane; j < n; j += threads) {
      const M p = exp_m(load_at(x, j) - l);
      o[j] = store_as<T>(cem::logit_grad<M>(rg, p, w ? w[j] : M(1), j == t));
    }
  }
}

// Queues the sum of the weights when the kernels will read it.
template <class M>
cudaError_t launch_sum_weights(const CrossEntropyArgs& a, cudaStream_t s) {
  if (a.sum_w == nullptr) return cudaSuccess;
  if (a.weight == nullptr) return cudaErrorInvalidValue;
  const int threads = row_block_threads(a.classes);
  launch_kernel(sum_weights_kernel<M>, {1u, threads, static_cast<size_t>(threads * kRowPartialBytes), s},
                static_cast<const M*>(a.weight), a.classes, a.sum_w);
  return cudaGetLastError();
}

unsigned row_blocks(int64_t rows) { return grid_blocks(rows); }

template <class T, class I>
cudaError_t launch_forward_typed(const CrossEntropyArgs& a, cudaStream_t s) {
  using M = opmath_t<T>;
  if (const cudaError_t e = launch_sum_weights<M>(a, s); e != cudaSuccess) return e;
  const int threads = row_block_threads(a.classes);
  const bool cache = row_cache_fits(a.classes, sizeof(M));
  launch_kernel(cross_entropy_rows_kernel<T, I>,
                {row_blocks(a.rows), threads, static_cast<size_t>(row_shared_bytes(threads, a.classes, sizeof(M))), s}, a,
                cache);
  return cudaGetLastError();
}

template <class T, class I>
cudaError_t launch_backward_typed(const CrossEntropyArgs& a, cudaStream_t s) {
  using M = opmath_t<T>;
  if (const cudaError_t e = launch_sum_weights<M>(a, s); e != cudaSuccess) return e;
  launch_kernel(cross_entropy_rows_backward_kernel<T, I>, {row_blocks(a.rows), row_block_threads(a.classes), 0, s}, a);
  return cudaGetLastError();
}

// Queues the forward (or the backward) for the logits' and the target's types.
template <bool Backward>
cudaError_t launch_any(const CrossEntropyArgs& a, cudaStream_t s, const char* op) {
  return visit_dtype<dtypes::kFloating>(a.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return visit_dtype<dtypes::bit(ScalarType::Int32) | dtypes::bit(ScalarType::Int64)>(a.target_dtype, op, [&](auto itag) {
      using I = typename decltype(itag)::type;
      return Backward ? launch_backward_typed<T, I>(a, s) : launch_forward_typed<T, I>(a, s);
    });
  });
}

}  // namespace

cudaError_t launch_cross_entropy_rows(const CrossEntropyArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return cudaSuccess;
  return launch_any<false>(args, stream, "cross_entropy_rows");
}

cudaError_t launch_cross_entropy_rows_backward(const CrossEntropyArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return cudaSuccess;
  return launch_any<true>(args, stream, "cross_entropy_rows_backward");
}

}  // namespace mixt::cuda
