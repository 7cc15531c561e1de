// The emulated device's memcheck, initcheck and racecheck (access_checks.h; Note
// [Access instrumentation] in docs/notes/emulated-cuda.md). Every device allocation
// has one shadow byte per byte (addressable, written) and, once a kernel writes it
// without atomics, one racecheck tag per byte (the launch and block that wrote it last).
// Shared memory has a racecheck cell per byte on each CPU thread that runs blocks.
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include <mixt/kernels/cuda/emulated/access_checks.h>
#include <mixt/kernels/cuda/emulated/emulator.h>

namespace mixt::cuda::emulated {

thread_local KernelAccess* t_kernel_access __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

constexpr uint8_t kLive = 1;     // inside a live block: addressable
constexpr uint8_t kWritten = 2;  // written since the block was handed out

struct Region {
  const char* base = nullptr;
  size_t bytes = 0;
  int device = -1;                   // -1: mapped pinned host memory (unchecked)
  std::unique_ptr<uint8_t[]> state;  // kLive | kWritten per byte (device memory)
  // racecheck: per byte, the (launch, block) tag of its last plain write by a kernel;
  // calloc'd on the first such write, so untouched pages cost nothing.
  std::atomic<uint32_t*> writers{nullptr};
  std::atomic<uint64_t> writers_epoch{~uint64_t{0}};  // launch_number >> 16 of the tags
  std::mutex writers_mutex;
  ~Region() { std::free(writers.load()); }
};

// Every tracked allocation, by base address. A region that goes bumps the version, so
// the per-thread lookup caches drop their entries (kept alive until then).
std::shared_mutex g_regions_mutex;
std::map<const char*, std::shared_ptr<Region>> g_regions;
std::atomic<uint64_t> g_regions_version{0};

// The last allocations released by cudaFree, for reports.
struct Released {
  uintptr_t base = 0;
  size_t bytes = 0;
  int device = -1;
};
std::mutex g_released_mutex;
Released g_released[32];
size_t g_released_next = 0;

std::shared_ptr<Region> region_at(uintptr_t x) {
  std::shared_lock<std::shared_mutex> lock(g_regions_mutex);
  auto it = g_regions.upper_bound(reinterpret_cast<const char*>(x));
  if (it == g_regions.begin()) return nullptr;
  --it;
  const Region& r = *it->second;
  if (x - reinterpret_cast<uintptr_t>(r.base) >= r.bytes) return nullptr;
  return it->second;
}

// A few regions per CPU thread, checked before the map. The shared_ptrs keep a cached
// region alive after cudaFree until the cache notices the version change.
constexpr int kCacheWays = 4;
struct RegionCache {
  uintptr_t lo[kCacheWays] = {};
  uintptr_t bytes[kCacheWays] = {};
  Region* region[kCacheWays] = {};
  uint64_t version = ~uint64_t{0};
  unsigned next = 0;
};
thread_local RegionCache t_cache __attribute__((tls_model("initial-exec")));
thread_local std::shared_ptr<Region> t_cache_keep[kCacheWays];

Region* lookup(uintptr_t x) {
  RegionCache& c = t_cache;
  const uint64_t v = g_regions_version.load(std::memory_order_acquire);
  if (c.version == v) {
    for (int i = 0; i < kCacheWays; ++i)
      if (x - c.lo[i] < c.bytes[i]) return c.region[i];
  } else {
    c = RegionCache{};
    c.version = v;
    for (auto& k : t_cache_keep) k.reset();
  }
  std::shared_ptr<Region> r = region_at(x);
  if (!r) return nullptr;
  const unsigned i = c.next++ % kCacheWays;
  c.lo[i] = reinterpret_cast<uintptr_t>(r->base);
  c.bytes[i] = r->bytes;
  c.region[i] = r.get();
  t_cache_keep[i] = std::move(r);
  return c.region[i];
}

// ---- the program's static data (a kernel may read tables and constants) ----
struct Range {
  uintptr_t lo, hi;
};
std::mutex g_static_mutex;
std::vector<Range> g_static;

int add_object(dl_phdr_info* info, size_t, void*) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    g_static.push_back({lo, lo + ph.p_memsz});
  }
  return 0;
}

bool is_static_data(uintptr_t x, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_static_mutex);
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (const Range& r : g_static)
      if (x >= r.lo && x + bytes <= r.hi) return true;
    g_static.clear();  // objects loaded since: look again once
    dl_iterate_phdr(&add_object, nullptr);
  }
  return false;
}

