// Device kernels of cumsum and cumprod: one thread per line, scanning in order with
// the CPU's accumulators (double for floating inputs, wrapping int64 for integer and
// bool ones) and rounding each output once, so the results are the CPU's bits.
#include <mixt/kernels/common/reducers.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/kernels/cuda/reduce.cuh>
#include <mixt/kernels/cuda/reduce_launch.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

// Scans every line of `a` with accumulator Acc, storing as Out.
template <class T, class Acc, class Out>
__global__ void scan_kernel(ScanArgs a) {
  const char* in = static_cast<const char*>(a.in);
  char* out = static_cast<char*>(a.out);
  for (int64_t q = grid_start(); q < a.lines.numel; q += grid_step()) {
    int64_t off[2];
    element_offsets(a.lines, q, off);
    Acc acc = a.prod ? Acc(1) : Acc(0);
    for (int64_t k = 0; k < a.n; ++k) {
      const Acc v = static_cast<Acc>(load_opmath<T>(in + off[1] + k * a.in_stride));
      acc = a.prod ? reducers::mul(acc, v) : reducers::add(acc, v);
      *reinterpret_cast<Out*>(out + off[0] + k * a.out_stride) = store_as<Out>(acc);
    }
  }
}

template <class T, class Acc, class Out>
cudaError_t launch_typed(const ScanArgs& a, cudaStream_t s) {
  launch_kernel(scan_kernel<T, Acc, Out>, {blocks_for(a.lines.numel), kBlockThreads, 0, s}, a);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_scan(const ScanArgs& args, cudaStream_t stream) {
  if (args.lines.numel == 0 || args.n == 0) return cudaSuccess;
  return visit_dtype(args.in_dtype, "cumsum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<opmath_t<T>>) {
      return launch_typed<T, double, T>(args, stream);
    } else {
      // Out is int64, or the input's own type when that was requested.
      if (args.out_dtype == dtype_of<T>) return launch_typed<T, int64_t, T>(args, stream);
      return launch_typed<T, int64_t, int64_t>(args, stream);
    }
  });
}

}  // namespace mixt::cuda
