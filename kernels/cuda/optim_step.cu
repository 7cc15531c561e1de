// Device kernels of the fused optimizer steps: one multi-tensor launch per argument block
// with the CPU's per-element math (kernels/common/optim_math.h), predicated on the
// found_inf flag read on the device, and a last kernel advancing the step counters.
#include <mixt/kernels/common/optim_math.h>
#include <mixt/kernels/cuda/multi_tensor.cuh>
#include <mixt/kernels/cuda/optim_launch.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

// Elements per thread and round of the step kernels.
constexpr int kIlp = 4;

__device__ __forceinline__ bool skipped(const float* found_inf) { return found_inf != nullptr && *found_inf != 0.0f; }

__device__ __forceinline__ double read_counter(const StepTable& t, int slot) {
  return t.is_double[slot] ? *static_cast<const double*>(t.ptr[slot])
                           : static_cast<double>(*static_cast<const float*>(t.ptr[slot]));
}

template <class P, bool L2, bool Ams>
__global__ void __launch_bounds__(kMultiTensorThreads) adam_kernel(AdamArgs a) {
  using M = opmath_t<P>;
  if (skipped(a.found_inf)) return;
  const BlockChunk c = block_chunk(a.chunks);
  const double step = read_counter(a.steps, c.slot) + 1.0;
  const auto k = optim_math::adam_consts<M>(optim_math::adam_step_scalars(a.lr, a.beta1, a.beta2, step), a.lr,
                                            a.beta1, a.beta2, a.eps, a.weight_decay, a.decoupled);
  P* p = chunk_data<P>(a.chunks, c, 0);
  const P* g = chunk_data<P>(a.chunks, c, 1);
  M* m = chunk_data<M>(a.chunks, c, 2);
  M* v = chunk_data<M>(a.chunks, c, 3);
  M* vmax = Ams ? chunk_data<M>(a.chunks, c, 4) : nullptr;
  // kIlp elements per thread and round: every load is issued before any math or store (the
  // lists may alias as far as the compiler knows, which would serialize a plain loop).
  for (int64_t base = 0; base < c.length; base += int64_t{kIlp} * blockDim.x) {
    P lp[kIlp] = {}, lg[kIlp] = {};
    M lm[kIlp] = {}, lv[kIlp] = {}, lx[kIlp] = {};
#pragma unroll
    for (int r = 0; r < kIlp; ++r) {
      const int64_t i = base + r * blockDim.x + threadIdx.x;
      if (i >= c.length) continue;
      lp[r] = p[i], lg[r] = g[i], lm[r] = m[i], lv[r] = v[i];
      if constexpr (Ams) lx[r] = vmax[i];
    }
#pragma unroll
    for (int r = 0; r < kIlp; ++r) optim_math::adam_update<L2, Ams>(lp, lg, lm, lv, lx, r, k);
#pragma unroll
    for (int r = 0; r < kIlp; ++r) {
      const int64_t i = base + r * blockDim.x + threadIdx.x;
      if (i >= c.length) continue;
      p[i] = lp[r], m[i] = lm[r], v[i] = lv[r];
      if constexpr (Ams) vmax[i] = lx[r];
    }
  }
}

template <class P, bool L2, bool Momentum, bool Nesterov>
__global__ void __launch_bounds__(kMultiTensorThreads) sgd_kernel(SgdArgs a) {
  using M = opmath_t<P>;
  if (skipped(a.found_inf)) return;
  const BlockChunk c = block_chunk(a.chunks);
  const bool init = Momentum && read_counter(a.steps, c.slot) == 0.0;
  const auto k = optim_math::sgd_consts<M>(a.lr, a.momentum, a.dampening, a.weight_decay);
  P* p = chunk_data<P>(a.chunks, c, 0);
  const P* g = chunk_data<P>(a.chunks, c, 1);
  M* buf = Momentum ? chunk_data<M>(a.chunks, c, 2) : nullptr;
  for (int64_t base = 0; base < c.length; base += int64_t{kIlp} * blockDim.x) {  // as adam_kernel
    P lp[kIlp] = {}, lg[kIlp] = {};
    M lb[kIlp] = {};
#pragma unroll
    for (int r = 0; r < kIlp; ++r) {
      const int64_t i = base + r * blockDim.x + threadIdx.x;
      if (i >= c.length) continue;
      lp[r] = p[i], lg[r] = g[i];
      if constexpr (Momentum) lb[r] = buf[i];
    }
#pragma unroll
    for (int r = 0; r < kIlp; ++r) optim_math::sgd_update<L2, Momentum, Nesterov>(lp, lg, lb, r, init, k);
#pragma unroll
    for (int r = 0; r < kIlp; ++r) {
      const int64_t i = base + r * blockDim.x + threadIdx.x;
      if (i >= c.length) continue;
      p[i] = lp[r];
      if constexpr (Momentum) buf[i] = lb[r];
    }
  }
}

__global__ void advance_steps_kernel(AdvanceStepsArgs a) {
  if (skipped(a.found_inf)) return;
  const int i = static_cast<int>(threadIdx.x);
  if (i >= a.n) return;
  if (a.is_double[i]) *static_cast<double*>(a.ptr[i]) += 1.0;
  else *static_cast<float*>(a.ptr[i]) = static_cast<float>(static_cast<double>(*static_cast<float*>(a.ptr[i])) + 1.0);
}

// Calls f.template operator()<flags...>() with runtime bools as template arguments.
template <bool... Done, class F>
cudaError_t with_flags(F&& f) {
  return f.template operator()<Done...>();
}
template <bool... Done, class F, class... Rest>
cudaError_t with_flags(F&& f, bool first, Rest... rest) {
  return first ? with_flags<Done..., true>(f, rest...) : with_flags<Done..., false>(f, rest...);
}

}  // namespace

cudaError_t launch_adam_step(const AdamArgs& a, cudaStream_t stream) {
  if (a.chunks.n_chunks == 0) return cudaSuccess;
  const bool l2 = !a.decoupled && a.weight_decay != 0.0;
  return visit_dtype<dtypes::kStandardFloat>(a.dtype, "adam_step_", [&](auto tag) {
    using P = typename decltype(tag)::type;
    return with_flags([&]<bool L2, bool Ams>() {
      launch_kernel(adam_kernel<P, L2, Ams>, {a.chunks.n_chunks, kMultiTensorThreads, 0, stream}, a);
      return cudaGetLastError();
    }, l2, a.amsgrad);
  });
}

cudaError_t launch_sgd_step(const SgdArgs& a, cudaStream_t stream) {
  if (a.chunks.n_chunks == 0) return cudaSuccess;
  return visit_dtype<dtypes::kStandardFloat>(a.dtype, "sgd_step_", [&](auto tag) {
    using P = typename decltype(tag)::type;
    return with_flags([&]<bool L2, bool Momentum, bool Nesterov>() {
      launch_kernel(sgd_kernel<P, L2, Momentum, Nesterov>, {a.chunks.n_chunks, kMultiTensorThreads, 0, stream}, a);
      return cudaGetLastError();
    }, a.weight_decay != 0.0, a.momentum != 0.0, a.nesterov);
  });
}

cudaError_t launch_advance_steps(const AdvanceStepsArgs& a, cudaStream_t stream) {
  if (a.n == 0) return cudaSuccess;
  launch_kernel(advance_steps_kernel, {1, AdvanceStepsArgs::kMaxCounters, 0, stream}, a);
  return cudaGetLastError();
}

}  // namespace mixt::cuda
