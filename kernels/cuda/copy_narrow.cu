// Device casts of copy_ from float16, bfloat16 and the float8 formats (copy.cuh).
#include <mixt/kernels/cuda/copy.cuh>

namespace mixt::cuda {

cudaError_t launch_cast_narrow_source(const CastArgs& a, cudaStream_t stream) {
  return launch_cast_from<kCastNarrowSources>(a, stream);
}

}  // namespace mixt::cuda
