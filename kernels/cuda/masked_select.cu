// Device kernel of masked_select and nonzero: each selected element goes to the output
// row its inclusive rank names, so the rows keep the elements' row-major order.
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/kernels/cuda/sort_launch.h>

namespace mixt::cuda {
namespace {

template <class U>
__global__ void compact_values_kernel(CompactArgs a) {
  const U* src = static_cast<const U*>(a.src);
  U* out = static_cast<U*>(a.out);
  for (int64_t i = grid_start(); i < a.n; i += grid_step())
    if (a.selected[i]) out[a.rank[i] - 1] = src[i];
}

__global__ void compact_coordinates_kernel(CompactArgs a) {
  int64_t* out = static_cast<int64_t*>(a.out);
  for (int64_t i = grid_start(); i < a.n; i += grid_step()) {
    if (!a.selected[i]) continue;
    int64_t* row = out + (a.rank[i] - 1) * a.ndim;
    int64_t rem = i;
    for (int d = a.ndim - 1; d >= 0; --d) {
      row[d] = rem % a.sizes[d];
      rem /= a.sizes[d];
    }
  }
}

}  // namespace

cudaError_t launch_compact(const CompactArgs& a, cudaStream_t stream) {
  if (a.n == 0) return cudaSuccess;
  if (a.src == nullptr) {
    if (a.ndim > 0) launch_kernel(compact_coordinates_kernel, {grid_for(a.n), kBlockThreads, 0, stream}, a);
    return cudaGetLastError();
  }
  return visit_size(a.element_size, [&](auto u) {
    launch_kernel(compact_values_kernel<typename decltype(u)::type>, {grid_for(a.n), kBlockThreads, 0, stream}, a);
    return cudaGetLastError();
  });
}

}  // namespace mixt::cuda
