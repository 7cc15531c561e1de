// Note [Stream-ordered caching allocator]: device memory is taken from the device in
// segments and handed out in blocks carved from them, so that the training loop's
// steady state never calls cudaMalloc/cudaFree (each costs far more than a kernel and
// cudaFree synchronizes the device).
// - Sizes round up to 512 bytes. Requests up to 1 MiB are small: they share 2 MiB
//   segments; larger ones get a segment of their size rounded up to 2 MiB.
// - A block is split when the rest is worth keeping (any rest in a small segment, more
//   than 1 MiB in a large one), and a freed block merges with its free neighbours in
//   the segment, so a segment whose blocks are all free is one block again.
// - Every segment, and every block carved from it, belongs to the stream it was
//   allocated on. Work on one stream runs in order, so a block freed on stream S can be
//   handed out again at once to an allocation on S: the new owner's kernels queue after
//   the old owner's. Allocations on other streams never get it.
// - A block also used on another stream T (record_stream) may still be read or written
//   by work queued on T when it is freed. The free does not wait: it records an event on
//   each such stream and parks the block; a parked block is reclaimed (becomes free on
//   S) once all its events have completed, checked without waiting at each allocation.
// - When the device is full: reclaim completed events, return every wholly free segment
//   to the device (on all streams), and try once more; if it still fails, raise an error
//   that names the request, the device and the pool's state.
// The bookkeeping is plain C++ over PoolBackend, so host tests check each rule with fake
// pointers and fake events (tests/cpu/test_caching_allocator.cpp).
#include <mixt/runtime/caching_allocator.h>

#include <functional>
#include <set>
#include <unordered_map>
#include <vector>

#include <mixt/runtime/check.h>

namespace mixt {

struct CachingPool::Block {
  enum class Status : uint8_t { Free, Allocated, Parked };
  char* ptr = nullptr;
  size_t size = 0;
  StreamKey stream = 0;
  bool small = false;  // carved from a small segment
  Status status = Status::Free;
  Block* prev = nullptr;  // neighbours in the segment (null at its ends)
  Block* next = nullptr;
  int pending_events = 0;         // while parked
  std::vector<StreamKey> uses;    // other streams the block is used on (record_stream)
};

namespace {

// Free blocks ordered by stream, then size, then address: the best fit on a stream is
// the first block not smaller than the request.
struct BlockLess {
  template <class B>
  bool operator()(const B* a, const B* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return std::less<const char*>()(a->ptr, b->ptr);
  }
};

// "12582912 bytes (12.0 MiB)".
std::string bytes_str(int64_t n) {
  return fmt::format("{} bytes ({:.1f} MiB)", n, static_cast<double>(n) / (1024.0 * 1024.0));
}

}  // namespace

struct CachingPool::State {
  using FreeSet = std::set<Block*, BlockLess>;
  struct ParkedEvent {
    PoolEvent event;
    Block* block;
  };

  FreeSet small_free, large_free;
  std::unordered_map<const void*, Block*> allocated;
  std::vector<ParkedEvent> parked;
  std::vector<PoolEvent> spare_events;
  CachingPoolStats counters;  // cached_bytes and largest_free_block are computed in stats()

  FreeSet& free_set(const Block* b) { return b->small ? small_free : large_free; }

  // Joins `right` into its left neighbour `left` (neither in a free set).
  static void join(Block* left, Block* right) {
    left->size += right->size;
    left->next = right->next;
    if (right->next) right->next->prev = left;
    delete right;
  }

  // Inserts `b` among the free blocks, merged with its free neighbours.
  void free_block(Block* b) {
    b->status = Block::Status::Free;
    if (Block* p = b->prev; p && p->status == Block::Status::Free) {
      free_set(p).erase(p);
      join(p, b);
      b = p;
    }
    if (Block* n = b->next; n && n->status == Block::Status::Free) {
      free_set(n).erase(n);
      join(b, n);
    }
    free_set(b).insert(b);
  }

  // Splits `b` (not in a free set) to `size` bytes when the rest is worth keeping; the
  // rest becomes a free block.
  void split(Block* b, size_t size) {
    const size_t rest_size = b->size - size;
    const bool worth = b->small ? rest_size >= kRound : rest_size > kSmallRequest;
    if (!worth) return;
    auto* rest = new Block;
    rest->ptr = b->ptr + size;
    rest->size = rest_size;
    rest->stream = b->stream;
    rest->small = b->small;
    rest->prev = b;
    rest->next = b->next;
    if (b->next) b->next->prev = rest;
    b->next = rest;
    b->size = size;
    free_set(rest).insert(rest);  // its next neighbour is not free: b was merged with it
  }

