// The bookkeeping of a stream-ordered caching allocator (Note [Stream-ordered
// caching allocator]), in plain C++ over a small backend interface: the CUDA
// backend (kernels/cuda/allocator.cpp) adapts it to cudaMalloc and CUDA events,
// the tests drive it with fake pointers and fake events. No CUDA header here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace mixt {

// A stream as the pool sees it: an opaque key chosen by the backend (the CUDA
// backend packs the cudaStream_t and the device index into it).
using StreamKey = uint64_t;
// An event as the pool sees it: an opaque handle made by the backend.
using PoolEvent = void*;

// What the pool needs from a device. Every call is made under the pool's lock.
class PoolBackend {
 public:
  virtual ~PoolBackend() = default;
  // `bytes` of new device memory, or nullptr when the device has too little free
  // (other failures raise mixt::Error).
  virtual void* raw_malloc(size_t bytes) = 0;
  // Returns memory from raw_malloc to the device.
  virtual void raw_free(void* ptr, size_t bytes) = 0;
  // A new event (the pool keeps and reuses the events it creates).
  virtual PoolEvent create_event() = 0;
  // Records `event` on `stream`: it completes when the work queued there so far has.
  virtual void record_event(PoolEvent event, StreamKey stream) = 0;
  // True when the work recorded by `event` has completed. Never waits.
  virtual bool event_done(PoolEvent event) = 0;
  virtual void destroy_event(PoolEvent event) = 0;
  // A block of `bytes` at `ptr` was handed out for a request of `requested` bytes, or
  // (`requested` 0) became reusable, ordered on `stream`. The emulated CUDA device's
  // memcheck follows the blocks through these (kernels/cuda/allocator.cpp); others ignore them.
  virtual void block_state(void* ptr, size_t bytes, size_t requested, StreamKey stream) {
    (void)ptr, (void)bytes, (void)requested, (void)stream;
  }
};

// Counters of one pool (one device). Byte counts are of rounded block sizes.
struct CachingPoolStats {
  int64_t allocated_bytes = 0;       // in blocks handed out and not yet freed
  int64_t peak_allocated_bytes = 0;  // the most allocated_bytes since creation or reset_peak()
  int64_t reserved_bytes = 0;        // in segments taken from the device (allocated + cached)
  int64_t cached_bytes = 0;          // reserved - allocated: free blocks, and freed blocks still in use
  int64_t pending_free_bytes = 0;    // freed blocks waiting for events of other streams
  int64_t largest_free_block = 0;    // the largest block reusable now
  int64_t segments = 0;              // segments held
  int64_t allocations = 0;           // allocate() calls that returned memory
  int64_t cache_hits = 0;            // ... of which were served from cached blocks
  int64_t device_mallocs = 0;        // successful raw_malloc calls (segments created)
  int64_t failed_device_mallocs = 0; // raw_malloc calls that found the device full
  int64_t device_frees = 0;          // segments returned with raw_free
};

// One device's pool: thread-safe (one mutex). See Note [Stream-ordered caching allocator].
class CachingPool {
 public:
  static constexpr size_t kRound = 512;                 // every size is a multiple of this
  static constexpr size_t kSmallRequest = 1 << 20;      // requests up to 1 MiB are small
  static constexpr size_t kSmallSegment = 2 << 20;      // small requests share 2 MiB segments
  static constexpr size_t kSegmentRound = 2 << 20;      // large segments are multiples of 2 MiB
  static constexpr size_t kMaxRequest = size_t{1} << 56; // larger requests fail without asking the device

  // `name` names the device in errors ("cuda:0", "pinned host memory").
  CachingPool(PoolBackend& backend, std::string name);
  // Returns every free segment to the backend and destroys the pool's events; memory still
  // allocated (or waiting for events) is not freed.
  ~CachingPool();
  CachingPool(const CachingPool&) = delete;
  CachingPool& operator=(const CachingPool&) = delete;

  // A block of at least `nbytes` (nullptr for 0) whose later uses are ordered on `stream`.
  // Raises mixt::Error naming the request, the device and the pool's state when the device
  // is full even after the cache has been returned to it.
  void* allocate(size_t nbytes, StreamKey stream);
  // Returns a block from allocate(). Never waits: a block used on other streams
  // (record_stream) is parked until events recorded on those streams complete.
  void free(void* ptr);
  // Marks the block at `ptr` (a pointer from allocate()) as used on `stream` too.
  void record_stream(void* ptr, StreamKey stream);
  // Reclaims parked blocks whose events completed, and returns every wholly free segment
  // to the device.
  void empty_cache();
  // Sets the peak to the current allocated_bytes.
  void reset_peak();
  CachingPoolStats stats() const;
  // True when `ptr` is a block allocated here and not yet freed.
  bool owns(const void* ptr) const;
  // The stream the block at `ptr` was allocated on (mixt::Error if `ptr` is not allocated here).
  StreamKey stream_of(const void* ptr) const;

  // The size a request is served with (multiple of kRound, at least kRound).
  static size_t round_size(size_t nbytes);
  // The segment a new block of rounded size `size` is carved from.
  static size_t segment_size(size_t size);

 private:
  struct Block;
  struct State;
  PoolBackend& backend_;
  std::string name_;
  mutable std::mutex mutex_;
  std::unique_ptr<State> state_;
};

}  // namespace mixt
