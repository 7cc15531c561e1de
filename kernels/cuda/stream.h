// Host-side helpers for streams: the cudaStream_t behind a mixt::cuda::Stream, the
// current stream of a device without checks (for the kernels' hot path), and the key
// a stream has in the caching allocator. Host code only.
#pragma once

#include <cuda_runtime_api.h>

#include <mixt/runtime/caching_allocator.h>
#include <mixt/runtime/cuda_stream.h>

namespace mixt::cuda {

using detail::check_device;

// The cudaStream_t of `s`.
inline cudaStream_t native(const Stream& s) { return static_cast<cudaStream_t>(s.handle()); }

// This thread's current stream of device `index` (unchecked: the caller has validated it).
inline cudaStream_t current_native_stream(int index) {
  return static_cast<cudaStream_t>(detail::current_stream_handle(index));
}

// The allocator's key of `s`: the handle and the device index (Note [Stream keys]).
inline StreamKey stream_key(const Stream& s) {
  return (static_cast<StreamKey>(reinterpret_cast<uintptr_t>(s.handle())) << 8) |
         static_cast<StreamKey>(s.device_index());
}
// The stream a key names.
inline Stream stream_of_key(StreamKey key) {
  return Stream::from_handle(Device::cuda(static_cast<int>(key & 0xff)),
                             reinterpret_cast<void*>(static_cast<uintptr_t>(key >> 8)));
}

}  // namespace mixt::cuda
