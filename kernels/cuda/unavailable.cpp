// The CUDA entry points of a build without the CUDA backend: CUDA is reported
// unavailable, never an error.
#include <mixt/dispatcher/op.h>
#include <mixt/runtime/cuda.h>

namespace mixt {

void register_cuda_kernels() {}

namespace cuda {
bool is_compiled() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() { return "this build of mixt has no CUDA backend (-Dcuda=disabled or no nvcc)"; }
void synchronize() {}
}  // namespace cuda

}  // namespace mixt
