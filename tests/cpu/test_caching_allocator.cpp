// The stream-ordered caching allocator's rules (Note [Stream-ordered caching
// allocator]) on the host: a fake backend hands out fake addresses (never
// dereferenced), fake events complete only when the test says so, and a capacity
// makes the device run out. Runs in every build, with or without CUDA.
#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/runtime/caching_allocator.h>
#include <mixt/runtime/cuda.h>
#include <mixt/runtime/cuda_memory.h>
#include <mixt/runtime/cuda_stream.h>
#include <mixt/runtime/error.h>
#include <mixt/runtime/ops/ops.h>

using namespace mixt;
using Catch::Matchers::Contains;

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;
constexpr StreamKey S1 = 0x100, S2 = 0x200, S3 = 0x300;

// A device with `capacity` bytes and events the test completes. Thread-safe: the pool
// calls it under its lock, the test completes events from its own threads.
class FakeBackend final : public PoolBackend {
 public:
  struct Event {
    std::atomic<bool> done{true};
    StreamKey stream = 0;
  };

  explicit FakeBackend(size_t capacity = size_t{1} << 40) : capacity_(capacity) {}

  void* raw_malloc(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++malloc_calls;
    if (in_use_ + bytes > capacity_) return nullptr;
    const uintptr_t p = next_;
    next_ += bytes + 64 * KiB;  // a gap: segments are never adjacent
    live_[p] = bytes;
    in_use_ += bytes;
    return reinterpret_cast<void*>(p);
  }
  void raw_free(void* ptr, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == live_.end() || it->second != bytes) ++bad_frees;
    else live_.erase(it);
    in_use_ -= bytes;
  }
  PoolEvent create_event() override {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::make_unique<Event>());
    return events_.back().get();
  }
  void record_event(PoolEvent e, StreamKey stream) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto* ev = static_cast<Event*>(e);
    ev->stream = stream;
    ev->done = false;
    ++records;
  }
  bool event_done(PoolEvent e) override { return static_cast<Event*>(e)->done.load(); }
  void destroy_event(PoolEvent e) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++destroyed_events;
    for (auto& ev : events_)
      if (ev.get() == e) ev.reset();
  }

  // The work queued on `stream` so far has run: its events complete.
  void complete(StreamKey stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& ev : events_)
      if (ev && ev->stream == stream) ev->done = true;
  }
  // Events recorded on `stream` that have not completed.
  int pending_on(StreamKey stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    int n = 0;
    for (auto& ev : events_)
      if (ev && ev->stream == stream && !ev->done) ++n;
    return n;
  }
  size_t events_created() {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_.size();
  }
  size_t live_segments() {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.size();
  }
  size_t in_use() {
    std::lock_guard<std::mutex> lock(mutex_);
    return in_use_;
  }

  int malloc_calls = 0, bad_frees = 0, records = 0, destroyed_events = 0;

 private:
  std::mutex mutex_;
  size_t capacity_;
  size_t in_use_ = 0;
  uintptr_t next_ = 0x100000000;
  std::map<uintptr_t, size_t> live_;
  std::vector<std::unique_ptr<Event>> events_;
};

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

