// Device side of the reductions: loads into the compute type, stores with the CPU's
// rounding, and the group reduction of kernels/common/reduce_geometry.h run by a CUDA
// block. Device code only (nvcc).
//
// Note [Deterministic reductions] (docs/notes/cuda.md): every reduction has a fixed
// combine order for a given shape: each lane folds its positions in increasing order, the
// lanes of a group meet in the tree of group_tree_level (its levels across warps through
// shared memory, those inside a warp by warp shuffles: the same pairs, the same order), and
// chunks of a long reduction are folded in chunk order by a second kernel (no atomics,
// no dependence on scheduling). The accumulators are the CPU's (double for floating sums,
// wrapping int64 for integers), so exact reducers (integers, min/max, arg*, any/all)
// give the CPU's bits, and floating sums differ from the CPU's only by the order of
// their double additions (invisible after the rounding to float32 or narrower in all but
// rare ties; float64 results within a few ulps of the sum of magnitudes).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/reduce_geometry.h>
#include <mixt/kernels/common/reducers.h>
#include <mixt/kernels/cuda/convert.cuh>
#include <mixt/kernels/cuda/launch_kernel.cuh>
#include <mixt/runtime/dtype.h>

namespace mixt::cuda {

// Reads one element of storage type T as its compute type (float for the narrow floats).
template <class T>
__device__ __forceinline__ opmath_t<T> load_opmath(const char* p) {
  const T v = *reinterpret_cast<const T*>(p);
  if constexpr (is_narrow_float_v<T>) return fp_convert<float>(v);
  else return v;
}

// Rounds (or wraps) a computed value into storage type T as the CPU's convert<T> does.
template <class T, class V>
__device__ __forceinline__ T store_as(V v) {
  if constexpr (std::is_floating_point_v<opmath_t<T>> && std::is_floating_point_v<V>) return fp_convert<T>(v);
  else return convert<T>(v);
}

// The block's dynamic shared memory: the partials first (blockDim.x accumulators), then
// what a row kernel keeps there (row_cache_offset).
__device__ __forceinline__ unsigned char* shared_bytes() {
  MIXT_DYNAMIC_SHARED_BYTES(mixt_reduce_smem);
  return mixt_reduce_smem;
}
template <class Acc>
__device__ __forceinline__ Acc* shared_partials() {
  return reinterpret_cast<Acc*>(shared_bytes());
}

constexpr int kWarpLanes = 32;

// The lanes of the calling thread's warp that exist (a block's last warp may be partial).
// One-dimensional blocks.
__device__ __forceinline__ unsigned warp_lanes() {
  const unsigned rest = blockDim.x - threadIdx.x / kWarpLanes * kWarpLanes;
  return rest >= kWarpLanes ? 0xffffffffu : (1u << rest) - 1u;
}

// `v` of the lane `delta` above the caller's in its warp (__shfl_down_sync), for any
// trivially copyable value: moved in 8-byte words when its size allows, else in 4-byte
// words (the last one padded). Every lane of `mask` must call it.
template <class T>
__device__ __forceinline__ T shuffle_down(T v, unsigned delta, unsigned mask) {
  if constexpr (sizeof(T) % 8 == 0) {
    unsigned long long w[sizeof(T) / 8];
    memcpy(w, &v, sizeof(T));
    for (unsigned long long& x : w) x = __shfl_down_sync(mask, x, delta);
    memcpy(&v, w, sizeof(T));
  } else {
    unsigned w[(sizeof(T) + 3) / 4] = {};
    memcpy(w, &v, sizeof(T));
    for (unsigned& x : w) x = __shfl_down_sync(mask, x, delta);
    memcpy(&v, w, sizeof(T));
  }
  return v;
}

// Folds the group's partials (`acc` from each lane) with the fixed tree and returns the
// result in lane 0 (other lanes' values are partial). Every thread of the block must
// call it (it synchronizes the block when the group spans warps); `group` is a power of
// two dividing blockDim.x. The tree's levels whose pairs sit in different warps go
// through shared memory; the last five (pairs inside a warp) are warp shuffles, so a
// block of 256 threads pays three barriers instead of eight. Lane i takes lane i + s at
// each level s either way: the result is the same.
template <class R>
__device__ __forceinline__ typename R::acc_t group_reduce(const R& r, typename R::acc_t acc, int group) {
  using acc_t = typename R::acc_t;
  if (group == 1) return acc;
  const int lane = static_cast<int>(threadIdx.x) % group;
  int s = group / 2;
  if (group > kWarpLanes) {
    acc_t* partials = shared_partials<acc_t>();
    acc_t* mine = partials + (threadIdx.x - lane);
    partials[threadIdx.x] = acc;
    for (; s >= kWarpLanes; s >>= 1) {
      __syncthreads();
      group_tree_level(r, mine, lane, s);
    }
    __syncthreads();
    acc = mine[lane];
    __syncthreads();  // the partials may be reused at once
  }
  const unsigned mask = warp_lanes();
  for (; s > 0; s >>= 1) {
    const acc_t other = shuffle_down(acc, static_cast<unsigned>(s), mask);
    if (lane < s) r.combine(acc, other);
  }
  return acc;
}

// The block's sum of the per-thread values `v` in the fixed tree order, given to every
// thread. Every thread of the block must call it (it synchronizes and uses the partials).
__device__ __forceinline__ double block_sum(double v) {
  const reducers::Sum<double> r;
  v = group_reduce(r, v, static_cast<int>(blockDim.x));
  if (threadIdx.x == 0) shared_partials<double>()[0] = v;
  __syncthreads();
  v = shared_partials<double>()[0];
  __syncthreads();
  return v;
}

// The strided reduction: output o (of g.out_numel) folds load(base + offsets) over the
// reduced positions of chunk blockIdx.y; the result goes to store(o, acc), or to
// partials[o * splits + chunk] when the plan has chunks (then reduce_partials_kernel
// stores).
// Launched with plan.blocks x plan.splits blocks of plan.block threads and
// plan.block * sizeof(acc_t) bytes of shared memory.
template <class R, class Load, class Store>
__global__ void reduce_kernel(ReduceGeometry g, ReduceLaunch plan, const char* in, R r, Load load, Store store,
                              typename R::acc_t* partials) {
  using acc_t = typename R::acc_t;
  const int group = plan.group;
  const int lane = static_cast<int>(threadIdx.x) % group;
  const int64_t slot = threadIdx.x / group;
  const int64_t chunk = blockIdx.y, first_k = chunk * plan.chunk;
  const int64_t end_k = first_k + plan.chunk < g.red_numel ? first_k + plan.chunk : g.red_numel;
  // The trip count is the same for every thread of a block (group_reduce synchronizes).
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * plan.outputs_per_block; first < g.out_numel;
       first += static_cast<int64_t>(gridDim.x) * plan.outputs_per_block) {
    const int64_t o = first + slot;
    acc_t acc = r.init();
    if (o < g.out_numel) {
      const char* base = in + kept_offset(g, o);
      for (int64_t k = first_k + lane; k < end_k; k += group) r.accumulate(acc, load(base + reduced_offset(g, k)), k);
    }
    acc = group_reduce(r, acc, group);
    if (lane == 0 && o < g.out_numel) {
      if (partials) partials[o * plan.splits + chunk] = acc;
      else store(o, acc);
    }
  }
}

