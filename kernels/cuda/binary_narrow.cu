// Device side of the binary ops (binary.cuh) for float16, bfloat16 and the float8 formats.
#include <mixt/kernels/cuda/binary.cuh>

namespace mixt::cuda {
MIXT_DEFINE_ELEMENTWISE_PART(launch_binary_narrow, BinaryArgs, BinaryOp, MIXT_ELEMENTWISE_BINARY, BinaryRows,
                             kBinaryNarrowPart)
}  // namespace mixt::cuda
