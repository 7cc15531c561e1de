// Device kernels of add and mul over the floating dtypes, computed in opmath
// (float for the narrow floats) and rounded once on store. The functors are the
// CPU's (kernels/common/functors.h); device code is compiled with --fmad=false, so
// a + alpha * b rounds twice on both backends (Note [FMA policy]).
#include <mixt/kernels/common/functors.h>
#include <mixt/kernels/cuda/convert.cuh>
#include <mixt/kernels/cuda/launch.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

// One input operand: a tensor element or a scalar already in opmath.
template <class T>
struct Operand {
  using M = opmath_t<T>;
  const char* ptr;
  M value;
  bool scalar;
  __device__ __forceinline__ M at(int64_t byte_offset) const {
    return scalar ? value : fp_convert<M>(*reinterpret_cast<const T*>(ptr + byte_offset));
  }
};

// out[i] = op(a[i], b[i]) over one dense run (scalars ignore the offset).
template <class T, class Op>
__global__ void binary_contiguous_kernel(int64_t n, T* out, Operand<T> a, Operand<T> b, Op op) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const int64_t off = i * static_cast<int64_t>(sizeof(T));
    out[i] = fp_convert<T>(op(a.at(off), b.at(off)));
  }
}

// out = op(a, b) over any strides and broadcasts.
template <class T, class Op>
__global__ void binary_strided_kernel(StridedLayout L, char* out, Operand<T> a, Operand<T> b, Op op) {
  for (int64_t i = grid_start(); i < L.numel; i += grid_step()) {
    int64_t off[3];
    element_offsets(L, i, off);
    *reinterpret_cast<T*>(out + off[0]) = fp_convert<T>(op(a.at(off[1]), b.at(off[2])));
  }
}

// Launches op over storage type T.
template <class T, class Op>
cudaError_t launch_typed(const BinaryArgs& args, Op op, cudaStream_t stream) {
  using M = opmath_t<T>;
  const StridedLayout& L = args.layout.layout;
  if (L.numel == 0) return cudaSuccess;
  Operand<T> in[2];
  for (int k = 0; k < 2; ++k)
    in[k] = Operand<T>{static_cast<const char*>(args.in[k]), static_cast<M>(args.scalar[k]), args.is_scalar[k]};
  const unsigned blocks = blocks_for(L.numel);
  if (args.layout.contiguous) {
    binary_contiguous_kernel<T, Op><<<blocks, kBlockThreads, 0, stream>>>(
        L.numel, static_cast<T*>(args.out), in[0], in[1], op);
  } else {
    binary_strided_kernel<T, Op><<<blocks, kBlockThreads, 0, stream>>>(
        L, static_cast<char*>(args.out), in[0], in[1], op);
  }
  return cudaGetLastError();
}

// Picks the functor for storage type T.
template <class T>
cudaError_t launch_op(const BinaryArgs& args, cudaStream_t stream) {
  using M = opmath_t<T>;
  if (args.op == BinaryOp::Add) return launch_typed<T>(args, functors::Add<M>{static_cast<M>(args.alpha)}, stream);
  return launch_typed<T>(args, functors::Mul<M>{}, stream);
}

}  // namespace

cudaError_t launch_binary(const BinaryArgs& args, cudaStream_t stream) {
  return visit_dtype<dtypes::kFloating>(args.dtype, "add", [&](auto tag) {
    return launch_op<typename decltype(tag)::type>(args, stream);
  });
}

}  // namespace mixt::cuda