TEST_CASE("caching pool: sizes round up to 512 bytes; small requests share 2 MiB segments", "[caching_allocator]") {
  CHECK(CachingPool::round_size(1) == 512);
  CHECK(CachingPool::round_size(512) == 512);
  CHECK(CachingPool::round_size(513) == 1024);
  CHECK(CachingPool::round_size(MiB) == MiB);
  CHECK(CachingPool::segment_size(512) == 2 * MiB);
  CHECK(CachingPool::segment_size(MiB) == 2 * MiB);          // the largest small request
  CHECK(CachingPool::segment_size(MiB + 512) == 2 * MiB);    // the smallest large one
  CHECK(CachingPool::segment_size(2 * MiB + 512) == 4 * MiB);
  CHECK(CachingPool::segment_size(10 * MiB + 512) == 12 * MiB);
  CHECK(CachingPool::segment_size(64 * MiB) == 64 * MiB);

  FakeBackend backend;
  CachingPool pool(backend, "fake:0");
  CHECK(pool.allocate(0, S1) == nullptr);
  void* a = pool.allocate(100, S1);
  void* b = pool.allocate(1000, S1);
  CHECK(addr(b) == addr(a) + 512);  // carved from the same segment, right after a
  auto s = pool.stats();
  CHECK(s.allocated_bytes == 512 + 1024);
  CHECK(s.reserved_bytes == static_cast<int64_t>(2 * MiB));
  CHECK(s.segments == 1);
  CHECK(s.device_mallocs == 1);
  CHECK(s.largest_free_block == static_cast<int64_t>(2 * MiB - 1536));

  // Large: a segment of its own, rounded to 2 MiB; a rest of 1 MiB or less is not split off.
  void* c = pool.allocate(3 * MiB, S1);
  s = pool.stats();
  CHECK(s.segments == 2);
  CHECK(s.reserved_bytes == static_cast<int64_t>(6 * MiB));
  CHECK(s.allocated_bytes == static_cast<int64_t>(1536 + 4 * MiB));
  // A small request never takes memory from a large segment, nor a large one from a small.
  pool.free(c);
  void* d = pool.allocate(4096, S1);
  CHECK(addr(d) == addr(b) + 1024);
  void* e = pool.allocate(1536 * KiB, S1);  // reuses the 4 MiB block and splits off 2.5 MiB
  CHECK(e == c);
  s = pool.stats();
  CHECK(s.segments == 2);
  CHECK(s.cache_hits == 3);  // b, d and e came from cached blocks
  CHECK(s.largest_free_block == static_cast<int64_t>(4 * MiB - 1536 * KiB));
  for (void* p : {a, b, d, e}) pool.free(p);
  CHECK(pool.stats().allocated_bytes == 0);
}

TEST_CASE("caching pool: blocks split, and merge with free neighbours of their segment", "[caching_allocator]") {
  FakeBackend backend;
  CachingPool pool(backend, "fake:0");
  void* a = pool.allocate(512, S1);
  void* b = pool.allocate(512, S1);
  void* c = pool.allocate(512, S1);
  CHECK(addr(b) == addr(a) + 512);
  CHECK(addr(c) == addr(b) + 512);
  pool.free(b);  // a hole between two allocated blocks
  CHECK(pool.stats().largest_free_block == static_cast<int64_t>(2 * MiB - 1536));
  // Best fit: the 512-byte hole, not the large tail.
  void* b2 = pool.allocate(300, S1);
  CHECK(b2 == b);
  pool.free(b2);
  pool.free(a);  // merges with the hole
  void* ab = pool.allocate(1024, S1);
  CHECK(ab == a);
  pool.free(ab);
  pool.free(c);  // merges with both sides: the segment is one block again
  auto s = pool.stats();
  CHECK(s.largest_free_block == static_cast<int64_t>(2 * MiB));
  CHECK(s.allocated_bytes == 0);
  CHECK(s.cached_bytes == static_cast<int64_t>(2 * MiB));
  // A whole free segment can go back to the device.
  pool.empty_cache();
  s = pool.stats();
  CHECK(s.reserved_bytes == 0);
  CHECK(s.segments == 0);
  CHECK(s.device_frees == 1);
  CHECK(backend.live_segments() == 0);
  CHECK(backend.bad_frees == 0);

  // Large segments split too when the rest is over 1 MiB; the rest merges back on free.
  void* big = pool.allocate(8 * MiB, S1);
  pool.free(big);
  void* x = pool.allocate(2 * MiB, S1);
  void* y = pool.allocate(2 * MiB, S1);
  CHECK(x == big);
  CHECK(addr(y) == addr(x) + 2 * MiB);
  CHECK(pool.stats().largest_free_block == static_cast<int64_t>(4 * MiB));
  pool.free(x);
  pool.free(y);
  CHECK(pool.stats().largest_free_block == static_cast<int64_t>(8 * MiB));
  CHECK(pool.stats().segments == 1);
}

TEST_CASE("caching pool: a block freed on a stream is reused at once on that stream, never on another",
          "[caching_allocator]") {
  FakeBackend backend;
  CachingPool pool(backend, "fake:0");
  void* p = pool.allocate(4096, S1);
  CHECK(pool.stream_of(p) == S1);
  pool.free(p);
  void* q = pool.allocate(4096, S1);
  CHECK(q == p);  // same stream: no event, no wait
  CHECK(pool.stats().cache_hits == 1);
  pool.free(q);
  void* r = pool.allocate(4096, S2);  // another stream: S1's free blocks are not its own
  CHECK(r != p);
  auto s = pool.stats();
  CHECK(s.device_mallocs == 2);
  CHECK(s.segments == 2);
  CHECK(pool.stream_of(r) == S2);
  CHECK(backend.records == 0);
  pool.free(r);
}

