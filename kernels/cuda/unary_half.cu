// Device side of the unary ops (unary.cuh) for float16 and bfloat16.
#include <mixt/kernels/cuda/unary.cuh>

namespace mixt::cuda {
MIXT_DEFINE_ELEMENTWISE_PART(launch_unary_half, UnaryArgs, UnaryOp, MIXT_ELEMENTWISE_UNARY, UnaryRows, kHalfPart)
}  // namespace mixt::cuda