// ---- reports ----
std::string hex(uintptr_t x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIxPTR, x);
  return buf;
}

std::string dims(uint3 d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

// "libmixt.so+0x1a2b3c": where the access's instruction is (addr2line -e takes it).
std::string code_text(const void* pc) {
  Dl_info info{};
  if (pc == nullptr || dladdr(pc, &info) == 0 || info.dli_fname == nullptr) return hex(reinterpret_cast<uintptr_t>(pc));
  std::string object = info.dli_fname;
  if (const size_t k = object.rfind('/'); k != std::string::npos) object = object.substr(k + 1);
  return object + "+" + hex(reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(info.dli_fbase));
}

const char* kind_text(AccessKind k) {
  return k == AccessKind::Read ? "read" : k == AccessKind::Write ? "write" : "atomic";
}

// "by thread (5, 0, 0) of block (2, 0, 0) of the kernel launched at ... [code at libmixt.so+0x...]"
std::string who(const KernelAccess& a, const void* pc) {
  return "by thread " + dims(a.thread) + " of block " + dims(a.block) + " of " + *a.kernel + " [code at " +
         code_text(pc) + "]";
}

// Records the fault whose report `build()` returns, then ends the kernel's thread. The
// report is built and freed here: abandon_kernel leaves this fiber's frames for good,
// so nothing they own may still be alive then (LeakSanitizer would see it).
template <class Build>
[[noreturn]] void fail(cudaError_t code, Build build) {
  {
    const std::string message = build();
    record_fault(code, message);
  }
  abandon_kernel();
}

// Where `x` sits in a device region whose shadow says it is not live: the nearest live
// blocks before and after it.
std::string nearest_blocks(const Region& r, uintptr_t x) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(r.base);
  const size_t at = x - base;
  const uint8_t* s = r.state.get();
  std::string out;
  size_t i = at;
  while (i > 0 && !(s[i - 1] & kLive)) --i;
  if (i > 0) {
    size_t start = i - 1;
    while (start > 0 && (s[start - 1] & kLive)) --start;
    out = std::to_string(at - i) + " bytes past the end of the live block " + hex(base + start) + "-" + hex(base + i) +
          " (" + std::to_string(i - start) + " bytes)";
  }
  size_t j = at;
  while (j < r.bytes && !(s[j] & kLive)) ++j;
  if (j < r.bytes) {
    if (!out.empty()) out += "; ";
    out += std::to_string(j - at) + " bytes before the live block at " + hex(base + j);
  }
  if (out.empty()) out = "no block of it is live";
  return out + ", inside device " + std::to_string(r.device) + "'s " + std::to_string(r.bytes) +
         "-byte allocation at " + hex(base) + " (a freed block, or a tail the caching allocator rounded up)";
}

// Why `x` is in no region: a released allocation, past the end of one, or host memory.
std::string outside_regions(uintptr_t x) {
  if (x < 4096) return "a null pointer (plus " + std::to_string(x) + ")";
  {
    std::lock_guard<std::mutex> lock(g_released_mutex);
    for (const Released& r : g_released)
      if (r.bytes && x - r.base < r.bytes)
        return "memory released by cudaFree (the " + std::to_string(r.bytes) + "-byte allocation at " + hex(r.base) +
               " of device " + std::to_string(r.device) + ", " + std::to_string(x - r.base) + " bytes in)";
  }
  std::shared_lock<std::shared_mutex> lock(g_regions_mutex);
  auto it = g_regions.upper_bound(reinterpret_cast<const char*>(x));
  if (it != g_regions.begin()) {
    const Region& r = *std::prev(it)->second;
    const uintptr_t end = reinterpret_cast<uintptr_t>(r.base) + r.bytes;
    if (x - end < 4096)
      return std::to_string(x - end) + " bytes past the end of the " + std::to_string(r.bytes) +
             "-byte allocation at " + hex(reinterpret_cast<uintptr_t>(r.base));
  }
  return "host memory that is not mapped for the device (not from cudaMalloc or cudaHostAlloc)";
}

// Accesses this far past the end of a block's dynamic shared memory are reported as
// shared-memory overruns (the buffer's neighbours are host heap).
constexpr uintptr_t kSharedOverrunWindow = 1024;

