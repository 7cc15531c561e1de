// Device kernels of the grad scaler: the multi-tensor unscale + non-finite check and the
// scale update, with the CPU's per-element math (kernels/common/amp_math.h). The flag is
// written on the device; nothing here waits for the device.
#include <mixt/kernels/cuda/amp_launch.h>
#include <mixt/kernels/cuda/multi_tensor.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

template <class T>
__global__ void __launch_bounds__(kMultiTensorThreads) unscale_check_kernel(UnscaleArgs a) {
  using M = opmath_t<T>;
  const BlockChunk c = block_chunk(a.chunks);
  T* p = chunk_data<T>(a.chunks, c, 0);
  const M inv = static_cast<M>(*a.inv_scale);
  bool bad = false;
  if (inv == M(1)) {
    for (int64_t i = threadIdx.x; i < c.length; i += blockDim.x) bad |= amp_math::non_finite(p[i]);
  } else {
    for (int64_t i = threadIdx.x; i < c.length; i += blockDim.x) {
      const T x = p[i];
      bad |= amp_math::non_finite(x);
      p[i] = amp_math::unscale(x, inv);
    }
  }
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
    unscale_check_kernel<T><<<a.chunks.n_chunks, kMultiTensorThreads, 0, stream>>>(a);
    return cudaGetLastError();
  });
}

cudaError_t launch_update_scale(const UpdateScaleArgs& a, cudaStream_t stream) {
  update_scale_kernel<<<1, 1, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace mixt::cuda
