// Device side of the unary ops (unary.cuh) for float8_e4m3fn and float8_e5m2.
#include <mixt/kernels/cuda/unary.cuh>

namespace mixt::cuda {
MIXT_DEFINE_ELEMENTWISE_PART(launch_unary_fp8, UnaryArgs, UnaryOp, MIXT_ELEMENTWISE_UNARY, UnaryRows, kFp8Part)
}  // namespace mixt::cuda