TEST_CASE("caching pool: a block used on other streams is reused only after their events complete",
          "[caching_allocator]") {
  FakeBackend backend;
  CachingPool pool(backend, "fake:0");
  void* p = pool.allocate(4096, S1);
  pool.record_stream(p, S1);  // its own stream: nothing to wait for
  pool.record_stream(p, S2);
  pool.record_stream(p, S2);  // once is enough
  pool.record_stream(p, S3);
  pool.free(p);  // returns at once: events recorded on S2 and S3, the block parked
  CHECK(backend.records == 2);
  CHECK(backend.pending_on(S2) == 1);
  CHECK(backend.pending_on(S3) == 1);
  auto s = pool.stats();
  CHECK(s.allocated_bytes == 0);
  CHECK(s.pending_free_bytes == 512 * 8);
  CHECK_FALSE(pool.owns(p));

  void* q = pool.allocate(4096, S1);
  CHECK(q != p);  // still in use on S2 and S3
  pool.free(q);
  backend.complete(S2);
  void* r = pool.allocate(4096, S1);
  CHECK(r == q);  // p still waits for S3; q was freed plainly
  backend.complete(S3);
  void* t = pool.allocate(4096, S1);
  CHECK(t == p);  // both events done: reclaimed and reused on S1
  CHECK(pool.stats().pending_free_bytes == 0);
  // The events are kept and reused for later frees.
  pool.record_stream(t, S2);
  pool.free(t);
  CHECK(backend.events_created() == 2);
  CHECK(backend.records == 3);
  pool.free(r);
}

TEST_CASE("caching pool: a free never waits, even when events never complete", "[caching_allocator]") {
  // The backend has no call that waits; with events that never complete the pool keeps
  // serving allocations from new segments and keeps the parked blocks out of use.
  FakeBackend backend;
  CachingPool pool(backend, "fake:0");
  std::vector<void*> seen;
  for (int i = 0; i < 20; ++i) {
    void* p = pool.allocate(MiB, S1);
    CHECK(std::find(seen.begin(), seen.end(), p) == seen.end());
    seen.push_back(p);
    pool.record_stream(p, S2);
    pool.free(p);
  }
  auto s = pool.stats();
  CHECK(s.pending_free_bytes == static_cast<int64_t>(20 * MiB));
  CHECK(s.segments == 10);  // two 1 MiB blocks per 2 MiB segment
  CHECK(s.largest_free_block == 0);
  // empty_cache cannot return segments whose blocks are parked.
  pool.empty_cache();
  CHECK(pool.stats().segments == 10);
  backend.complete(S2);
  pool.empty_cache();
  s = pool.stats();
  CHECK(s.segments == 0);
  CHECK(s.device_frees == 10);
  CHECK(backend.live_segments() == 0);
}

