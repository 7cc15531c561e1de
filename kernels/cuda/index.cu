// Device kernels of the indexing ops: one gather kernel (gather, index_select, embedding),
// the scatter kernels (scatter, scatter_add: in the CPU's order under a ScatterPlan, one
// thread per line or two passes over owners of disjoint positions, Note [Ordered
// scatter]; or per element), and masked_fill. Elements move as raw bits except for
// scatter_add's sums (kernels/common/index_math.h, the CPU's formula).
#include <type_traits>

#include <mixt/kernels/common/index_math.h>
#include <mixt/kernels/common/scatter_plan.h>
#include <mixt/kernels/cuda/index_launch.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

template <class I>
__device__ __forceinline__ int64_t load_index(const char* p) {
  return static_cast<int64_t>(*reinterpret_cast<const I*>(p));
}

template <class U, class I>
__global__ void gather_kernel(GatherArgs a) {
  const char* index = static_cast<const char*>(a.index);
  const char* src = static_cast<const char*>(a.src);
  char* out = static_cast<char*>(a.out);
  for (int64_t i = grid_start(); i < a.layout.numel; i += grid_step()) {
    int64_t off[3];
    element_offsets(a.layout, i, off);
    int64_t w;
    if (!index_math::wrap_index(load_index<I>(index + off[1]), a.size, &w)) {
      report_device_error(a.error, a.code);
      continue;
    }
    *reinterpret_cast<U*>(out + off[0]) = *reinterpret_cast<const U*>(src + off[2] + w * a.src_stride);
  }
}

// The atomic sum of scatter_add's parallel path.
template <class T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));  // wraps as int64
  } else {
    atomicAdd(p, v);
  }
}

// Index k of the line whose index starts at `index`: its position, or -1 (reported) when
// it is out of bounds.
template <class I>
__device__ __forceinline__ int64_t scatter_target(const ScatterArgs& a, const char* index, int64_t k) {
  int64_t w;
  if (index_math::wrap_index(load_index<I>(index + k * a.index_step), a.size, &w)) return w;
  report_device_error(a.error, DeviceError::ScatterOutOfBounds);
  return -1;
}

// Writes element k of the line at `off` (out, index, src) to position w. T: the storage
// type for Add, an unsigned type of the element size for Assign.
template <class T, ScatterMode mode, bool atomic>
__device__ __forceinline__ void scatter_one(const ScatterArgs& a, const int64_t (&off)[3], int64_t k, int64_t w) {
  T* dst = reinterpret_cast<T*>(static_cast<char*>(a.out) + off[0] + w * a.out_stride);
  const char* src = static_cast<const char*>(a.src);
  T v{};
  if (src != nullptr) v = *reinterpret_cast<const T*>(src + off[2] + k * a.src_step);
  else if constexpr (mode == ScatterMode::Assign) v = static_cast<T>(a.value_bits);
  if constexpr (mode == ScatterMode::Assign) {
    *dst = v;
  } else if constexpr (atomic) {
    atomic_add(dst, v);
  } else {
    *dst = index_math::scatter_add_value(*dst, v);
  }
}

// One thread per line, walking its plan.length elements in order (or per element).
template <class T, class I, ScatterMode mode, bool atomic>
__global__ void scatter_kernel(ScatterArgs a) {
  const char* index = static_cast<const char*>(a.index);
  for (int64_t line = grid_start(); line < a.layout.numel; line += grid_step()) {
    int64_t off[3];
    element_offsets(a.layout, line, off);
    for (int64_t k = 0; k < a.plan.length; ++k) {
      const int64_t w = scatter_target<I>(a, index + off[1], k);
      if (w >= 0) scatter_one<T, mode, atomic>(a, off, k, w);
    }
  }
}

// Pass 1 of a bucketed plan: thread (line, chunk) sorts its chunk's indices by owner.
template <class I>
__global__ void scatter_bucket_kernel(ScatterArgs a) {
  const ScatterPlan& p = a.plan;
  const char* index = static_cast<const char*>(a.index);
  for (int64_t t = grid_start(); t < p.lines * p.chunks; t += grid_step()) {
    const int64_t line = div_nonneg(t, p.chunks), c = t - line * p.chunks;
    int64_t off[2];
    element_offsets(a.layout, line, off);
    scatter_bucket_chunk(
        p, c, [&](int64_t k) { return scatter_target<I>(a, index + off[1], k); },
        scatter_line_ends(p, a.workspace, line), scatter_line_perm(p, a.workspace, line));
  }
}

