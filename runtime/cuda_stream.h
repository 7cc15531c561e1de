// CUDA streams and events, and the current stream of each thread and device. Free of
// CUDA headers: a stream or event is an opaque handle here (a cudaStream_t /
// cudaEvent_t in kernels/cuda). Without the CUDA backend, or without a GPU, every
// call that would touch a stream raises mixt::Error saying why CUDA is unavailable.
#pragma once

#include <cstdint>
#include <utility>

#include <mixt/runtime/device.h>

namespace mixt {
class Tensor;
}

namespace mixt::cuda {

// A CUDA stream of one device: a queue whose work runs in order. A value type (copies
// name the same stream); streams made by create_stream() live until the process exits.
class Stream {
 public:
  // The default stream of cuda:0.
  Stream() = default;
  // Names the cudaStream_t `handle` of `device` (nullptr: its default stream). For
  // streams made elsewhere (another library's): not owned, it must outlive every use
  // through mixt.
  static Stream from_handle(Device device, void* handle);

  Device device() const { return Device::cuda(device_); }
  int device_index() const { return device_; }
  // The cudaStream_t (nullptr for the default stream).
  void* handle() const { return handle_; }
  bool is_default() const { return handle_ == nullptr; }
  // True when all work queued on the stream has completed. Never waits.
  bool query() const;
  // Waits until all work queued on the stream has completed.
  void synchronize() const;
  // The stream's priority (lower numbers run first, as in CUDA).
  int priority() const;

  bool operator==(const Stream& o) const { return device_ == o.device_ && handle_ == o.handle_; }
  bool operator!=(const Stream& o) const { return !(*this == o); }

 private:
  Stream(int device, void* handle) : device_(static_cast<int8_t>(device)), handle_(handle) {}

  int8_t device_ = 0;
  void* handle_ = nullptr;
};

// The default (legacy) stream of `device`, which orders itself with every blocking stream.
Stream default_stream(Device device);
// A new non-blocking stream on `device` (it does not wait for the default stream). Lower
// `priority` numbers run first; values outside the device's range are clamped to it
// (stream_priority_range). Streams are never destroyed: make a few and reuse them.
Stream create_stream(Device device, int priority = 0);
// The device's priority range: {least, greatest} (greatest is the lower number).
struct PriorityRange {
  int least = 0;
  int greatest = 0;
};
PriorityRange stream_priority_range(Device device);

// The stream this thread queues work for `device` on (its default stream unless set).
Stream current_stream(Device device);
// Makes `stream` this thread's current stream for its device.
void set_current_stream(const Stream& stream);

// Makes `stream` current (for its device, on this thread) for the guard's lifetime,
// then restores the stream that was current before.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// A CUDA event: a marker in a stream's queue that other streams and the host can wait
// for. Made on the device of the first stream it is recorded on; move-only.
class Event {
 public:
  // `enable_timing`: elapsed_ms() can measure between two such events.
  explicit Event(bool enable_timing = false) : timing_(enable_timing) {}
  ~Event();
  Event(Event&& o) noexcept { swap(o); }
  Event& operator=(Event&& o) noexcept {
    swap(o);  // o's destructor destroys this event's previous handle
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Marks the work queued on `stream` so far (raises if recorded before on another device).
  void record(const Stream& stream);
  // Makes the work queued on `stream` from now on wait for the recorded work (a no-op
  // if the event was never recorded). The host does not wait.
  void wait(const Stream& stream) const;
  // True when the recorded work has completed (or nothing was recorded). Never waits.
  bool query() const;
  // Waits until the recorded work has completed.
  void synchronize() const;
  // Milliseconds between this event and `end`, both recorded, completed and made with
  // timing enabled.
  float elapsed_ms(const Event& end) const;
  bool is_recorded() const { return handle_ != nullptr; }
  // The cudaEvent_t (nullptr until the first record).
  void* handle() const { return handle_; }

 private:
  void swap(Event& o) noexcept {
    std::swap(handle_, o.handle_);
    std::swap(device_, o.device_);
    std::swap(timing_, o.timing_);
  }

  void* handle_ = nullptr;
  int8_t device_ = -1;
  bool timing_ = false;
};

// Tells the CUDA allocator that `t`'s memory is used by work queued on `stream` (not the
// stream it was allocated on): when `t`'s storage is freed, the memory is reused only
// after the work queued on `stream` by then has completed. The free never waits.
void record_stream(const Tensor& t, const Stream& stream);

namespace detail {
// Raises mixt::Error from `op` unless `device` is a CUDA device present on this machine.
void check_device(Device device, const char* op);
// This thread's current stream of CUDA device `index` (nullptr: the default), unchecked.
void* current_stream_handle(int index);
}  // namespace detail

}  // namespace mixt::cuda
