// Device kernels of softmax and log_softmax, with the CPU's arithmetic (softmax.cpp):
// the row maximum in the compute type M (NaN wins), the sum of exp(x - m) in double,
// then y = exp(x - m) * M(1 / sum) or y = x - m - M(log(sum)), rounded once.
// - Rows along the innermost dim: one block per row; the row is read from global
//   memory once when it fits in shared memory (the max and the sum then read the
//   cache, and softmax keeps exp(x - m) there for the output: one exp per element). Maximum and sum are folded in the fixed order of reduce.cuh (Note
//   [Deterministic reductions]); the max is exact, the double sum differs from the CPU's
//   sequential one only in its last bits.
// - Rows along an outer dim: one thread per line, in the CPU's order (its bits).
// The backward kernels (Note [Fused backward ops]) have the same two shapes: the line's
// sum (of g * y, or of g) in double, then backward_math's formula, rounded once.
#include <mixt/kernels/common/backward_math.h>
#include <mixt/kernels/common/reducers.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/kernels/cuda/reduce.cuh>
#include <mixt/kernels/cuda/reduce_launch.h>
#include <mixt/kernels/cuda/row_kernels.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

// The CPU's running maximum: a larger value or any NaN replaces it.
template <class M>
using RowMax = reducers::Extremum<M, true>;

// The output of one element given the row's maximum and its sum's log or inverse.
template <bool Log, class M>
__device__ __forceinline__ M softmax_value(M x, M m, M log_or_inv) {
  if constexpr (Log) return x - m - log_or_inv;
  else return exp_m(x - m) * log_or_inv;
}

template <bool Log>
__device__ __forceinline__ double log_or_inverse(double s) { return Log ? ::log(s) : 1.0 / s; }

// One block per row of n contiguous values; `cache` says whether the row fits in shared memory.
template <bool Log, class T>
__global__ void softmax_rows_kernel(SoftmaxArgs a, bool cache) {
  using M = opmath_t<T>;
  const T* in = static_cast<const T*>(a.in);
  T* out = static_cast<T*>(a.out);
  const int threads = static_cast<int>(blockDim.x), lane = static_cast<int>(threadIdx.x);
  M* row = reinterpret_cast<M*>(shared_bytes() + threads * kRowPartialBytes);
  for (int64_t r = blockIdx.x; r < a.outer; r += gridDim.x) {
    const T* x = in + r * a.n;
    const M m = row_max_to_all(x, a.n, cache ? row : nullptr);
    const reducers::Sum<double> sum_r;
    double s = 0;
    for (int64_t j = lane; j < a.n; j += threads) {
      const M v = cache ? row[j] : load_opmath<T>(reinterpret_cast<const char*>(x + j));
      const M e = exp_m(v - m);
      if (!Log && cache) row[j] = e;  // softmax reuses it below (the same value the CPU recomputes)
      s += static_cast<double>(e);
    }
    s = group_reduce(sum_r, s, threads);
    if (lane == 0) shared_partials<double>()[0] = s;
    __syncthreads();
    s = shared_partials<double>()[0];
    const M k = static_cast<M>(log_or_inverse<Log>(s));
    for (int64_t j = lane; j < a.n; j += threads) {
      M y;
      if (!Log && cache) {
        y = row[j] * k;  // exp(x - m) * (1 / sum)
      } else {
        const M v = cache ? row[j] : load_opmath<T>(reinterpret_cast<const char*>(x + j));
        y = softmax_value<Log>(v, m, k);
      }
      out[r * a.n + j] = store_as<T>(y);
    }
    __syncthreads();  // the cache and the partials are reused by the next row
  }
}

// One thread per line of n values at stride `inner` (the CPU's sequential order).
template <bool Log, class T>
__global__ void softmax_lines_kernel(SoftmaxArgs a) {
  using M = opmath_t<T>;
  const T* in = static_cast<const T*>(a.in);
  T* out = static_cast<T*>(a.out);
  const int64_t lines = a.outer * a.inner;
  for (int64_t q = grid_start(); q < lines; q += grid_step()) {
    const int64_t off = div_nonneg(q, a.inner) * a.n * a.inner + q % a.inner;
    const T* x = in + off;
    const RowMax<M> max_r;
    M m = max_r.init();
    for (int64_t j = 0; j < a.n; ++j) max_r.accumulate(m, load_opmath<T>(reinterpret_cast<const char*>(x + j * a.inner)), j);
    double s = 0;
    for (int64_t j = 0; j < a.n; ++j)
      s += static_cast<double>(exp_m(load_opmath<T>(reinterpret_cast<const char*>(x + j * a.inner)) - m));
    const M k = static_cast<M>(log_or_inverse<Log>(s));
    for (int64_t j = 0; j < a.n; ++j) {
      const M v = load_opmath<T>(reinterpret_cast<const char*>(x + j * a.inner));
      out[off + j * a.inner] = store_as<T>(softmax_value<Log>(v, m, k));
    }
  }
}