  // Reclaims the parked blocks whose events have all completed. Never waits.
  void process_events(PoolBackend& backend) {
    size_t kept = 0;
    for (size_t i = 0; i < parked.size(); ++i) {
      ParkedEvent p = parked[i];
      if (!backend.event_done(p.event)) {
        parked[kept++] = p;
        continue;
      }
      spare_events.push_back(p.event);
      if (--p.block->pending_events == 0) {
        counters.pending_free_bytes -= static_cast<int64_t>(p.block->size);
        backend.block_state(p.block->ptr, p.block->size, 0, p.block->stream);
        free_block(p.block);
      }
    }
    parked.resize(kept);
  }

  // Returns every wholly free segment to the device.
  void release_free_segments(PoolBackend& backend) {
    for (FreeSet* set : {&small_free, &large_free}) {
      for (auto it = set->begin(); it != set->end();) {
        Block* b = *it;
        if (b->prev || b->next) {
          ++it;
          continue;
        }
        backend.raw_free(b->ptr, b->size);
        it = set->erase(it);
        counters.reserved_bytes -= static_cast<int64_t>(b->size);
        --counters.segments;
        ++counters.device_frees;
        delete b;
      }
    }
  }

  // raw_malloc, counted.
  void* device_malloc(PoolBackend& backend, size_t bytes) {
    void* p = backend.raw_malloc(bytes);
    ++(p ? counters.device_mallocs : counters.failed_device_mallocs);
    return p;
  }

