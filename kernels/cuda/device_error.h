// Note [Device-side errors]: preconditions that the CPU checks by looking at the data
// (integer division by zero, an index out of bounds in gather/scatter/index_select/
// embedding) cannot be checked on CUDA without a device-to-host sync per op. Instead a
// kernel that meets such a value records an error
// code in its device's error word (the first code wins) and carries on with a harmless
// value; the host raises mixt::Error at the next point where it waits for the device
// anyway: cuda::synchronize(), Stream/Event::synchronize and every device-to-host copy
// (so item(), to(cpu) and printing raise it). The word lives in mapped, page-locked host
// memory, so reading it costs no transfer. Shared by .cu and .cpp files (no fmt).
// Reported so far: the indexing kernels' bad indices (kernels/cuda/index.cu), integer
// div / div_ by zero and integer pow / pow_ to a negative power (the elementwise kernels,
// kernels/cuda/elementwise.cuh), cross_entropy_rows' bad targets (kernels/cuda/cross_entropy.cu);
// none has run on a GPU yet.
#pragma once

#include <cstdint>

namespace mixt::cuda {

enum class DeviceError : uint32_t {
  None = 0,
  IntegerDivisionByZero = 1,
  IndexOutOfBounds = 2,
  // The indexing kernels' codes (kernels/cuda/index.cu): which op met the bad index.
  IndexSelectOutOfBounds = 3,
  EmbeddingOutOfBounds = 4,
  GatherOutOfBounds = 5,
  ScatterOutOfBounds = 6,
  NegativeIntegerPower = 7,  // pow: an integer base to a negative integer exponent
  CrossEntropyTargetOutOfBounds = 8,  // cross_entropy_rows(_backward): a target outside [0, C), not ignore_index
};

// What `e` means, for the error message.
constexpr const char* device_error_text(DeviceError e) {
  switch (e) {
    case DeviceError::None: return "no error";
    case DeviceError::IntegerDivisionByZero: return "integer division by zero";
    case DeviceError::IndexOutOfBounds: return "index out of bounds";
    case DeviceError::IndexSelectOutOfBounds: return "an index_select index out of bounds for its dimension";
    case DeviceError::EmbeddingOutOfBounds: return "an embedding index out of range of the weight's rows";
    case DeviceError::GatherOutOfBounds: return "a gather index out of bounds for its dimension";
    case DeviceError::ScatterOutOfBounds: return "a scatter/scatter_add index out of bounds for its dimension";
    case DeviceError::NegativeIntegerPower: return "integers to negative integer powers are not allowed";
    case DeviceError::CrossEntropyTargetOutOfBounds:
      return "a cross_entropy target outside [0, classes) that is not ignore_index";
  }
  return "an unknown device error";
}

#if defined(__CUDACC__) || defined(MIXT_EMULATED_DEVICE_CODE)
// Records `e` in the error word unless an earlier error is there (device code).
__device__ __forceinline__ void report_device_error(uint32_t* word, DeviceError e) {
  atomicCAS(word, 0u, static_cast<uint32_t>(e));
}
#endif

// Host side (device_error.cpp):
// The device pointer of device `index`'s error word (created on first use).
uint32_t* device_error_word(int index);
// Raises mixt::Error(`where`, ...) and clears the word when a kernel of device `index`
// has reported an error. Call only after waiting for the device's work.
void raise_device_error(int index, const char* where);

}  // namespace mixt::cuda
