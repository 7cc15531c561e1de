// Runs the kernels of the emulated CUDA device (Note [Emulated CUDA device] in
// docs/notes/emulated-cuda.md): launch limits checked like an H200's, the grid queued
// as one piece of stream-ordered work, blocks spread over the CPU's threads, the
// threads of a block as fibers (Boost.Context's fcontext: a switch is a few
// instructions, no system call) that meet at barriers. A block whose threads reach
// different barriers, or exit while others wait, is a fault naming the kernel's
// launch site, the block and the threads.
#include <boost/context/detail/fcontext.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

// device_runtime.h first: it defines the CUDA qualifiers before any CUDA header does.
#include <mixt/kernels/cuda/emulated/access_checks.h>
#include <mixt/kernels/cuda/emulated/device_runtime.h>
#include <mixt/kernels/cuda/emulated/emulator.h>
#include <mixt/kernels/cuda/emulated/executor.h>
#include <mixt/kernels/cuda/emulated/runtime_state.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define MIXT_EMULATED_ASAN 1
#endif

thread_local uint3 threadIdx __attribute__((tls_model("initial-exec")));
thread_local uint3 blockIdx __attribute__((tls_model("initial-exec")));
thread_local dim3 blockDim __attribute__((tls_model("initial-exec")));
thread_local dim3 gridDim __attribute__((tls_model("initial-exec")));

namespace mixt::cuda::emulated {
namespace {

namespace ctx = boost::context::detail;

#if defined(MIXT_EMULATED_ASAN)
constexpr size_t kStackBytes = size_t{512} << 10;  // instrumented frames are larger
#else
constexpr size_t kStackBytes = size_t{128} << 10;
#endif

// One fiber stack: mmap'd with a guard page below it, so an overflow faults at once.
struct Stack {
  char* base = nullptr;  // lowest usable byte
  size_t bytes = 0;
};

Stack map_stack() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  mprotect(p, page, PROT_NONE);
  return Stack{static_cast<char*>(p) + page, kStackBytes};
}

// The stacks of one CPU thread, reused from block to block.
struct StackPool {
  std::vector<Stack> free;
  ~StackPool() {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    for (const Stack& s : free) munmap(s.base - page, s.bytes + page);
  }
  Stack get() {
    if (free.empty()) return map_stack();
    Stack s = free.back();
    free.pop_back();
#if defined(MIXT_EMULATED_ASAN)
    __asan_unpoison_memory_region(s.base, s.bytes);  // an abandoned fiber's frames stay poisoned
#endif
    return s;
  }
  void put(Stack s) { free.push_back(s); }
};

// AtWarp: waiting at a warp-synchronous operation (__shfl_sync, __ballot_sync, __syncwarp,
// ...); WarpDone: that operation completed and the thread may go on.
enum class FiberState : uint8_t { NotStarted, Running, AtBarrier, AtWarp, WarpDone, Exited };

// One fiber: a stack on which CUDA threads run one after another until one of them
// waits at a barrier; that thread then keeps the fiber until it exits.
struct Fiber {
  ctx::fcontext_t context = nullptr;
  Stack stack;
  bool finished = false;
  void* fake_stack = nullptr;  // ASan's bookkeeping while the fiber is switched out
};

struct CudaThread {
  uint3 index{};
  FiberState state = FiberState::NotStarted;
  int fiber = -1;                      // the fiber it runs on (while at a barrier)
  const char* barrier_file = nullptr;  // the barrier's source line
  int barrier_line = 0;
  int barrier_kind = 0;
  int predicate = 0;
  int result = 0;
  // At a warp-synchronous operation (barrier_file/line name it too).
  WarpOp warp_op = WarpOp::Sync;
  unsigned warp_mask = 0;
  int warp_arg = 0, warp_width = 32;
  uint64_t warp_value = 0, warp_result = 0;
};

struct Grid;

// The block a CPU thread is running (its fibers read it).
struct BlockRun {
  const Grid* grid = nullptr;
  std::vector<CudaThread>* threads = nullptr;
  std::vector<Fiber>* fibers = nullptr;
  std::vector<unsigned> start_order;  // the order threads start in (phase 0)
  size_t next_start = 0;
  int running_fiber = -1;
  CudaThread* current = nullptr;
  ctx::fcontext_t scheduler = nullptr;
  unsigned char* shared = nullptr;
  void* scheduler_fake_stack = nullptr;
  const void* scheduler_bottom = nullptr;
  size_t scheduler_size = 0;
  KernelAccess access;   // what the access checks know of the running thread
  bool faulted = false;  // a check failed: the block stops
};

thread_local BlockRun* t_block __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local StackPool t_stacks;

// One launch, queued on a stream: the parameters are copied at launch, as CUDA does.
struct Grid {
  LaunchRequest request;
  ThreadBody body = nullptr;
  std::shared_ptr<void> params;
  std::string name;  // the launch site, for fault reports
  uint64_t launch_number = 0;
  int device = 0;
};

std::string site_name(const std::source_location& s) {
  std::string fn = s.function_name();
  if (fn.size() > 160) fn = fn.substr(0, 157) + "...";
  std::string file = s.file_name();
  if (const size_t k = file.rfind("kernels/"); k != std::string::npos) file = file.substr(k);
  return "the kernel launched at " + file + ":" + std::to_string(s.line()) + " (in " + fn + ")";
}

std::string dim_text(uint3 d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

// "threads 0-31, 64" for a sorted list of linear thread numbers.
std::string thread_list(const std::vector<unsigned>& ids) {
  std::string out;
  size_t shown = 0;
  for (size_t i = 0; i < ids.size() && shown < 8; ++shown) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? std::to_string(ids[i]) : std::to_string(ids[i]) + "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  if (shown == 8) out += ", ...";
  return out;
}

std::string hex_mask(unsigned m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", m);
  return buf;
}

const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::Sync:
      return "__syncwarp";
    case WarpOp::Shfl:
      return "__shfl_sync";
    case WarpOp::ShflUp:
      return "__shfl_up_sync";
    case WarpOp::ShflDown:
      return "__shfl_down_sync";
    case WarpOp::ShflXor:
      return "__shfl_xor_sync";
    case WarpOp::Ballot:
      return "__ballot_sync";
    case WarpOp::Any:
      return "__any_sync";
    case WarpOp::All:
      return "__all_sync";
  }
  return "?";
}

