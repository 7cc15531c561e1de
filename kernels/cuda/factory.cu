// Device kernels of arange, linspace and the diagonal of eye, with the CPU's value
// formulas (kernels/common/factory_math.h) and conversions (kernels/common/convert.h).
#include <type_traits>

#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/cuda/factory_launch.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

template <class T>
__global__ void arange_kernel(ArangeArgs a) {
  T* out = static_cast<T*>(a.out);
  for (int64_t i = grid_start(); i < a.n; i += grid_step()) {
    if constexpr (std::is_integral_v<T>) {
      if (a.exact) {
        out[i] = convert<T>(factory_math::arange_int(a.start_int, a.step_int, i));
        continue;
      }
    }
    out[i] = convert<T>(factory_math::arange_double(a.start, a.step, i));
  }
}

template <class T>
__global__ void linspace_kernel(LinspaceArgs a) {
  T* out = static_cast<T*>(a.out);
  for (int64_t i = grid_start(); i < a.l.steps; i += grid_step()) out[i] = convert<T>(factory_math::linspace_value(a.l, i));
}

template <class U>
__global__ void eye_kernel(U* out, int64_t diag, int64_t cols, U one) {
  for (int64_t i = grid_start(); i < diag; i += grid_step()) out[i * cols + i] = one;
}

}  // namespace

cudaError_t launch_arange(const ArangeArgs& a, cudaStream_t stream) {
  if (a.n == 0) return cudaSuccess;
  return visit_dtype<dtypes::kNumeric>(a.dtype, "arange", [&](auto tag) {
    launch_kernel(arange_kernel<typename decltype(tag)::type>, {grid_for(a.n), kBlockThreads, 0, stream}, a);
    return cudaGetLastError();
  });
}

cudaError_t launch_linspace(const LinspaceArgs& a, cudaStream_t stream) {
  if (a.l.steps == 0) return cudaSuccess;
  return visit_dtype<dtypes::kNumeric>(a.dtype, "linspace", [&](auto tag) {
    launch_kernel(linspace_kernel<typename decltype(tag)::type>, {grid_for(a.l.steps), kBlockThreads, 0, stream}, a);
    return cudaGetLastError();
  });
}

cudaError_t launch_eye_diagonal(void* out, int64_t rows, int64_t cols, int element_size, uint64_t one, cudaStream_t s) {
  const int64_t diag = rows < cols ? rows : cols;
  if (diag == 0) return cudaSuccess;
  const unsigned b = grid_for(diag);
  switch (element_size) {
    case 1: launch_kernel(eye_kernel<uint8_t>, {b, kBlockThreads, 0, s}, static_cast<uint8_t*>(out), diag, cols, static_cast<uint8_t>(one)); break;
    case 2: launch_kernel(eye_kernel<uint16_t>, {b, kBlockThreads, 0, s}, static_cast<uint16_t*>(out), diag, cols, static_cast<uint16_t>(one)); break;
    case 4: launch_kernel(eye_kernel<uint32_t>, {b, kBlockThreads, 0, s}, static_cast<uint32_t*>(out), diag, cols, static_cast<uint32_t>(one)); break;
    case 8: launch_kernel(eye_kernel<uint64_t>, {b, kBlockThreads, 0, s}, static_cast<uint64_t*>(out), diag, cols, one); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace mixt::cuda
