// Device kernels of the indexing ops: one gather kernel (gather, index_select, embedding),
// one scatter kernel (scatter, scatter_add: per line in the CPU's order, or per element),
// and masked_fill. Elements move as raw bits except for scatter_add's sums
// (kernels/common/index_math.h, the CPU's formula).
#include <type_traits>

#include <mixt/kernels/common/index_math.h>
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

// T: the storage type for Add, an unsigned type of the element size for Assign.
template <class T, class I, ScatterMode mode, bool atomic>
__global__ void scatter_kernel(ScatterArgs a) {
  const char* index = static_cast<const char*>(a.index);
  const char* src = static_cast<const char*>(a.src);
  char* out = static_cast<char*>(a.out);
  T value{};
  if constexpr (mode == ScatterMode::Assign) value = static_cast<T>(a.value_bits);
  for (int64_t line = grid_start(); line < a.layout.numel; line += grid_step()) {
    int64_t off[3];
    element_offsets(a.layout, line, off);
    for (int64_t k = 0; k < a.line_length; ++k) {
      int64_t w;
      if (!index_math::wrap_index(load_index<I>(index + off[1] + k * a.index_step), a.size, &w)) {
        report_device_error(a.error, DeviceError::ScatterOutOfBounds);
        continue;
      }
      T* dst = reinterpret_cast<T*>(out + off[0] + w * a.out_stride);
      const T v = src != nullptr ? *reinterpret_cast<const T*>(src + off[2] + k * a.src_step) : value;
      if constexpr (mode == ScatterMode::Assign) {
        *dst = v;
      } else if constexpr (atomic) {
        atomic_add(dst, v);
      } else {
        *dst = index_math::scatter_add_value(*dst, v);
      }
    }
  }
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

// Calls f(TypeTag<U>) with the unsigned type of `size` bytes.
template <class F>
cudaError_t visit_size(int size, F&& f) {
  switch (size) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
    default: return cudaErrorInvalidValue;
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
      launch_kernel(gather_kernel<typename decltype(u)::type, typename decltype(i)::type>, {blocks_for(a.layout.numel), kBlockThreads, 0, stream}, a);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_scatter(const ScatterArgs& a, cudaStream_t stream) {
  if (a.layout.numel == 0 || a.line_length == 0) return cudaSuccess;
  const unsigned blocks = blocks_for(a.layout.numel);
  return visit_index(a.index_dtype, [&](auto i) {
    using I = typename decltype(i)::type;
    if (a.mode == ScatterMode::Assign) {
      return visit_size(static_cast<int>(element_size(a.dtype)), [&](auto u) {
        launch_kernel(scatter_kernel<typename decltype(u)::type, I, ScatterMode::Assign, false>, {blocks, kBlockThreads, 0, stream}, a);
        return cudaGetLastError();
      });
    }
    if (a.atomic) {
      switch (a.dtype) {
        case ScalarType::Float32: launch_kernel(scatter_kernel<float, I, ScatterMode::Add, true>, {blocks, kBlockThreads, 0, stream}, a); break;
        case ScalarType::Float64: launch_kernel(scatter_kernel<double, I, ScatterMode::Add, true>, {blocks, kBlockThreads, 0, stream}, a); break;
        case ScalarType::Int32: launch_kernel(scatter_kernel<int32_t, I, ScatterMode::Add, true>, {blocks, kBlockThreads, 0, stream}, a); break;
        case ScalarType::Int64: launch_kernel(scatter_kernel<int64_t, I, ScatterMode::Add, true>, {blocks, kBlockThreads, 0, stream}, a); break;
        default: return cudaErrorInvalidValue;
      }
      return cudaGetLastError();
    }
    return visit_dtype(a.dtype, "scatter_add", [&](auto t) {
      launch_kernel(scatter_kernel<typename decltype(t)::type, I, ScatterMode::Add, false>, {blocks, kBlockThreads, 0, stream}, a);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_masked_fill(const MaskedFillArgs& a, cudaStream_t stream) {
  if (a.layout.numel == 0) return cudaSuccess;
  return visit_size(a.element_size, [&](auto u) {
    using U = typename decltype(u)::type;
    launch_kernel(masked_fill_kernel<U>, {blocks_for(a.layout.numel), kBlockThreads, 0, stream}, a, static_cast<U>(a.value_bits));
    return cudaGetLastError();
  });
}

}  // namespace mixt::cuda
