// Device side of the binary ops (binary.cuh): the dtypes of kMainPart (bool, the
// integers, float32, float64), and launch_binary, which picks the part of a dtype.
#include <mixt/kernels/cuda/binary.cuh>

namespace mixt::cuda {

MIXT_DEFINE_ELEMENTWISE_PART(launch_binary_main, BinaryArgs, BinaryOp, MIXT_ELEMENTWISE_BINARY, BinaryRows, kMainPart)

cudaError_t launch_binary(const BinaryArgs& a, cudaStream_t stream) {
  if (dtypes::contains(kBinaryNarrowPart, a.e.compute)) return launch_binary_narrow(a, stream);
  return launch_binary_main(a, stream);
}

}  // namespace mixt::cuda
