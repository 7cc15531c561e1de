// Device kernels of layer_norm and rms_norm, with the CPU's arithmetic (norm.cpp): per
// row, in double, the mean (layer_norm), then the mean of the centred squares (or of the
// squares for rms_norm), rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd * w + b
// rounded once; mean and rstd are stored in the statistics dtype. One block per row;
// the row is kept in shared memory when it fits (one read of x). The sums are folded in
// the fixed order of reduce.cuh (Note [Deterministic reductions]).
#include <mixt/kernels/common/reducers.h>
#include <mixt/kernels/cuda/reduce.cuh>
#include <mixt/kernels/cuda/reduce_launch.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

__device__ __forceinline__ void put_stat(void* stat, bool wide, int64_t r, double v) {
  if (wide) static_cast<double*>(stat)[r] = v;
  else static_cast<float*>(stat)[r] = static_cast<float>(v);
}

template <class T>
__global__ void norm_rows_kernel(NormArgs a, bool cache) {
  const T* xs = static_cast<const T*>(a.x);
  T* ys = static_cast<T*>(a.y);
  const int threads = static_cast<int>(blockDim.x), lane = static_cast<int>(threadIdx.x);
  double* row = reinterpret_cast<double*>(shared_bytes() + threads * kRowPartialBytes);
  const bool wide = a.stat_dtype == ScalarType::Float64;
  const double n = static_cast<double>(a.cols);
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const T* x = xs + r * a.cols;
    auto value = [&](int64_t j) {
      return cache ? row[j] : static_cast<double>(load_opmath<T>(reinterpret_cast<const char*>(x + j)));
    };
    double m = 0;
    if (!a.rms) {
      double s = 0;
      for (int64_t j = lane; j < a.cols; j += threads) {
        const double v = static_cast<double>(load_opmath<T>(reinterpret_cast<const char*>(x + j)));
        if (cache) row[j] = v;
        s += v;
      }
      s = block_sum(s);  // (its barriers also publish the cache)
      m = a.cols > 0 ? s / n : 0.0;
    } else if (cache) {
      for (int64_t j = lane; j < a.cols; j += threads)
        row[j] = static_cast<double>(load_opmath<T>(reinterpret_cast<const char*>(x + j)));
      __syncthreads();
    }
    double q = 0;
    for (int64_t j = lane; j < a.cols; j += threads) {
      const double d = value(j) - m;
      q += d * d;
    }
    q = block_sum(q);
    const double var = a.cols > 0 ? q / n : 0.0;
    const double rs = 1.0 / ::sqrt(var + a.eps);
    for (int64_t j = lane; j < a.cols; j += threads) {
      double v = (value(j) - m) * rs;
      if (a.weight) v *= a.weight[j];
      if (a.bias) v += a.bias[j];
      ys[r * a.cols + j] = store_as<T>(v);
    }
    if (lane == 0) {
      if (a.mean) put_stat(a.mean, wide, r, m);
      put_stat(a.rstd, wide, r, rs);
    }
    __syncthreads();  // the cache is reused by the next row
  }
}

}  // namespace

cudaError_t launch_norm(const NormArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return cudaSuccess;
  return visit_dtype<dtypes::kFloating>(args.dtype, args.rms ? "rms_norm" : "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int threads = row_block_threads(args.cols);
    const bool cache = row_cache_fits(args.cols, sizeof(double));
    const unsigned blocks = grid_blocks(args.rows);
    launch_kernel(norm_rows_kernel<T>, {blocks, threads, static_cast<size_t>(row_shared_bytes(threads, args.cols, sizeof(double))), stream}, args, cache);
    return cudaGetLastError();
  });
}

}  // namespace mixt::cuda