  int64_t largest_free() const {
    size_t largest = 0;
    for (const FreeSet* set : {&small_free, &large_free})
      for (const Block* b : *set) largest = std::max(largest, b->size);
    return static_cast<int64_t>(largest);
  }
};

CachingPool::CachingPool(PoolBackend& backend, std::string name)
    : backend_(backend), name_(std::move(name)), state_(std::make_unique<State>()) {}

CachingPool::~CachingPool() {
  State& s = *state_;
  try {
    s.process_events(backend_);
    s.release_free_segments(backend_);
  } catch (...) {  // a backend that cannot free at exit: the memory goes back with the process
  }
  for (PoolEvent e : s.spare_events) backend_.destroy_event(e);
  for (const auto& p : s.parked) backend_.destroy_event(p.event);
  // The bookkeeping of blocks still allocated or parked, and of the segments they sit in.
  std::set<Block*> blocks;
  for (auto* set : {&s.small_free, &s.large_free}) blocks.insert(set->begin(), set->end());
  for (const auto& [ptr, b] : s.allocated) blocks.insert(b);
  for (const auto& p : s.parked) blocks.insert(p.block);
  std::set<Block*> all;
  for (Block* b : blocks) {
    while (b->prev) b = b->prev;
    for (; b; b = b->next) all.insert(b);
  }
  for (Block* b : all) delete b;
}

size_t CachingPool::round_size(size_t nbytes) {
  if (nbytes < kRound) return kRound;
  return (nbytes + kRound - 1) / kRound * kRound;
}

size_t CachingPool::segment_size(size_t size) {
  if (size <= kSmallRequest) return kSmallSegment;
  return (size + kSegmentRound - 1) / kSegmentRound * kSegmentRound;
}

void* CachingPool::allocate(size_t nbytes, StreamKey stream) {
  if (nbytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  State& s = *state_;
  s.process_events(backend_);
  const size_t size = nbytes <= kMaxRequest ? round_size(nbytes) : 0;
  const bool small = size != 0 && size <= kSmallRequest;
  State::FreeSet& set = small ? s.small_free : s.large_free;

  Block* b = nullptr;
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = size ? set.lower_bound(&key) : set.end();
  if (it != set.end() && (*it)->stream == stream) {
    b = *it;
    set.erase(it);
    ++s.counters.cache_hits;
  } else {
    const size_t segment = size ? segment_size(size) : 0;
    void* p = size ? s.device_malloc(backend_, segment) : nullptr;
    int64_t returned = 0;
    if (!p && size) {
      // The device is full: give it back what the cache holds, and try once more.
      s.process_events(backend_);
      const int64_t before = s.counters.segments;
      s.release_free_segments(backend_);
      returned = before - s.counters.segments;
      p = s.device_malloc(backend_, segment);
    }
    if (!p) {
      const CachingPoolStats& c = s.counters;
      const std::string what =
          size ? fmt::format("the device refused a new segment of {} even after {} cached segment(s) were "
                             "returned to it",
                             bytes_str(static_cast<int64_t>(segment)), returned)
               : fmt::format("more than any device holds (at most {} per request)",
                             bytes_str(static_cast<int64_t>(kMaxRequest)));
      MIXT_FAIL("allocate",
                "out of memory on {}: {} requested: {}. Pool: {} allocated, {} reserved ({} cached, of which {} "
                "freed but still in use on other streams), largest free block {}, {} segment(s)",
                name_, bytes_str(static_cast<int64_t>(nbytes)), what, bytes_str(c.allocated_bytes),
                bytes_str(c.reserved_bytes), bytes_str(c.reserved_bytes - c.allocated_bytes),
                bytes_str(c.pending_free_bytes), bytes_str(s.largest_free()), c.segments);
    }
    b = new Block;
    b->ptr = static_cast<char*>(p);
    b->size = segment;
    b->stream = stream;
    b->small = small;
    s.counters.reserved_bytes += static_cast<int64_t>(segment);
    ++s.counters.segments;
  }
  s.split(b, size);
  b->status = Block::Status::Allocated;
  backend_.block_state(b->ptr, b->size, nbytes, stream);
  s.allocated.emplace(b->ptr, b);
  CachingPoolStats& c = s.counters;
  c.allocated_bytes += static_cast<int64_t>(b->size);
  c.peak_allocated_bytes = std::max(c.peak_allocated_bytes, c.allocated_bytes);
  ++c.allocations;
  return b->ptr;
}

void CachingPool::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  State& s = *state_;
  auto it = s.allocated.find(ptr);
  MIXT_CHECK(it != s.allocated.end(), "free", "{}: {} is not a block allocated by this pool (freed twice?)", name_,
             ptr);
  Block* b = it->second;
  s.allocated.erase(it);
  s.counters.allocated_bytes -= static_cast<int64_t>(b->size);
  if (b->uses.empty()) {
    backend_.block_state(b->ptr, b->size, 0, b->stream);
    s.free_block(b);
    return;
  }
  // Used on other streams: park it until what they have queued so far has run. If a
  // record fails the block stays parked for good (never reused while possibly in use).
  b->status = Block::Status::Parked;
  s.counters.pending_free_bytes += static_cast<int64_t>(b->size);
  const std::vector<StreamKey> uses = std::move(b->uses);
  b->uses.clear();
  for (StreamKey stream : uses) {
    PoolEvent e = nullptr;
    if (!s.spare_events.empty()) {
      e = s.spare_events.back();
      s.spare_events.pop_back();
    } else {
      e = backend_.create_event();
    }
    try {
      backend_.record_event(e, stream);
    } catch (...) {
      s.spare_events.push_back(e);
      ++b->pending_events;  // one that never completes
      throw;
    }
    ++b->pending_events;
    s.parked.push_back({e, b});
  }
}

void CachingPool::record_stream(void* ptr, StreamKey stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = state_->allocated.find(ptr);
  MIXT_CHECK(it != state_->allocated.end(), "record_stream",
             "{}: {} is not the start of a block allocated by this pool", name_, ptr);
  Block* b = it->second;
  if (stream == b->stream) return;
  for (StreamKey u : b->uses)
    if (u == stream) return;
  b->uses.push_back(stream);
}

void CachingPool::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  state_->process_events(backend_);
  state_->release_free_segments(backend_);
}

void CachingPool::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  state_->counters.peak_allocated_bytes = state_->counters.allocated_bytes;
}

CachingPoolStats CachingPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CachingPoolStats c = state_->counters;
  c.cached_bytes = c.reserved_bytes - c.allocated_bytes;
  c.largest_free_block = state_->largest_free();
  return c;
}

bool CachingPool::owns(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_->allocated.count(ptr) != 0;
}

StreamKey CachingPool::stream_of(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = state_->allocated.find(ptr);
  MIXT_CHECK(it != state_->allocated.end(), "stream_of", "{}: {} is not a block allocated by this pool", name_, ptr);
  return it->second->stream;
}

}  // namespace mixt