std::string short_file(const char* f) {
  std::string file = f ? f : "?";
  if (const size_t k = file.rfind("kernels/"); k != std::string::npos) file = file.substr(k);
  return file;
}

// "kernels/cuda/reduce.cuh:65": where a thread waits.
std::string barrier_text(const CudaThread& t) {
  return short_file(t.barrier_file) + ":" + std::to_string(t.barrier_line);
}

// The lane whose value lane `lane` receives from a shuffle (`op`, its `arg` and `width`
// as the CUDA C++ Programming Guide's warp shuffle functions define them).
unsigned shuffle_source(WarpOp op, unsigned lane, int arg, int width) {
  const unsigned w = static_cast<unsigned>(width), segment = lane & ~(w - 1);
  switch (op) {
    case WarpOp::Shfl:
      return segment + (static_cast<unsigned>(arg) & (w - 1));
    case WarpOp::ShflUp:
      return lane - segment >= static_cast<unsigned>(arg) ? lane - static_cast<unsigned>(arg) : lane;
    case WarpOp::ShflDown:
      return lane - segment + static_cast<unsigned>(arg) < w ? lane + static_cast<unsigned>(arg) : lane;
    case WarpOp::ShflXor: {
      const unsigned src = lane ^ static_cast<unsigned>(arg);
      return (src & ~(w - 1)) > segment ? lane : src;  // a later group's lane: the caller's own value
    }
    default:
      return lane;
  }
}

// Why lane `m` of the warp at `base` is not at `t`'s warp operation.
std::string absent_text(const std::vector<CudaThread>& threads, unsigned base, unsigned m) {
  if (base + m >= threads.size())
    return "does not exist (the block has " + std::to_string(threads.size()) + " threads)";
  const CudaThread& u = threads[base + m];
  if (u.state == FiberState::Exited) return "has exited";
  if (u.state == FiberState::AtBarrier) return "waits at the barrier at " + barrier_text(u);
  return std::string("waits at ") + warp_op_name(u.warp_op) + " at " + barrier_text(u) + " with mask " +
         hex_mask(u.warp_mask);
}