// ---- racecheck of shared memory ----
// One cell per shared byte: who wrote and who read it in which barrier interval, and
// how many warp-synchronous operations their warp had completed then (a __syncwarp or a
// shuffle orders the accesses of its lanes, as a barrier orders the block's).
struct SharedCell {
  uint32_t write_phase = 0, read_phase = 0;
  uint32_t write_warp_epoch = 0, read_warp_epoch = 0;
  uint16_t writer = 0, reader = 0;
  uint16_t read_warp = 0;  // the readers' warp, or kManyWarps
};
constexpr uint16_t kManyReaders = 0xffff;
constexpr uint16_t kManyWarps = 0xffff;
thread_local std::vector<SharedCell> t_shared_cells;
thread_local uint32_t t_phase = 0;

uint32_t new_phase() {
  if (++t_phase == 0) {  // wrapped: old cells could look current
    std::fill(t_shared_cells.begin(), t_shared_cells.end(), SharedCell{});
    t_phase = 1;
  }
  return t_phase;
}

std::string thread_text(const KernelAccess& a, unsigned linear) {
  const dim3 bd = a.block_dim;
  return dims(uint3{linear % bd.x, linear / bd.x % bd.y, linear / (bd.x * bd.y)});
}

[[noreturn, gnu::noinline, gnu::cold]] void shared_hazard(const KernelAccess& a, const char* kind, size_t offset, unsigned other,
                                const char* first, const char* second, const void* pc) {
  fail(cudaErrorLaunchFailure, [&] {
    return std::string("racecheck: shared-memory ") + kind + " hazard at byte " + std::to_string(offset) +
           " of the block's shared memory: thread " + thread_text(a, other) + " " + first + " it and thread " +
           dims(a.thread) + " " + second + " it with no barrier between them, " + who(a, pc);
  });
}

[[noreturn, gnu::noinline, gnu::cold]] void many_readers_hazard(const KernelAccess& a, size_t offset, const void* pc) {
  fail(cudaErrorLaunchFailure, [&] {
    return "racecheck: shared-memory WAR hazard at byte " + std::to_string(offset) +
           " of the block's shared memory: several threads read it and thread " + dims(a.thread) +
           " wrote it with no barrier between them, " + who(a, pc);
  });
}

void check_shared(const KernelAccess& a, size_t offset, size_t bytes, AccessKind kind, const void* pc) {
  SharedCell* cells = t_shared_cells.data() + offset;
  const uint16_t me = static_cast<uint16_t>(a.thread_linear);
  const uint16_t warp = static_cast<uint16_t>(a.thread_linear / 32);
  const uint32_t warp_epoch = a.warp_epochs ? a.warp_epochs[warp] : 0;
  const uint32_t phase = a.phase;
  // True when a warp operation of this warp completed since `other` (of warp `other_warp`) acted.
  const auto ordered_by_warp = [&](uint16_t other_warp, uint32_t other_epoch) {
    return other_warp == warp && other_epoch != warp_epoch;
  };
  for (size_t i = 0; i < bytes; ++i) {
    SharedCell& c = cells[i];
    const bool other_wrote = c.write_phase == phase && c.writer != me &&
                             !ordered_by_warp(static_cast<uint16_t>(c.writer / 32), c.write_warp_epoch);
    if (kind == AccessKind::Read) {
      if (other_wrote) shared_hazard(a, "RAW", offset + i, c.writer, "wrote", "read", pc);
      if (c.read_phase != phase) {
        c.read_phase = phase;
        c.reader = me;
        c.read_warp = warp;
      } else {
        if (c.reader != me) c.reader = kManyReaders;
        if (c.read_warp != warp) c.read_warp = kManyWarps;
      }
      c.read_warp_epoch = warp_epoch;
    } else {
      if (other_wrote) shared_hazard(a, "WAW", offset + i, c.writer, "wrote", "wrote", pc);
      if (c.read_phase == phase && c.reader != me && !ordered_by_warp(c.read_warp, c.read_warp_epoch)) {
        if (c.reader == kManyReaders) many_readers_hazard(a, offset + i, pc);
        shared_hazard(a, "WAR", offset + i, c.reader, "read", "wrote", pc);
      }
      c.write_phase = phase;
      c.writer = me;
      c.write_warp_epoch = warp_epoch;
    }
  }
}