template <bool Log, class T>
cudaError_t launch_typed(const SoftmaxArgs& a, cudaStream_t s) {
  using M = opmath_t<T>;
  if (a.inner == 1) {
    const int threads = row_block_threads(a.n);
    const bool cache = row_cache_fits(a.n, sizeof(M));
    const unsigned blocks = grid_blocks(a.outer);
    launch_kernel(softmax_rows_kernel<Log, T>, {blocks, threads, static_cast<size_t>(row_shared_bytes(threads, a.n, sizeof(M))), s}, a, cache);
  } else {
    launch_kernel(softmax_lines_kernel<Log, T>, {grid_for(a.outer * a.inner), kBlockThreads, 0, s}, a);
  }
  return cudaGetLastError();
}

// ---- backward (Note [Fused backward ops]) ----
// The gradient of one element from the line's sum k (of g * y, or of g for log_softmax).
template <bool Log, class M>
__device__ __forceinline__ M softmax_grad_value(M g, M y, M k) {
  if constexpr (Log) return backward_math::log_softmax_grad<M>(g, exp_m(y), k);
  else return backward_math::softmax_grad<M>(y, g, k);
}

// One term of the line's sum, in double (as the CPU's softmax_backward_line).
template <bool Log, class M>
__device__ __forceinline__ double softmax_grad_term(M g, M y) {
  return Log ? static_cast<double>(g) : static_cast<double>(g) * static_cast<double>(y);
}

// One block per row of n contiguous values: the sum folded in the fixed tree order.
template <bool Log, class T>
__global__ void softmax_backward_rows_kernel(SoftmaxArgs a) {
  using M = opmath_t<T>;
  const T* ys = static_cast<const T*>(a.in);
  const T* gs = static_cast<const T*>(a.grad);
  T* out = static_cast<T*>(a.out);
  const int threads = static_cast<int>(blockDim.x), lane = static_cast<int>(threadIdx.x);
  for (int64_t r = blockIdx.x; r < a.outer; r += gridDim.x) {
    const T *y = ys + r * a.n, *g = gs + r * a.n;
    double s = 0;
    for (int64_t j = lane; j < a.n; j += threads)
      s += softmax_grad_term<Log, M>(load_opmath<T>(reinterpret_cast<const char*>(g + j)),
                                     load_opmath<T>(reinterpret_cast<const char*>(y + j)));
    const M k = static_cast<M>(block_sum(s));
    for (int64_t j = lane; j < a.n; j += threads)
      out[r * a.n + j] = store_as<T>(softmax_grad_value<Log, M>(load_opmath<T>(reinterpret_cast<const char*>(g + j)),
                                                                load_opmath<T>(reinterpret_cast<const char*>(y + j)), k));
  }
}

// One thread per line of n values at stride `inner`, in the CPU's order (its bits).
template <bool Log, class T>
__global__ void softmax_backward_lines_kernel(SoftmaxArgs a) {
  using M = opmath_t<T>;
  const T* ys = static_cast<const T*>(a.in);
  const T* gs = static_cast<const T*>(a.grad);
  T* out = static_cast<T*>(a.out);
  const int64_t lines = a.outer * a.inner;
  for (int64_t q = grid_start(); q < lines; q += grid_step()) {
    const int64_t off = div_nonneg(q, a.inner) * a.n * a.inner + q % a.inner;
    auto at = [&](const T* p, int64_t j) { return load_opmath<T>(reinterpret_cast<const char*>(p + off + j * a.inner)); };
    double s = 0;
    for (int64_t j = 0; j < a.n; ++j) s += softmax_grad_term<Log, M>(at(gs, j), at(ys, j));
    const M k = static_cast<M>(s);
    for (int64_t j = 0; j < a.n; ++j) out[off + j * a.inner] = store_as<T>(softmax_grad_value<Log, M>(at(gs, j), at(ys, j), k));
  }
}

template <bool Log, class T>
cudaError_t launch_backward_typed(const SoftmaxArgs& a, cudaStream_t s) {
  if (a.inner == 1) {
    const int threads = row_block_threads(a.n);
    const unsigned blocks = grid_blocks(a.outer);
    launch_kernel(softmax_backward_rows_kernel<Log, T>, {blocks, threads, static_cast<size_t>(threads * kRowPartialBytes), s}, a);
  } else {
    launch_kernel(softmax_backward_lines_kernel<Log, T>, {grid_for(a.outer * a.inner), kBlockThreads, 0, s}, a);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_softmax(const SoftmaxArgs& args, cudaStream_t stream) {
  if (args.outer * args.inner == 0 || args.n == 0) return cudaSuccess;
  return visit_dtype<dtypes::kFloating>(args.dtype, args.log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return args.log ? launch_typed<true, T>(args, stream) : launch_typed<false, T>(args, stream);
  });
}

cudaError_t launch_softmax_backward(const SoftmaxArgs& args, cudaStream_t stream) {
  if (args.outer * args.inner == 0 || args.n == 0) return cudaSuccess;
  return visit_dtype<dtypes::kFloating>(args.dtype, args.log ? "log_softmax_backward" : "softmax_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return args.log ? launch_backward_typed<true, T>(args, stream) : launch_backward_typed<false, T>(args, stream);
  });
}

}  // namespace mixt::cuda