// Completes every warp-synchronous operation whose named lanes have all arrived (they
// become WarpDone with their results). Returns -1 when no thread waits at one, 1 when
// some completed, 0 when none can (`why` then says which lane is missing: a synccheck
// fault, a hang on the hardware).
int settle_warps(std::vector<CudaThread>& threads, KernelAccess& ka, std::string& why) {
  const unsigned n = static_cast<unsigned>(threads.size()), lanes_per_warp = limits::kWarpSize;
  bool waiting = false, progressed = false;
  for (unsigned base = 0; base < n; base += lanes_per_warp) {
    const unsigned lanes = std::min(lanes_per_warp, n - base);
    for (unsigned l = 0; l < lanes; ++l) {
      const CudaThread& t = threads[base + l];
      if (t.state != FiberState::AtWarp) continue;
      waiting = true;
      const auto here = [&](const CudaThread& u) {
        return u.state == FiberState::AtWarp && u.warp_op == t.warp_op && u.warp_mask == t.warp_mask &&
               u.barrier_line == t.barrier_line &&
               (u.barrier_file == t.barrier_file || std::strcmp(u.barrier_file, t.barrier_file) == 0);
      };
      unsigned missing = lanes_per_warp;
      for (unsigned m = 0; m < lanes_per_warp && missing == lanes_per_warp; ++m)
        if ((t.warp_mask >> m & 1u) && (m >= lanes || !here(threads[base + m]))) missing = m;
      if (missing != lanes_per_warp) {
        if (why.empty())
          why = "lane " + std::to_string(missing) + " of warp " + std::to_string(base / lanes_per_warp) +
                ", named in the mask " + hex_mask(t.warp_mask) + " of " + warp_op_name(t.warp_op) + " at " +
                barrier_text(t) + " (where lane " + std::to_string(l) + " waits), " +
                absent_text(threads, base, missing);
        continue;
      }
      uint64_t ballot = 0;
      for (unsigned m = 0; m < lanes; ++m)
        if ((t.warp_mask >> m & 1u) && threads[base + m].warp_value != 0) ballot |= uint64_t{1} << m;
      for (unsigned m = 0; m < lanes; ++m) {
        if (!(t.warp_mask >> m & 1u)) continue;
        CudaThread& u = threads[base + m];
        switch (u.warp_op) {
          case WarpOp::Sync:
            u.warp_result = 0;
            break;
          case WarpOp::Ballot:
            u.warp_result = ballot;
            break;
          case WarpOp::Any:
            u.warp_result = ballot != 0;
            break;
          case WarpOp::All:
            u.warp_result = ballot == t.warp_mask;
            break;
          default: {
            const unsigned src = shuffle_source(u.warp_op, m, u.warp_arg, u.warp_width);
            // A source lane outside the mask gives an undefined value: the poison.
            u.warp_result = src < lanes && (t.warp_mask >> src & 1u) ? threads[base + src].warp_value : ~uint64_t{0};
          }
        }
        u.state = FiberState::WarpDone;
      }
      ++ka.warp_epochs[base / lanes_per_warp];  // racecheck: the lanes' accesses before it precede those after
      progressed = true;
    }
  }
  if (!waiting) return -1;
  if (progressed) why.clear();
  return progressed ? 1 : 0;
}

// The access checks' view of the thread that runs now.
void set_running(BlockRun* b, CudaThread& th) {
  b->current = &th;
  threadIdx = th.index;
  b->access.thread = th.index;
  b->access.thread_linear = th.index.x + blockDim.x * (th.index.y + blockDim.y * th.index.z);
}

// Leaves an exited fiber for good (its stack goes back to the pool).
[[noreturn]] void exit_to_scheduler(BlockRun* b) {
#if defined(MIXT_EMULATED_ASAN)
  __sanitizer_start_switch_fiber(nullptr, b->scheduler_bottom, b->scheduler_size);
#endif
  ctx::jump_fcontext(b->scheduler, nullptr);
  std::abort();  // an exited fiber is never resumed
}

// A fiber's body: starts the block's threads that have not started yet, one after
// another, until none is left (a thread that waits at a barrier suspends the fiber with it).
void fiber_entry(ctx::transfer_t t) {
  BlockRun* b = t_block;
  b->scheduler = t.fctx;
#if defined(MIXT_EMULATED_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &b->scheduler_bottom, &b->scheduler_size);
#endif
  const int me = b->running_fiber;
  for (;;) {
    b = t_block;
    if (b->next_start >= b->start_order.size()) break;
    CudaThread& th = (*b->threads)[b->start_order[b->next_start++]];
    th.state = FiberState::Running;
    th.fiber = me;
    set_running(b, th);
    b->grid->body(b->grid->params.get());
    th.state = FiberState::Exited;
  }
  b = t_block;
  (*b->fibers)[static_cast<size_t>(me)].finished = true;
  exit_to_scheduler(b);
}

