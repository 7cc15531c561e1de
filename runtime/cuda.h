// CUDA discovery. Always available: without a GPU (or in a CPU-only build) it
// answers "unavailable" instead of failing.
#pragma once

#include <string>

#include <mixt/runtime/device.h>

namespace mixt::cuda {

// True when this build has the CUDA backend and a usable GPU is present.
bool is_available();
// Number of usable GPUs (0 when unavailable).
int device_count();
// Why CUDA is unavailable ("" when it is available): no CUDA backend in this build, no
// CUDA device found, or a driver error (with the driver's message).
std::string unavailable_reason();
// Waits for all work queued on the current device (no-op when unavailable).
void synchronize();
// True when this build compiled the CUDA backend (real or emulated).
bool is_compiled();
// True when the CUDA backend is the emulated device (-Dcuda=emulated): the CUDA code
// runs on the CPU, for tests; no speed measured on it is a GPU's (docs/emulated-cuda.md).
bool is_emulated();
// The name of CUDA device `index` as the runtime reports it (the emulated device's
// says so); raises when CUDA is unavailable or the device does not exist.
std::string device_name(int index);
// Queues one empty kernel (one block of one thread) on the current stream of `device`
// (no argument: the current device) and returns at once: the bare launch that
// `mixt-bench kernels --device cuda:k` compares the host cost of a dispatched op on
// cuda:k with. Raises when CUDA is unavailable or `device` is not one of its devices.
void launch_empty_kernel();
void launch_empty_kernel(Device device);

}  // namespace mixt::cuda