// ---- racecheck of global memory: two blocks of one grid writing one byte ----
uint32_t* writer_tags(Region& r, uint64_t launch) {
  const uint64_t epoch = launch >> 16;
  uint32_t* w = r.writers.load(std::memory_order_acquire);
  if (w && r.writers_epoch.load(std::memory_order_acquire) == epoch) return w;
  std::lock_guard<std::mutex> lock(r.writers_mutex);
  w = r.writers.load();
  if (!w) {
    w = static_cast<uint32_t*>(std::calloc(r.bytes, sizeof(uint32_t)));
    if (!w) return nullptr;  // no room for the tags: this region goes unchecked
    r.writers.store(w, std::memory_order_release);
  } else if (r.writers_epoch.load() != epoch) {
    std::memset(w, 0, r.bytes * sizeof(uint32_t));  // tags of launches 65536 ago would alias
  }
  r.writers_epoch.store(epoch, std::memory_order_release);
  return w;
}

[[noreturn, gnu::noinline, gnu::cold]] void global_hazard(const KernelAccess& a, const Region& r, size_t offset,
                                                           uint32_t old, const void* pc) {
  const uint64_t other = (old & 0xffff) - 1;  // the block's linear number, modulo 65535
  fail(cudaErrorLaunchFailure, [&] {
    const dim3 g = a.grid_dim;
    const uint64_t blocks = uint64_t{g.x} * g.y * g.z;
    const std::string other_text =
        blocks <= 0xffff ? "block " + dims(uint3{static_cast<unsigned>(other % g.x),
                                                 static_cast<unsigned>(other / g.x % g.y),
                                                 static_cast<unsigned>(other / (uint64_t{g.x} * g.y))})
                         : "the block whose linear number is " + std::to_string(other) + " modulo 65535";
    return "racecheck: global-memory WAW hazard at " + hex(reinterpret_cast<uintptr_t>(r.base) + offset) + ": " +
           other_text + " and block " + dims(a.block) +
           " of one grid both write it without atomics (a grid's blocks are unordered), " + who(a, pc);
  });
}

void check_global_writers(KernelAccess& a, Region& r, size_t offset, size_t bytes, const void* pc) {
  uint32_t* w = writer_tags(r, a.launch_number);
  if (!w) return;
  // Plain loads and stores (a locked exchange per byte made checked kernels several
  // times slower): two blocks on two CPU threads writing one byte at the same instant
  // may both miss the other, a hazard lost, never one invented.
  for (size_t i = 0; i < bytes; ++i) {
    const uint32_t old = w[offset + i];
    if (old == a.block_tag) continue;
    w[offset + i] = a.block_tag;
    if (old != 0 && (old >> 16) == (a.block_tag >> 16)) {
      global_hazard(a, r, offset + i, old, pc);
    }
  }
}

}  // namespace

// ---- regions ----
bool track_device_region(const char* base, size_t bytes, int device) {
  std::unique_ptr<uint8_t[]> state(new (std::nothrow) uint8_t[bytes]);
  if (!state) return false;
  std::memset(state.get(), kLive, bytes);
  auto r = std::make_shared<Region>();
  r->base = base;
  r->bytes = bytes;
  r->device = device;
  r->state = std::move(state);
  std::unique_lock<std::shared_mutex> lock(g_regions_mutex);
  g_regions[base] = std::move(r);
  return true;
}

void track_pinned_region(const char* base, size_t bytes) {
  auto r = std::make_shared<Region>();
  r->base = base;
  r->bytes = bytes;
  std::unique_lock<std::shared_mutex> lock(g_regions_mutex);
  g_regions[base] = std::move(r);
}

void untrack_region(const char* base) {
  std::shared_ptr<Region> gone;
  {
    std::unique_lock<std::shared_mutex> lock(g_regions_mutex);
    auto it = g_regions.find(base);
    if (it == g_regions.end()) return;
    gone = std::move(it->second);
    g_regions.erase(it);
    g_regions_version.fetch_add(1, std::memory_order_acq_rel);
  }
  if (gone->device >= 0) {
    std::lock_guard<std::mutex> lock(g_released_mutex);
    g_released[g_released_next++ % std::size(g_released)] =
        Released{reinterpret_cast<uintptr_t>(gone->base), gone->bytes, gone->device};
  }
}