// Runs fiber `f` (a new one when `f` < 0) until its thread waits at a barrier or no thread is left to start.
void resume(BlockRun& b, int f) {
  std::vector<Fiber>& fibers = *b.fibers;
  if (f < 0) {
    fibers.emplace_back();
    f = static_cast<int>(fibers.size() - 1);
    Fiber& nf = fibers.back();
    nf.stack = t_stacks.get();
    nf.context = ctx::make_fcontext(nf.stack.base + nf.stack.bytes, nf.stack.bytes, &fiber_entry);
  }
  b.running_fiber = f;
  Fiber& fb = fibers[static_cast<size_t>(f)];
  b.access.stack_lo = reinterpret_cast<uintptr_t>(fb.stack.base);
  b.access.stack_bytes = fb.stack.bytes;
#if defined(MIXT_EMULATED_ASAN)
  __sanitizer_start_switch_fiber(&b.scheduler_fake_stack, fb.stack.base, fb.stack.bytes);
#endif
  const ctx::transfer_t r = ctx::jump_fcontext(fb.context, nullptr);
#if defined(MIXT_EMULATED_ASAN)
  __sanitizer_finish_switch_fiber(b.scheduler_fake_stack, nullptr, nullptr);
#endif
  Fiber& after = (*b.fibers)[static_cast<size_t>(f)];  // the vector may not move while running, but be safe
  after.context = r.fctx;
  if (after.finished) {
    t_stacks.put(after.stack);
    after.stack = Stack{};
  }
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The order a block's threads are resumed in at phase `phase` (each phase ends at a barrier).
void thread_order(std::vector<unsigned>& order, uint64_t block_seed, int phase) {
  std::iota(order.begin(), order.end(), 0u);
  switch (settings().order) {
    case BlockOrder::Natural:
      break;
    case BlockOrder::Reverse:
      std::reverse(order.begin(), order.end());
      break;
    case BlockOrder::Shuffle: {
      std::mt19937_64 g(mix(block_seed ^ (static_cast<uint64_t>(phase) << 40)));
      std::shuffle(order.begin(), order.end(), g);
      break;
    }
  }
}

// Runs one block to its end; returns false (after recording the fault) when its threads diverged.
bool run_block(const Grid& grid, uint64_t linear_block) {
  const dim3 g = grid.request.grid, bd = grid.request.block;
  blockIdx = uint3{static_cast<unsigned>(linear_block % g.x), static_cast<unsigned>(linear_block / g.x % g.y),
                   static_cast<unsigned>(linear_block / (static_cast<uint64_t>(g.x) * g.y))};
  blockDim = bd;
  gridDim = g;
  const unsigned n = bd.x * bd.y * bd.z;
  std::vector<CudaThread> threads(n);
  for (unsigned t = 0; t < n; ++t) threads[t].index = uint3{t % bd.x, t / bd.x % bd.y, t / (bd.x * bd.y)};
  // Exactly the launch's size (AddressSanitizer sees any access past it), poisoned with
  // 0xff bytes (NaN in every floating type) so a read before a write shows.
  const size_t shared_bytes = grid.request.shared_bytes;
  constexpr std::align_val_t kSharedAlign{16};
  const auto free_shared = [](unsigned char* p) { ::operator delete[](p, kSharedAlign); };
  std::unique_ptr<unsigned char[], decltype(free_shared)> shared(
      static_cast<unsigned char*>(::operator new[](shared_bytes, kSharedAlign)), free_shared);
  std::memset(shared.get(), 0xff, shared_bytes);
  std::vector<Fiber> fibers;
  fibers.reserve(8);
  BlockRun b;
  b.grid = &grid;
  b.threads = &threads;
  b.fibers = &fibers;
  b.shared = shared.get();
  const Settings& st = settings();
  KernelAccess& ka = b.access;
  ka.kernel = &grid.name;
  ka.launch_number = grid.launch_number;
  ka.device = grid.device;
  ka.block = blockIdx;
  ka.block_dim = bd;
  ka.grid_dim = g;
  ka.block_tag = static_cast<uint32_t>((grid.launch_number & 0xffff) << 16 | (linear_block % 0xffff + 1));
  ka.shared_lo = reinterpret_cast<uintptr_t>(shared.get());
  ka.shared_bytes = shared_bytes;
  ka.params_lo = reinterpret_cast<uintptr_t>(grid.params.get());
  ka.params_bytes = grid.request.params_object_bytes;
  const uintptr_t tls[] = {reinterpret_cast<uintptr_t>(&threadIdx), reinterpret_cast<uintptr_t>(&blockIdx),
                           reinterpret_cast<uintptr_t>(&blockDim), reinterpret_cast<uintptr_t>(&gridDim)};
  ka.tls_lo = *std::min_element(std::begin(tls), std::end(tls));
  ka.tls_bytes = *std::max_element(std::begin(tls), std::end(tls)) + sizeof(dim3) - ka.tls_lo;
  std::vector<uint32_t> warp_epochs((n + limits::kWarpSize - 1) / limits::kWarpSize, 0);
  ka.warp_epochs = warp_epochs.data();
  ka.memcheck = st.memcheck;
  ka.initcheck = st.initcheck;
  ka.racecheck = st.racecheck;
  begin_block(ka);
  t_block = &b;
  if (ka.memcheck || ka.initcheck || ka.racecheck) t_kernel_access = &ka;
  std::vector<unsigned> order(n);
  const uint64_t block_seed = mix(settings().seed ^ mix(grid.launch_number) ^ linear_block);
  std::string fault;
  for (int phase = 0;; ++phase) {
    thread_order(order, block_seed, phase);
    if (phase == 0) {
      // Every thread starts, in this order, on as few fibers as the barriers allow.
      b.start_order = order;
      b.next_start = 0;
      while (b.next_start < n && !b.faulted) resume(b, -1);
    } else {
      next_phase(ka);
      for (unsigned t : order) {
        if (b.faulted) break;
        if (threads[t].state == FiberState::AtBarrier) resume(b, threads[t].fiber);
      }
    }
    if (b.faulted) break;  // a check failed; its fault is recorded
    // Warp-synchronous operations: complete those whose lanes all arrived, run their
    // threads on, until every thread waits at a barrier or has exited.
    for (;;) {
      std::string why;
      const int settled = settle_warps(threads, ka, why);
      if (settled < 0) break;
      if (settled == 0) {
        fault = "synccheck: in " + grid.name + ", block " + dim_text(blockIdx) + ": " + why +
                " (every lane a mask names must reach the same warp-synchronous call)";
        break;
      }
      for (unsigned t : order) {
        if (b.faulted) break;
        if (threads[t].state == FiberState::WarpDone) resume(b, threads[t].fiber);
      }
      if (b.faulted) break;
    }
    if (b.faulted || !fault.empty()) break;
    std::vector<unsigned> waiting, exited;
    for (unsigned t = 0; t < n; ++t) (threads[t].state == FiberState::Exited ? exited : waiting).push_back(t);
    if (waiting.empty()) break;
    const std::string where = grid.name + ", block " + dim_text(blockIdx) + " of grid " +
                              dim_text(uint3{g.x, g.y, g.z}) + ", " + std::to_string(n) + " threads a block";
    if (!exited.empty()) {
      fault = "barrier divergence in " + where + ": threads " + thread_list(waiting) + " wait at the barrier at " +
              barrier_text(threads[waiting.front()]) + " while threads " + thread_list(exited) + " have exited";
      break;
    }
    const CudaThread& first = threads[waiting.front()];
    const auto same_barrier = [&](const CudaThread& t) {
      return t.barrier_line == first.barrier_line && t.barrier_kind == first.barrier_kind &&
             (t.barrier_file == first.barrier_file || std::strcmp(t.barrier_file, first.barrier_file) == 0);
    };
    std::vector<unsigned> same, other;
    for (unsigned t : waiting) (same_barrier(threads[t]) ? same : other).push_back(t);
    if (!other.empty()) {
      fault = "barrier divergence in " + where + ": threads " + thread_list(same) + " wait at the barrier at " +
              barrier_text(first) + " while threads " + thread_list(other) + " wait at the one at " +
              barrier_text(threads[other.front()]) + " (every thread of a block must reach the same __syncthreads)";
      break;
    }
    int any = 0, all = 1, count = 0;
    for (unsigned t : waiting) {
      any |= threads[t].predicate;
      all &= threads[t].predicate;
      count += threads[t].predicate;
    }
    const int result = first.barrier_kind == 1 ? any : first.barrier_kind == 2 ? all : count;
    for (unsigned t : waiting) threads[t].result = result;
  }
  t_block = nullptr;
  t_kernel_access = nullptr;
  if (fault.empty() && !b.faulted) return true;
  for (Fiber& f : fibers)  // abandon the suspended fibers; their stacks go back to the pool
    if (f.stack.base) t_stacks.put(f.stack);
  if (!b.faulted) record_fault(cudaErrorLaunchFailure, fault);
  return false;
}

// The CPU threads that run blocks, shared by every launch (one grid at a time).
class BlockPool {
 public:
  static BlockPool& get() {
    static BlockPool* pool = new BlockPool();  // never destroyed: workers may outlive static destruction
    return *pool;
  }

  // Runs every block of `grid` in `order`, spread over the workers and the caller.
  void run(const Grid& grid, const std::vector<uint64_t>& order) {
    std::lock_guard<std::mutex> one_grid(run_mutex_);
    if (order.size() == 1 || workers_.empty()) {
      for (uint64_t blk : order)
        if (!run_block(grid, blk)) break;
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      grid_ = &grid;
      order_ = &order;
      next_.store(0);
      failed_.store(false);
      active_ = static_cast<int>(workers_.size());
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return active_ == 0; });
    grid_ = nullptr;
  }

 private:
  BlockPool() {
    const int n = settings().workers > 0 ? settings().workers
                                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { loop(); });
    for (std::thread& t : workers_) t.detach();
  }

  void work() {
    for (;;) {
      const size_t i = next_.fetch_add(1);
      if (i >= order_->size() || failed_.load()) return;
      if (!run_block(*grid_, (*order_)[i])) failed_.store(true);
    }
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
      }
      work();
      std::lock_guard<std::mutex> lock(mutex_);
      if (--active_ == 0) done_.notify_all();
    }
  }

  std::mutex run_mutex_, mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const Grid* grid_ = nullptr;
  const std::vector<uint64_t>* order_ = nullptr;
  std::atomic<size_t> next_{0};
  std::atomic<bool> failed_{false};
  int active_ = 0;
  uint64_t generation_ = 0;
};