// Pass 2: thread (line, owner) applies its positions' writes in index order.
template <class T, class I, ScatterMode mode>
__global__ void scatter_owned_kernel(ScatterArgs a) {
  const ScatterPlan& p = a.plan;
  const char* index = static_cast<const char*>(a.index);
  for (int64_t t = grid_start(); t < p.lines * p.owners; t += grid_step()) {
    const int64_t line = div_nonneg(t, p.owners), b = t - line * p.owners;
    int64_t off[3];
    element_offsets(a.layout, line, off);
    scatter_apply_owner(p, b, scatter_line_ends(p, a.workspace, line), scatter_line_perm(p, a.workspace, line),
                        [&](int64_t k) {
                          // Pass 1 kept only valid indices: nothing is reported twice.
                          scatter_one<T, mode, false>(a, off, k, scatter_target<I>(a, index + off[1], k));
                        });
  }
}

// Queues the kernels of `a`'s plan.
template <class T, class I, ScatterMode mode, bool atomic>
cudaError_t launch_scatter_typed(const ScatterArgs& a, cudaStream_t stream) {
  const ScatterPlan& p = a.plan;
  if constexpr (!atomic) {
    if (scatter_bucketed(p)) {
      if (a.workspace == nullptr) return cudaErrorInvalidValue;
      launch_kernel(scatter_bucket_kernel<I>, {grid_for(p.lines * p.chunks), kBlockThreads, 0, stream}, a);
      launch_kernel(scatter_owned_kernel<T, I, mode>, {grid_for(p.lines * p.owners), kBlockThreads, 0, stream}, a);
      return cudaGetLastError();
    }
  }
  launch_kernel(scatter_kernel<T, I, mode, atomic>, {grid_for(a.layout.numel), kBlockThreads, 0, stream}, a);
  return cudaGetLastError();
}

template <class U>
__global__ void masked_fill_kernel(MaskedFillArgs a, U value) {
  char* out = static_cast<char*>(a.out);
  const char* mask = static_cast<const char*>(a.mask);
  for (int64_t i = grid_start(); i < a.layout.numel; i += grid_step()) {
    int64_t off[2];
    element_offsets(a.layout, i, off);
    // Mask bytes are read as uint8 so a stray byte value cannot be an invalid bool.
    if (*reinterpret_cast<const uint8_t*>(mask + off[1]) != 0) *reinterpret_cast<U*>(out + off[0]) = value;
  }
}

template <class F>
cudaError_t visit_index(ScalarType t, F&& f) {
  if (t == ScalarType::Int32) return f(TypeTag<int32_t>{});
  if (t == ScalarType::Int64) return f(TypeTag<int64_t>{});
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_gather(const GatherArgs& a, cudaStream_t stream) {
  if (a.layout.numel == 0) return cudaSuccess;
  return visit_size(a.element_size, [&](auto u) {
    return visit_index(a.index_dtype, [&](auto i) {
      launch_kernel(gather_kernel<typename decltype(u)::type, typename decltype(i)::type>, {grid_for(a.layout.numel), kBlockThreads, 0, stream}, a);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_scatter(const ScatterArgs& a, cudaStream_t stream) {
  if (a.layout.numel == 0 || a.plan.length == 0) return cudaSuccess;
  return visit_index(a.index_dtype, [&](auto i) {
    using I = typename decltype(i)::type;
    if (a.mode == ScatterMode::Assign) {
      return visit_size(static_cast<int>(element_size(a.dtype)), [&](auto u) {
        return launch_scatter_typed<typename decltype(u)::type, I, ScatterMode::Assign, false>(a, stream);
      });
    }
    if (a.atomic) {
      switch (a.dtype) {
        case ScalarType::Float32: return launch_scatter_typed<float, I, ScatterMode::Add, true>(a, stream);
        case ScalarType::Float64: return launch_scatter_typed<double, I, ScatterMode::Add, true>(a, stream);
        case ScalarType::Int32: return launch_scatter_typed<int32_t, I, ScatterMode::Add, true>(a, stream);
        case ScalarType::Int64: return launch_scatter_typed<int64_t, I, ScatterMode::Add, true>(a, stream);
        default: return cudaErrorInvalidValue;
      }
    }
    return visit_dtype(a.dtype, "scatter_add", [&](auto t) {
      return launch_scatter_typed<typename decltype(t)::type, I, ScatterMode::Add, false>(a, stream);
    });
  });
}

cudaError_t launch_masked_fill(const MaskedFillArgs& a, cudaStream_t stream) {
  if (a.layout.numel == 0) return cudaSuccess;
  return visit_size(a.element_size, [&](auto u) {
    using U = typename decltype(u)::type;
    launch_kernel(masked_fill_kernel<U>, {grid_for(a.layout.numel), kBlockThreads, 0, stream}, a, static_cast<U>(a.value_bits));
    return cudaGetLastError();
  });
}

}  // namespace mixt::cuda