// Applies `f(state, n)` to the shadow of the device-memory part of [p, p + bytes).
template <class F>
void for_shadow(const void* p, size_t bytes, F f) {
  if (bytes == 0) return;
  const uintptr_t x = reinterpret_cast<uintptr_t>(p);
  std::shared_ptr<Region> r = region_at(x);
  if (!r || !r->state) return;
  const size_t offset = x - reinterpret_cast<uintptr_t>(r->base);
  f(r->state.get() + offset, std::min(bytes, r->bytes - offset));
}

void set_live(const void* p, size_t bytes, bool live) {
  for_shadow(p, bytes, [&](uint8_t* s, size_t n) { std::memset(s, live ? kLive : 0, n); });
}

void note_written(const void* p, size_t bytes) {
  for_shadow(p, bytes, [](uint8_t* s, size_t n) {
    for (size_t i = 0; i < n; ++i) s[i] |= kWritten;
  });
}

void copy_written_state(void* dst, const void* src, size_t bytes) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(src);
  std::shared_ptr<Region> from = region_at(x);
  if (!from || !from->state) return note_written(dst, bytes);
  const uint8_t* s = from->state.get() + (x - reinterpret_cast<uintptr_t>(from->base));
  const size_t n = std::min(bytes, from->bytes - (x - reinterpret_cast<uintptr_t>(from->base)));
  for_shadow(dst, n, [&](uint8_t* d, size_t m) {
    for (size_t i = 0; i < m; ++i) d[i] = static_cast<uint8_t>((d[i] & ~kWritten) | (s[i] & kWritten));
  });
}

void note_segment(const void* p, size_t bytes) { set_live(p, bytes, false); }

void note_block(cudaStream_t stream, const void* p, size_t bytes, size_t live_bytes) {
  after_stream_work(stream, [=] {
    set_live(p, bytes, false);
    set_live(p, live_bytes, true);
  });
}

std::string check_kernel_pointer(const void* p, int device) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(p);
  if (p == nullptr) return "";
  if (std::shared_ptr<Region> r = region_at(x)) {
    if (r->device < 0 || r->device == device) return "";
    return "device " + std::to_string(r->device) + "'s memory (the kernel runs on device " + std::to_string(device) +
           ", which cannot reach it)";
  }
  // One past the end of an allocation is a valid end pointer.
  if (x > 0 && region_at(x - 1)) return "";
  if (is_static_data(x, 1)) return "";
  return outside_regions(x);
}

// ---- kernels ----
void begin_block(KernelAccess& a) {
  if (a.racecheck && t_shared_cells.size() < a.shared_bytes) t_shared_cells.resize(a.shared_bytes);
  a.phase = new_phase();
}

void next_phase(KernelAccess& a) { a.phase = new_phase(); }

[[noreturn, gnu::noinline, gnu::cold]] void shared_overrun(const KernelAccess& a, size_t offset, size_t bytes, AccessKind kind, const void* pc) {
  fail(cudaErrorIllegalAddress, [&] {
    return std::string("memcheck: invalid shared-memory ") + kind_text(kind) + " of " + std::to_string(bytes) +
           " bytes at byte " + std::to_string(offset) + " of the block's " + std::to_string(a.shared_bytes) +
           " bytes of dynamic shared memory, " + who(a, pc);
  });
}