void run_grid(const Grid& grid) {
  const dim3 g = grid.request.grid;
  const uint64_t blocks = static_cast<uint64_t>(g.x) * g.y * g.z;
  std::vector<uint64_t> order(blocks);
  std::iota(order.begin(), order.end(), uint64_t{0});
  if (settings().order == BlockOrder::Reverse) std::reverse(order.begin(), order.end());
  if (settings().order == BlockOrder::Shuffle) {
    std::mt19937_64 rng(mix(settings().seed ^ grid.launch_number));
    std::shuffle(order.begin(), order.end(), rng);
  }
  BlockPool::get().run(grid, order);
}

std::atomic<uint64_t> g_launches{0};

}  // namespace

// Suspends the running CUDA thread (its state says what it waits for) until the
// scheduler resumes it.
void suspend(BlockRun* b, CudaThread* me) {
  Fiber* fiber = &(*b->fibers)[static_cast<size_t>(me->fiber)];
#if defined(MIXT_EMULATED_ASAN)
  __sanitizer_start_switch_fiber(&fiber->fake_stack, b->scheduler_bottom, b->scheduler_size);
#endif
  const ctx::transfer_t back = ctx::jump_fcontext(b->scheduler, nullptr);
  b = t_block;
  b->scheduler = back.fctx;
  fiber = &(*b->fibers)[static_cast<size_t>(me->fiber)];  // the vector may have grown meanwhile
#if defined(MIXT_EMULATED_ASAN)
  __sanitizer_finish_switch_fiber(fiber->fake_stack, &b->scheduler_bottom, &b->scheduler_size);
#endif
  me->state = FiberState::Running;
  set_running(b, *me);
}