// The second pass: output o folds its chunks' partials in chunk order and stores.
template <class R, class Store>
__global__ void reduce_partials_kernel(int64_t out_numel, int64_t splits, const typename R::acc_t* partials, R r,
                                       Store store) {
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < out_numel;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    typename R::acc_t acc = partials[o * splits];
    for (int64_t c = 1; c < splits; ++c) r.combine(acc, partials[o * splits + c]);
    store(o, acc);
  }
}

// exp of a compute-type value: float through double (so the result is the correctly
// rounded expf in all but rare double-rounding cases, as the CPU's C library gives).
__device__ __forceinline__ float exp_m(float x) { return static_cast<float>(::exp(static_cast<double>(x))); }
__device__ __forceinline__ double exp_m(double x) { return ::exp(x); }

// Launches the reduction of plan `plan` on `stream`; `workspace` holds
// out_numel * splits * kReduceMaxAccBytes bytes when plan.splits > 1.
template <class R, class Load, class Store>
cudaError_t launch_reduce_kernel(const ReduceGeometry& g, const ReduceLaunch& plan, const void* in, const R& r,
                                 Load load, Store store, void* workspace, cudaStream_t stream) {
  using acc_t = typename R::acc_t;
  static_assert(sizeof(acc_t) <= kReduceMaxAccBytes, "the workspace holds kReduceMaxAccBytes per partial");
  if (g.out_numel == 0) return cudaSuccess;
  const size_t smem = plan.group > 1 ? static_cast<size_t>(plan.block) * sizeof(acc_t) : 0;
  const char* p = static_cast<const char*>(in);
  if (plan.splits <= 1) {
    launch_kernel(reduce_kernel<R, Load, Store>, {grid_blocks(plan.blocks), plan.block, smem, stream}, g, plan, p, r, load, store, nullptr);
    return cudaGetLastError();
  }
  if (workspace == nullptr) return cudaErrorInvalidValue;
  acc_t* partials = static_cast<acc_t*>(workspace);
  const dim3 grid(grid_blocks(plan.blocks), static_cast<unsigned>(plan.splits));
  launch_kernel(reduce_kernel<R, Load, Store>, {grid, plan.block, smem, stream}, g, plan, p, r, load, store, partials);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  launch_kernel(reduce_partials_kernel<R, Store>, {grid_for(g.out_numel), kBlockThreads, 0, stream}, g.out_numel, plan.splits, partials, r,
                                                                               store);
  return cudaGetLastError();
}

}  // namespace mixt::cuda