// ---- the faults of check_access: cold, out of its way ----
namespace {

[[noreturn, gnu::noinline, gnu::cold]] void outside_fault(KernelAccess& a, uintptr_t x, size_t bytes,
                                                           AccessKind kind, const void* pc) {
  // Just past the shared memory (its neighbours are host heap): name the shared memory.
  if (x - a.shared_lo < a.shared_bytes + kSharedOverrunWindow) shared_overrun(a, x - a.shared_lo, bytes, kind, pc);
  fail(cudaErrorIllegalAddress, [&] {
    return std::string("memcheck: invalid ") + kind_text(kind) + " of " + std::to_string(bytes) + " bytes at " +
           hex(x) + ", " + who(a, pc) + ": " + outside_regions(x);
  });
}

[[noreturn, gnu::noinline, gnu::cold]] void region_fault(KernelAccess& a, const Region& r, uintptr_t x, size_t bytes,
                                                          AccessKind kind, const void* pc) {
  const size_t offset = x - reinterpret_cast<uintptr_t>(r.base);
  fail(cudaErrorIllegalAddress, [&] {
    std::string why = r.device != a.device ? "device " + std::to_string(r.device) + "'s memory, which device " +
                                                 std::to_string(a.device) + " cannot reach"
                                           : "it runs " + std::to_string(offset + bytes - r.bytes) +
                                                 " bytes past the end of the " + std::to_string(r.bytes) +
                                                 "-byte allocation at " + hex(reinterpret_cast<uintptr_t>(r.base));
    return std::string("memcheck: invalid ") + kind_text(kind) + " of " + std::to_string(bytes) + " bytes at " +
           hex(x) + ", " + who(a, pc) + ": " + why;
  });
}

// A byte of the access lacks a state bit it needs (`need`): not live, or not written.
[[noreturn, gnu::noinline, gnu::cold]] void state_fault(KernelAccess& a, const Region& r, uintptr_t x, size_t bytes,
                                                         AccessKind kind, uint8_t need, const void* pc) {
  const uint8_t* s = r.state.get() + (x - reinterpret_cast<uintptr_t>(r.base));
  size_t i = 0;
  while (i + 1 < bytes && (s[i] & need) == need) ++i;
  if ((need & kLive) && !(s[i] & kLive))
    fail(cudaErrorIllegalAddress, [&] {
      return std::string("memcheck: invalid ") + kind_text(kind) + " of " + std::to_string(bytes) + " bytes at " +
             hex(x) + ", " + who(a, pc) + ": " + nearest_blocks(r, x + i);
    });
  fail(cudaErrorLaunchFailure, [&] {
    return std::string("initcheck: ") + (kind == AccessKind::Read ? "read" : "atomic update") + " of " +
           std::to_string(bytes) + " bytes at " + hex(x) + " reads byte " + hex(x + i) +
           ", which nothing wrote since its block was allocated, " + who(a, pc);
  });
}

// True when every one of the `bytes` state bytes at `s` has all the bits of `need`.
// Plain loads: during a grid a byte only gains kWritten, and a racing writer of the same
// byte is a hazard racecheck reports anyway.
inline bool all_have(const uint8_t* s, size_t bytes, uint8_t need) {
  const uint64_t want = need * 0x0101010101010101ull;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, s + i, 8);
    if ((w & want) != want) return false;
  }
  if (i + 4 <= bytes) {
    uint32_t w;
    std::memcpy(&w, s + i, 4);
    if ((w & static_cast<uint32_t>(want)) != static_cast<uint32_t>(want)) return false;
    i += 4;
  }
  for (; i < bytes; ++i)
    if ((s[i] & need) != need) return false;
  return true;
}

}  // namespace

void check_access(KernelAccess& a, const void* p, size_t bytes, AccessKind kind, const void* pc) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(p);  // not on the thread's stack: the hooks skip that
  if (x - a.tls_lo < a.tls_bytes || x - a.params_lo < a.params_bytes) return;
  if (x - a.shared_lo < a.shared_bytes) {
    const size_t offset = x - a.shared_lo;
    if (offset + bytes > a.shared_bytes) {
      if (a.memcheck) shared_overrun(a, offset, bytes, kind, pc);
      return;
    }
    if (a.racecheck && kind != AccessKind::Atomic) check_shared(a, offset, bytes, kind, pc);
    return;
  }
  Region* r = lookup(x);
  if (r == nullptr) {
    if (!a.memcheck || is_static_data(x, bytes)) return;
    outside_fault(a, x, bytes, kind, pc);
  }
  if (r->device < 0) return;  // mapped pinned host memory
  const size_t offset = x - reinterpret_cast<uintptr_t>(r->base);
  if (r->device != a.device || offset + bytes > r->bytes) {
    if (!a.memcheck) return;
    region_fault(a, *r, x, bytes, kind, pc);
  }
  uint8_t* s = r->state.get() + offset;
  const uint8_t need = static_cast<uint8_t>((a.memcheck ? kLive : 0) |
                                            (a.initcheck && kind != AccessKind::Write ? kWritten : 0));
  if (need && !all_have(s, bytes, need)) [[unlikely]]
    state_fault(a, *r, x, bytes, kind, need, pc);
  if (kind != AccessKind::Read && !all_have(s, bytes, kWritten))
    for (size_t i = 0; i < bytes; ++i) s[i] |= kWritten;
  if (a.racecheck && kind == AccessKind::Write) check_global_writers(a, *r, offset, bytes, pc);
}

}  // namespace mixt::cuda::emulated