int block_barrier(int kind, int predicate, const char* file, int line) {
  BlockRun* b = t_block;
  if (b == nullptr || b->current == nullptr) {
    record_fault(cudaErrorLaunchFailure, "__syncthreads called outside a kernel");
    return 0;
  }
  CudaThread* me = b->current;
  me->state = FiberState::AtBarrier;
  me->barrier_file = file;
  me->barrier_line = line;
  me->barrier_kind = kind;
  me->predicate = predicate != 0 ? 1 : 0;
  suspend(b, me);
  return me->result;
}

uint64_t warp_sync(WarpOp op, unsigned mask, uint64_t value, int arg, int width, const char* file, int line) {
  BlockRun* b = t_block;
  if (b == nullptr || b->current == nullptr) {
    record_fault(cudaErrorLaunchFailure, "a warp-synchronous intrinsic called outside a kernel");
    return 0;
  }
  CudaThread* me = b->current;
  const unsigned lane = b->access.thread_linear % limits::kWarpSize;
  const bool in_mask = mask >> lane & 1u;
  if (!in_mask || width < 1 || width > limits::kWarpSize || (width & (width - 1)) != 0) {
    {  // the report's strings are freed before the fiber is left for good
      const std::string why =
          !in_mask ? "the mask " + hex_mask(mask) + " does not name the calling lane " + std::to_string(lane)
                   : "width " + std::to_string(width) + " is not a power of two from 1 to 32";
      record_fault(cudaErrorLaunchFailure, "synccheck: " + std::string(warp_op_name(op)) + " at " + short_file(file) +
                                               ":" + std::to_string(line) + " in " + b->grid->name + ", block " +
                                               dim_text(b->access.block) + ", thread " + dim_text(me->index) + ": " +
                                               why);
    }
    abandon_kernel();
  }
  me->state = FiberState::AtWarp;
  me->barrier_file = file;
  me->barrier_line = line;
  me->warp_op = op;
  me->warp_mask = mask;
  me->warp_value = value;
  me->warp_arg = arg;
  me->warp_width = width;
  suspend(b, me);
  return me->warp_result;
}

