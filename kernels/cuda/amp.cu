// Device kernels of the grad scaler: the multi-tensor unscale + non-finite check and the
// scale update, with the CPU's per-element math (kernels/common/amp_math.h). The flag is
// written on the device; nothing here waits for the device.
#include <cstdint>

#include <mixt/kernels/common/launch_geometry.h>
#include <mixt/kernels/cuda/amp_launch.h>
#include <mixt/kernels/cuda/multi_tensor.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

// kVectorBytes of elements, loaded and stored as one 128-bit access.
template <class T>
struct alignas(kVectorBytes) Pack {
  T v[kVectorBytes / sizeof(T)];
};

// Checks (and unscales unless `check_only`) elements [begin, end) of p, thread by thread.
template <class T, bool check_only>
__device__ __forceinline__ bool unscale_range(T* p, int64_t begin, int64_t end, opmath_t<T> inv) {
  bool bad = false;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const T x = p[i];
    bad |= amp_math::non_finite(x);
    if constexpr (!check_only) p[i] = amp_math::unscale(x, inv);
  }
  return bad;
}

// The chunk in 128-bit packs when its start is aligned (chunks start at multiples of
// mt::kChunkElements, so that is the tensor's alignment), the rest element by element.
template <class T, bool check_only>
__device__ __forceinline__ bool unscale_chunk(T* p, int64_t length, opmath_t<T> inv) {
  constexpr int V = kVectorBytes / sizeof(T);
  const int64_t packs = reinterpret_cast<uintptr_t>(p) % kVectorBytes == 0 ? length / V : 0;
  bool bad = false;
  Pack<T>* q = reinterpret_cast<Pack<T>*>(p);
  for (int64_t k = threadIdx.x; k < packs; k += blockDim.x) {
    Pack<T> x = q[k];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      bad |= amp_math::non_finite(x.v[j]);
      if constexpr (!check_only) x.v[j] = amp_math::unscale(x.v[j], inv);
    }
    if constexpr (!check_only) q[k] = x;
  }
  return bad | unscale_range<T, check_only>(p, packs * V, length, inv);
}

template <class T>
__global__ void __launch_bounds__(kMultiTensorThreads) unscale_check_kernel(UnscaleArgs a) {
  using M = opmath_t<T>;
  const BlockChunk c = block_chunk(a.chunks);
  T* p = chunk_data<T>(a.chunks, c, 0);
  const M inv = static_cast<M>(*a.inv_scale);
  // inv == 1 only checks (x * 1 could change a NaN's payload; the CPU skips it too).
  const bool bad = inv == M(1) ? unscale_chunk<T, true>(p, c.length, inv) : unscale_chunk<T, false>(p, c.length, inv);
  // Every thread reaches the barrier; one store per block that saw a non-finite value.
  if (__syncthreads_or(bad) && threadIdx.x == 0) *a.found_inf = 1.0f;
}

__global__ void update_scale_kernel(UpdateScaleArgs a) {
  amp_math::ScaleState s{*a.scale, *a.growth_tracker, *a.hysteresis_tracker, *a.skipped_steps, *a.floor_hits};
  amp_math::update_scale(s, *a.found_inf != 0.0f, a.rule);
  *a.scale = s.scale;
  *a.growth_tracker = s.growth_tracker;
  *a.hysteresis_tracker = s.hysteresis_tracker;
  *a.skipped_steps = s.skipped_steps;
  *a.floor_hits = s.floor_hits;
}

}  // namespace

cudaError_t launch_unscale_check(const UnscaleArgs& a, cudaStream_t stream) {
  if (a.chunks.n_chunks == 0) return cudaSuccess;
  return visit_dtype<dtypes::kStandardFloat>(a.dtype, "amp_unscale_check_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_kernel(unscale_check_kernel<T>, {a.chunks.n_chunks, kMultiTensorThreads, 0, stream}, a);
    return cudaGetLastError();
  });
}

cudaError_t launch_update_scale(const UpdateScaleArgs& a, cudaStream_t stream) {
  launch_kernel(update_scale_kernel, {1, 1, 0, stream}, a);
  return cudaGetLastError();
}

}  // namespace mixt::cuda