TEST_CASE("caching pool: when the device is full the cache is returned and the allocation retried",
          "[caching_allocator]") {
  FakeBackend backend(16 * MiB);
  CachingPool pool(backend, "fake:0");
  void* a = pool.allocate(6 * MiB, S1);
  void* b = pool.allocate(6 * MiB, S2);
  pool.free(a);  // cached on S1
  pool.free(b);  // cached on S2
  // 8 MiB does not fit next to 12 MiB cached: both cached segments go back, then it fits.
  void* c = pool.allocate(8 * MiB, S1);
  REQUIRE(c != nullptr);
  auto s = pool.stats();
  CHECK(s.failed_device_mallocs == 1);
  CHECK(s.device_frees == 2);
  CHECK(s.segments == 1);
  CHECK(s.reserved_bytes == static_cast<int64_t>(8 * MiB));
  CHECK(backend.in_use() == 8 * MiB);

  // A block parked on an event is not returned: its memory may still be in use.
  void* d = pool.allocate(4 * MiB, S1);
  pool.record_stream(d, S2);
  pool.free(d);
  try {
    pool.allocate(6 * MiB, S1);
    FAIL("expected mixt::Error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(e.op() == "allocate");
    CHECK_THAT(what, Contains("out of memory on fake:0"));
    CHECK_THAT(what, Contains("6291456 bytes (6.0 MiB) requested"));
    CHECK_THAT(what, Contains("8388608 bytes (8.0 MiB) allocated"));
    CHECK_THAT(what, Contains("12582912 bytes (12.0 MiB) reserved"));
    CHECK_THAT(what, Contains("of which 4194304 bytes (4.0 MiB) freed but still in use on other streams"));
    CHECK_THAT(what, Contains("largest free block 0 bytes"));
    CHECK_THAT(what, Contains("2 segment(s)"));
  }
  // Once the event completes the same request succeeds (the parked segment is returned).
  backend.complete(S2);
  void* e = pool.allocate(6 * MiB, S1);
  CHECK(e != nullptr);
  CHECK(pool.stats().segments == 2);

  // Requests beyond any device fail without asking it.
  const int calls = backend.malloc_calls;
  CHECK_THROWS_WITH(pool.allocate(size_t{1} << 60, S1),
                    Contains("out of memory on fake:0") && Contains("more than any device holds"));
  CHECK(backend.malloc_calls == calls);
  pool.free(c);
  pool.free(e);
}

TEST_CASE("caching pool: statistics, peak, empty_cache", "[caching_allocator]") {
  FakeBackend backend;
  CachingPool pool(backend, "fake:0");
  void* a = pool.allocate(3 * MiB, S1);  // 4 MiB block
  void* b = pool.allocate(1000, S1);     // 1 KiB of a 2 MiB segment
  auto s = pool.stats();
  CHECK(s.allocations == 2);
  CHECK(s.allocated_bytes == static_cast<int64_t>(4 * MiB + 1024));
  CHECK(s.peak_allocated_bytes == s.allocated_bytes);
  CHECK(s.reserved_bytes == static_cast<int64_t>(6 * MiB));
  CHECK(s.cached_bytes == static_cast<int64_t>(2 * MiB - 1024));
  CHECK(s.device_mallocs == 2);
  CHECK(s.cache_hits == 0);
  pool.free(a);
  s = pool.stats();
  CHECK(s.allocated_bytes == 1024);
  CHECK(s.peak_allocated_bytes == static_cast<int64_t>(4 * MiB + 1024));
  pool.reset_peak();
  CHECK(pool.stats().peak_allocated_bytes == 1024);
  void* c = pool.allocate(2 * MiB, S1);  // from the cached 4 MiB block
  s = pool.stats();
  CHECK(s.cache_hits == 1);
  CHECK(s.device_mallocs == 2);
  CHECK(s.allocated_bytes == static_cast<int64_t>(2 * MiB + 1024));  // split: the 2 MiB rest stays cached
  CHECK(s.peak_allocated_bytes == s.allocated_bytes);                 // the peak since the reset
  pool.free(c);
  pool.free(b);
  pool.empty_cache();
  s = pool.stats();
  CHECK(s.reserved_bytes == 0);
  CHECK(s.cached_bytes == 0);
  CHECK(s.device_frees == 2);
  CHECK(s.allocations == 3);
}

TEST_CASE("caching pool: foreign pointers and double frees raise", "[caching_allocator]") {
  FakeBackend backend;
  CachingPool pool(backend, "fake:0");
  int x = 0;
  CHECK_THROWS_WITH(pool.free(&x), Contains("fake:0") && Contains("not a block allocated by this pool"));
  void* p = pool.allocate(100, S1);
  CHECK_THROWS_AS(pool.record_stream(static_cast<char*>(p) + 8, S2), Error);
  pool.free(p);
  CHECK_THROWS_WITH(pool.free(p), Contains("freed twice"));
  CHECK_THROWS_AS(pool.record_stream(p, S2), Error);
  CHECK_THROWS_AS(pool.stream_of(p), Error);
  pool.free(nullptr);  // a no-op, like free(nullptr)
}

TEST_CASE("caching pool: destruction returns free segments and destroys the events", "[caching_allocator]") {
  FakeBackend backend;
  {
    CachingPool pool(backend, "fake:0");
    void* p = pool.allocate(MiB, S1);
    void* q = pool.allocate(5 * MiB, S1);
    pool.record_stream(p, S2);
    pool.free(p);
    backend.complete(S2);
    pool.free(q);
  }
  CHECK(backend.live_segments() == 0);
  CHECK(backend.destroyed_events == static_cast<int>(backend.events_created()));
  CHECK(backend.bad_frees == 0);
}

TEST_CASE("caching pool: threads allocate, record and free concurrently", "[caching_allocator][threads]") {
  // Each thread works on its own stream and hands some blocks to a neighbour's stream;
  // a completer thread finishes events meanwhile. Live blocks must never overlap.
  FakeBackend backend;
  CachingPool pool(backend, "fake:0");
  std::mutex live_mutex;
  std::map<uintptr_t, uintptr_t> live;  // start -> end of every block in use
  std::atomic<int> overlaps{0}, errors{0};
  std::atomic<bool> stop{false};
  constexpr int kThreads = 4, kIters = 2000;

  auto claim = [&](void* p, size_t n) {
    std::lock_guard<std::mutex> lock(live_mutex);
    const uintptr_t lo = addr(p), hi = lo + n;
    auto it = live.upper_bound(lo);
    if (it != live.end() && it->first < hi) ++overlaps;
    if (it != live.begin() && std::prev(it)->second > lo) ++overlaps;
    live[lo] = hi;
  };
  auto release = [&](void* p) {
    std::lock_guard<std::mutex> lock(live_mutex);
    live.erase(addr(p));
  };

  std::thread completer([&] {
    while (!stop.load()) {
      for (int t = 0; t < kThreads; ++t) backend.complete(StreamKey(t + 1) << 8);
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(1234 + t);
      const StreamKey mine = StreamKey(t + 1) << 8, other = StreamKey((t + 1) % kThreads + 1) << 8;
      std::vector<std::pair<void*, size_t>> held;
      try {
        for (int i = 0; i < kIters; ++i) {
          const size_t n = rng() % 4 == 0 ? (rng() % (6 * MiB)) + 1 : (rng() % (64 * KiB)) + 1;
          void* p = pool.allocate(n, mine);
          claim(p, n);
          if (rng() % 3 == 0) pool.record_stream(p, other);
          held.emplace_back(p, n);
          if (held.size() > 8 || rng() % 2 == 0) {
            const size_t k = rng() % held.size();
            release(held[k].first);
            pool.free(held[k].first);
            held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
          }
          if (i % 500 == 0) (void)pool.stats();
        }
        for (auto& [p, n] : held) {
          release(p);
          pool.free(p);
        }
      } catch (...) {
        ++errors;
      }
    });
  }
  for (auto& w : workers) w.join();
  stop = true;
  completer.join();

  CHECK(errors == 0);
  CHECK(overlaps == 0);
  for (int t = 0; t < kThreads; ++t) backend.complete(StreamKey(t + 1) << 8);
  pool.empty_cache();
  auto s = pool.stats();
  CHECK(s.allocated_bytes == 0);
  CHECK(s.pending_free_bytes == 0);
  CHECK(s.reserved_bytes == 0);
  CHECK(s.allocations == kThreads * kIters);
  CHECK(backend.live_segments() == 0);
  CHECK(backend.bad_frees == 0);
}

TEST_CASE("without a usable GPU, streams and pinned memory raise saying why; the CUDA statistics are zero",
          "[caching_allocator]") {
  if (cuda::is_available()) return;  // tests/cuda/test_cuda_allocator.cpp covers the GPU
  const Device gpu = Device::cuda(0);
  const std::string why = "CUDA is not available: " + cuda::unavailable_reason();
  CHECK_THROWS_WITH(cuda::current_stream(gpu), Contains(why));
  CHECK_THROWS_WITH(cuda::default_stream(gpu), Contains(why));
  CHECK_THROWS_WITH(cuda::create_stream(gpu), Contains(why));
  CHECK_THROWS_WITH(cuda::StreamGuard(cuda::Stream()), Contains(why));
  CHECK_THROWS_WITH(cuda::Stream().synchronize(), Contains(why));
  CHECK_THROWS_WITH(cuda::empty_pinned({4}, kFloat32), Contains(why));
  CHECK_THROWS_WITH(cuda::Stream::from_handle(Device::cpu(), nullptr), Contains("not cpu"));
  CHECK_THROWS_WITH(cuda::current_stream(Device::cpu()), Contains("needs a CUDA device"));
  cuda::Event e;
  CHECK(e.query());  // never recorded: nothing to wait for
  CHECK_FALSE(e.is_recorded());
  const CachingPoolStats s = cuda::memory_stats(gpu);
  CHECK(s.allocated_bytes == 0);
  CHECK(s.reserved_bytes == 0);
  CHECK(s.device_mallocs == 0);
  CHECK(cuda::pinned_memory_stats().reserved_bytes == 0);
  CHECK_FALSE(cuda::is_pinned(full({4}, 1.0)));
  cuda::empty_cache();  // nothing to return
  CHECK_THROWS_WITH(cuda::memory_stats(Device::cpu()), Contains("needs a CUDA device"));
}
