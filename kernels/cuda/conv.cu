// Device kernels of im2col (a raw gather per column element) and col2im (each output
// element sums its columns in the CPU's order, in double, and rounds once).
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/cuda/conv_launch.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

template <class U>
__global__ void im2col_kernel(WindowArgs a) {
  const int64_t taps = a.w.taps(), plane = a.w.plane(), n = a.planes * taps;
  const U* in = static_cast<const U*>(a.in);
  U* out = static_cast<U*>(a.out);
  for (int64_t e = grid_start(); e < n; e += grid_step()) {
    const int64_t pl = e / taps, col = e - pl * taps;
    const int64_t i = conv::im2col_source(a.w, col);
    out[e] = i >= 0 ? in[pl * plane + i] : U(0);  // +0.0 of every floating dtype
  }
}

template <class T>
__global__ void col2im_kernel(WindowArgs a) {
  const int64_t taps = a.w.taps(), plane = a.w.plane(), n = a.planes * plane;
  const T* in = static_cast<const T*>(a.in);
  T* out = static_cast<T*>(a.out);
  for (int64_t e = grid_start(); e < n; e += grid_step()) {
    const int64_t pl = e / plane, i = e - pl * plane;
    const T* cols = in + pl * taps;
    double acc = 0.0;
    conv::for_each_contribution(a.w, i / a.w.in[1], i % a.w.in[1],
                                [&](int64_t col) { acc += static_cast<double>(cols[col]); });
    out[e] = convert<T>(acc);
  }
}

}  // namespace

cudaError_t launch_im2col(const WindowArgs& a, cudaStream_t stream) {
  const int64_t n = a.planes * a.w.taps();
  if (n == 0) return cudaSuccess;
  const unsigned blocks = grid_for(n);
  switch (element_size(a.dtype)) {
    case 1: launch_kernel(im2col_kernel<uint8_t>, {blocks, kBlockThreads, 0, stream}, a); break;
    case 2: launch_kernel(im2col_kernel<uint16_t>, {blocks, kBlockThreads, 0, stream}, a); break;
    case 4: launch_kernel(im2col_kernel<uint32_t>, {blocks, kBlockThreads, 0, stream}, a); break;
    case 8: launch_kernel(im2col_kernel<uint64_t>, {blocks, kBlockThreads, 0, stream}, a); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_col2im(const WindowArgs& a, cudaStream_t stream) {
  const int64_t n = a.planes * a.w.plane();
  if (n == 0) return cudaSuccess;
  return visit_dtype<dtypes::kFloating>(a.dtype, "col2im", [&](auto tag) {
    launch_kernel(col2im_kernel<typename decltype(tag)::type>, {grid_for(n), kBlockThreads, 0, stream}, a);
    return cudaGetLastError();
  });
}

}  // namespace mixt::cuda
