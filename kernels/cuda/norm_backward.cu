// Device kernels of layer_norm_backward and rms_norm_backward (Note [Fused backward ops]),
// with the CPU's arithmetic (kernels/cpu/norm_backward.cpp), in double:
// - grad_x: one block per row; the row's sums of gw * xhat and gw are folded in the fixed
//   tree order of reduce.cuh (the CPU folds them in sequence: the double sums differ in
//   their last bits only), then backward_math::norm_input_grad, rounded once.
// - grad_weight / grad_bias: one thread per column and chunk of rows (coalesced across
//   the columns), the chunk's rows in order, into `partials`; a second kernel folds each
//   column's chunks in order. That is the CPU's plan (backward_math::column_chunks), so
//   these sums equal the CPU's bit for bit.
#include <mixt/kernels/common/backward_math.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/kernels/cuda/reduce.cuh>
#include <mixt/kernels/cuda/reduce_launch.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

namespace bm = backward_math;

__device__ __forceinline__ double stat_at(const void* s, bool wide, int64_t r) {
  return wide ? static_cast<const double*>(s)[r] : static_cast<double>(static_cast<const float*>(s)[r]);
}

__device__ __forceinline__ void put_stat(void* s, bool wide, int64_t j, double v) {
  if (wide) static_cast<double*>(s)[j] = v;
  else static_cast<float*>(s)[j] = static_cast<float>(v);
}

template <class T>
__device__ __forceinline__ double load_double(const T* p) {
  return static_cast<double>(load_opmath<T>(reinterpret_cast<const char*>(p)));
}

template <class T>
__global__ void norm_input_grad_kernel(NormBackwardArgs a) {
  const T* gs = static_cast<const T*>(a.g);
  const T* xs = static_cast<const T*>(a.x);
  T* out = static_cast<T*>(a.gx);
  const int threads = static_cast<int>(blockDim.x), lane = static_cast<int>(threadIdx.x);
  const bool wide = a.stat_dtype == ScalarType::Float64;
  const double n = static_cast<double>(a.cols);
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const T *g = gs + r * a.cols, *x = xs + r * a.cols;
    const double m = a.layer ? stat_at(a.mean, wide, r) : 0.0, rs = stat_at(a.rstd, wide, r);
    auto gw_at = [&](int64_t j) { return a.weight ? load_double(g + j) * a.weight[j] : load_double(g + j); };
    double dot = 0, sum = 0;
    for (int64_t j = lane; j < a.cols; j += threads) {
      const double gw = gw_at(j);
      dot += gw * ((load_double(x + j) - m) * rs);
      sum += gw;
    }
    const double dot_mean = block_sum(dot) / n;
    const double g_mean = a.layer ? block_sum(sum) / n : 0.0;
    for (int64_t j = lane; j < a.cols; j += threads) {
      const double xhat = (load_double(x + j) - m) * rs;
      out[r * a.cols + j] = store_as<T>(bm::norm_input_grad(gw_at(j), xhat, rs, dot_mean, g_mean));
    }
  }
}

// Thread (column j, chunk blockIdx.y): the chunk's sums of g * xhat and of g over its rows, in order.
template <class T>
__global__ void norm_column_partials_kernel(NormBackwardArgs a, bm::ColumnChunks plan) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= a.cols) return;
  const int64_t ch = blockIdx.y;
  const T* g = static_cast<const T*>(a.g);
  const T* x = static_cast<const T*>(a.x);
  const bool wide = a.stat_dtype == ScalarType::Float64;
  double sw = 0, sb = 0;
  for (int64_t r = bm::chunk_first_row(plan, ch); r < bm::chunk_end_row(plan, ch, a.rows); ++r) {
    const double m = a.layer ? stat_at(a.mean, wide, r) : 0.0, rs = stat_at(a.rstd, wide, r);
    const double gj = load_double(g + r * a.cols + j);
    if (a.gw) sw += gj * ((load_double(x + r * a.cols + j) - m) * rs);
    if (a.gb) sb += gj;
  }
  a.partials[ch * a.cols * 2 + j] = sw;
  a.partials[ch * a.cols * 2 + a.cols + j] = sb;
}

// Column j folds its chunks' partials in chunk order and stores grad_weight / grad_bias.
__global__ void norm_column_fold_kernel(NormBackwardArgs a, int64_t chunks) {
  const bool wide = a.stat_dtype == ScalarType::Float64;
  for (int64_t j = grid_start(); j < a.cols; j += grid_step()) {
    double sw = 0, sb = 0;
    for (int64_t ch = 0; ch < chunks; ++ch) {
      sw += a.partials[ch * a.cols * 2 + j];
      sb += a.partials[ch * a.cols * 2 + a.cols + j];
    }
    if (a.gw) put_stat(a.gw, wide, j, sw);
    if (a.gb) put_stat(a.gb, wide, j, sb);
  }
}

template <class T>
cudaError_t launch_typed(const NormBackwardArgs& a, cudaStream_t s) {
  if (a.gx && a.rows > 0 && a.cols > 0) {
    const int threads = row_block_threads(a.cols);
    const unsigned blocks = grid_blocks(a.rows);
    launch_kernel(norm_input_grad_kernel<T>, {blocks, threads, static_cast<size_t>(threads * kRowPartialBytes), s}, a);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  if ((a.gw || a.gb) && a.cols > 0) {
    const bm::ColumnChunks plan = bm::column_chunks(a.rows);
    if (plan.chunks > 0) {
      const dim3 grid(static_cast<unsigned>((a.cols + kBlockThreads - 1) / kBlockThreads),
                      static_cast<unsigned>(plan.chunks));
      launch_kernel(norm_column_partials_kernel<T>, {grid, kBlockThreads, 0, s}, a, plan);
      if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    }
    launch_kernel(norm_column_fold_kernel, {grid_for(a.cols), kBlockThreads, 0, s}, a, plan.chunks);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_norm_backward(const NormBackwardArgs& args, cudaStream_t stream) {
  return visit_dtype<dtypes::kFloating>(args.dtype, args.layer ? "layer_norm_backward" : "rms_norm_backward",
                                        [&](auto tag) { return launch_typed<typename decltype(tag)::type>(args, stream); });
}

}  // namespace mixt::cuda