unsigned active_mask() {
  BlockRun* b = t_block;
  if (b == nullptr || b->current == nullptr) return 0;
  const unsigned first = b->access.thread_linear / limits::kWarpSize * limits::kWarpSize;
  const std::vector<CudaThread>& threads = *b->threads;
  unsigned mask = 0;
  for (unsigned l = 0; l < static_cast<unsigned>(limits::kWarpSize) && first + l < threads.size(); ++l)
    if (threads[first + l].state != FiberState::Exited) mask |= 1u << l;
  return mask;
}

void abandon_kernel() {
  BlockRun* b = t_block;
  b->faulted = true;
  b->current->state = FiberState::Exited;
  exit_to_scheduler(b);
}

unsigned char* dynamic_shared_memory() { return t_block ? t_block->shared : nullptr; }

int64_t grid_block_cap() { return settings().max_blocks; }

cudaError_t launch(const LaunchRequest& r, const void* params, ThreadBody body, ParamsCopy copy, ParamsFree destroy) {
  if (const cudaError_t sticky = sticky_error(); sticky != cudaSuccess) return sticky;
  const cudaError_t e = check_launch(r);
  if (e != cudaSuccess) return set_last_error(e);
  // A kernel runs on the current device: a stream of another device is an invalid handle.
  if (stream_device(r.stream) != current_device()) return set_last_error(cudaErrorInvalidResourceHandle);
  // memcheck: a pointer argument the kernel could not dereference on the device. The
  // hardware would fault at the first access; the emulator names the argument at once.
  if (settings().memcheck)
    for (int i = 0; i < r.pointer_count; ++i) {
      const std::string why = check_kernel_pointer(r.pointers[i].value, current_device());
      if (why.empty()) continue;
      record_fault(cudaErrorIllegalAddress, "memcheck: argument " + std::to_string(r.pointers[i].index) + " of " +
                                                site_name(r.site) + " is a pointer the kernel cannot use: " + why);
      return set_last_error(cudaErrorIllegalAddress);
    }
  auto grid = std::make_shared<Grid>();
  grid->request = r;
  grid->request.pointers = nullptr;  // the caller's array; checked above
  grid->request.pointer_count = 0;
  grid->body = body;
  grid->params = std::shared_ptr<void>(copy(params), destroy);
  grid->name = site_name(r.site);
  grid->launch_number = g_launches.fetch_add(1);
  grid->device = current_device();
  const cudaError_t q = enqueue(r.stream, "a kernel", [grid] { run_grid(*grid); });
  if (q != cudaSuccess) return set_last_error(q);
  return cudaSuccess;
}

}  // namespace mixt::cuda::emulated
