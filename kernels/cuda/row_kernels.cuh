// Shared steps of the kernels that give one block per row of contiguous values
// (softmax.cu, cross_entropy.cu; kernels/common/reduce_geometry.h's row plan). Device
// code only (nvcc).
#pragma once

#include <cstdint>

#include <mixt/kernels/common/reducers.h>
#include <mixt/kernels/cuda/reduce.cuh>

namespace mixt::cuda {

// The maximum of the row's n values in the compute type (a larger value or any NaN
// replaces it: the CPU's running maximum), folded in the tree order and given to every
// thread. Lanes read positions lane, lane + blockDim.x, ...; when `cache` is not null each
// value is also kept there (the row cache). Every thread of the block must call it.
template <class T>
__device__ __forceinline__ opmath_t<T> row_max_to_all(const T* x, int64_t n, opmath_t<T>* cache) {
  using M = opmath_t<T>;
  const int threads = static_cast<int>(blockDim.x), lane = static_cast<int>(threadIdx.x);
  const reducers::Extremum<M, true> max_r;
  M m = max_r.init();
  for (int64_t j = lane; j < n; j += threads) {
    const M v = load_opmath<T>(reinterpret_cast<const char*>(x + j));
    if (cache) cache[j] = v;
    max_r.accumulate(m, v, j);
  }
  m = group_reduce(max_r, m, threads);
  if (lane == 0) shared_partials<M>()[0] = m;
  __syncthreads();
  m = shared_partials<M>()[0];
  __syncthreads();
  return m;
}

}  // namespace mixt::cuda
