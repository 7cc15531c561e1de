// The CUDA entry points of a build without the CUDA backend: CUDA is reported
// unavailable, never an error, and CUDA memory is refused saying so.
#include <mixt/dispatcher/op.h>
#include <mixt/runtime/allocator.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/cuda.h>

namespace mixt {
namespace {

// The CUDA allocator of this build: every request raises, with the reason.
class UnavailableAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    MIXT_FAIL("allocate", "cannot allocate {} bytes on {}: CUDA is not available: {}", nbytes, device,
              cuda::unavailable_reason());
  }
};

UnavailableAllocator g_unavailable;

}  // namespace

void register_cuda_kernels() { set_allocator(DeviceType::CUDA, &g_unavailable); }

namespace cuda {
bool is_compiled() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() { return "no CUDA in this build: mixt was built without its CUDA backend (-Dcuda=disabled or no nvcc)"; }
void synchronize() {}
}  // namespace cuda

}  // namespace mixt
