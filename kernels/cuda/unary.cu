// Device side of the unary ops (unary.cuh): the dtypes of kMainPart (bool, the
// integers, float32, float64), and launch_unary, which picks the part of a dtype.
#include <mixt/kernels/cuda/unary.cuh>

namespace mixt::cuda {

MIXT_DEFINE_ELEMENTWISE_PART(launch_unary_main, UnaryArgs, UnaryOp, MIXT_ELEMENTWISE_UNARY, UnaryRows, kMainPart)

cudaError_t launch_unary(const UnaryArgs& a, cudaStream_t stream) {
  if (dtypes::contains(kHalfPart, a.e.compute)) return launch_unary_half(a, stream);
  return launch_unary_main(a, stream);
}

}  // namespace mixt::cuda
