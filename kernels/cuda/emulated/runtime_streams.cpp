// The emulated CUDA runtime, part two: stream-ordered work, streams and events.
// Note [Emulated stream order] (docs/notes/emulated-cuda.md): each piece of work knows
// the work it must follow (the previous work of its stream; for the legacy default
// stream, the last work of every blocking stream of its device and the other way
// round; the work an awaited event marks). Eager mode runs work as it is queued.
// Deferred mode queues it and runs it only at a synchronisation point, and then
// picks among the runnable pieces the one queued last: work that misses a dependency
// runs before what it should have waited for, so a missing wait gives a wrong result
// instead of passing by luck.
#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <mixt/kernels/cuda/emulated/emulator.h>
#include <mixt/kernels/cuda/emulated/executor.h>
#include <mixt/kernels/cuda/emulated/runtime_state.h>

struct Work {
  uint64_t seq = 0;
  int device = 0;
  std::function<void()> fn;
  std::vector<std::function<void()>> then;  // bookkeeping that follows it (after_stream_work)
  std::vector<std::shared_ptr<Work>> deps;
  bool done = false;
  double finished_ms = 0;  // host time when it ran (events' timestamps)
};

struct CUstream_st {
  int device = 0;
  unsigned flags = 0;
  int priority = 0;
  bool legacy = false;
  bool destroyed = false;
  std::shared_ptr<Work> last;
};

struct CUevent_st {
  int device = 0;
  unsigned flags = 0;
  std::shared_ptr<Work> work;  // the work of the last record (null: never recorded)
  bool destroyed = false;
};

namespace mixt::cuda::emulated {
namespace {

std::recursive_mutex g_mutex;  // work may queue work (a library call's pieces)
uint64_t g_seq = 0;
std::vector<std::shared_ptr<Work>> g_pending;
std::vector<std::unique_ptr<CUstream_st>> g_streams;  // never freed: handles stay unique
std::vector<std::unique_ptr<CUevent_st>> g_events;
CUstream_st g_legacy[16];

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

bool is_legacy_handle(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread; }

// The stream state behind a handle (nullptr for an unknown or destroyed one).
CUstream_st* resolve(cudaStream_t s) {
  if (is_legacy_handle(s)) {
    CUstream_st* l = &g_legacy[current_device()];
    l->legacy = true;
    l->device = current_device();
    return l;
  }
  for (const auto& p : g_streams)
    if (p.get() == s) return s->destroyed ? nullptr : s;
  return nullptr;
}

void execute(Work& w) {
  touch_context(w.device);
  if (sticky_error() == cudaSuccess) w.fn();  // a poisoned context runs nothing more
  for (const auto& f : w.then) f();
  w.then.clear();
  w.fn = nullptr;
  w.done = true;
  w.finished_ms = now_ms();
}

// Runs pending work until every piece in `targets` has run (deferred mode): the
// runnable piece queued last goes first.
void run_until(const std::vector<std::shared_ptr<Work>>& targets) {
  std::vector<Work*> closure, stack;
  for (const auto& t : targets)
    if (t && !t->done) stack.push_back(t.get());
  std::vector<Work*> seen;
  while (!stack.empty()) {
    Work* w = stack.back();
    stack.pop_back();
    if (w->done || std::find(seen.begin(), seen.end(), w) != seen.end()) continue;
    seen.push_back(w);
    closure.push_back(w);
    for (const auto& d : w->deps)
      if (!d->done) stack.push_back(d.get());
  }
  for (;;) {
    Work* pick = nullptr;
    for (Work* w : closure) {
      if (w->done) continue;
      const bool ready = std::all_of(w->deps.begin(), w->deps.end(), [](const auto& d) { return d->done; });
      if (ready && (pick == nullptr || w->seq > pick->seq)) pick = w;
    }
    if (pick == nullptr) break;
    execute(*pick);
  }
  std::erase_if(g_pending, [](const auto& w) { return w->done; });
}

cudaError_t queue(CUstream_st* s, std::function<void()> fn, std::vector<std::shared_ptr<Work>> extra,
                  std::shared_ptr<Work>* out = nullptr) {
  auto w = std::make_shared<Work>();
  w->seq = ++g_seq;
  w->device = s->device;
  w->fn = std::move(fn);
  w->deps = std::move(extra);
  if (s->last && !s->last->done) w->deps.push_back(s->last);
  if (s->legacy) {
    for (const auto& o : g_streams)
      if (o->device == s->device && !(o->flags & cudaStreamNonBlocking) && o->last && !o->last->done)
        w->deps.push_back(o->last);
  } else if (!(s->flags & cudaStreamNonBlocking)) {
    const CUstream_st& l = g_legacy[s->device];
    if (l.last && !l.last->done) w->deps.push_back(l.last);
  }
  s->last = w;
  if (out) *out = w;
  touch_context(s->device);
  if (settings().async == AsyncMode::Eager) {
    run_until(w->deps);  // nothing is pending in eager mode, except work queued while work runs
    execute(*w);
  } else {
    g_pending.push_back(w);
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t enqueue(cudaStream_t stream, const char*, std::function<void()> work) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (const cudaError_t e = sticky_error(); e != cudaSuccess) return e;
  CUstream_st* s = resolve(stream);
  if (s == nullptr) return set_last_error(cudaErrorInvalidResourceHandle);
  return queue(s, std::move(work), {});
}

void after_stream_work(cudaStream_t stream, std::function<void()> fn) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  CUstream_st* s = resolve(stream);
  if (s != nullptr && s->last && !s->last->done) {
    s->last->then.push_back(std::move(fn));
    return;
  }
  fn();  // the stream is idle (or unknown): nothing queued can still touch what fn changes
}

cudaError_t synchronize_stream(cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  CUstream_st* s = resolve(stream);
  if (s == nullptr) return set_last_error(cudaErrorInvalidResourceHandle);
  std::vector<std::shared_ptr<Work>> targets{s->last};
  if (s->legacy)  // the legacy stream also waits for the blocking streams' work
    for (const auto& o : g_streams)
      if (o->device == s->device && !(o->flags & cudaStreamNonBlocking)) targets.push_back(o->last);
  run_until(targets);
  return sticky_error();
}

cudaError_t synchronize_all() {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  run_until(std::vector<std::shared_ptr<Work>>(g_pending));
  return sticky_error();
}

cudaError_t synchronize_device(int device) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  std::vector<std::shared_ptr<Work>> mine;
  for (const auto& w : g_pending)
    if (w->device == device) mine.push_back(w);
  run_until(mine);
  return sticky_error();
}

int stream_device(cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  const CUstream_st* s = resolve(stream);
  return s ? s->device : -1;
}

}  // namespace mixt::cuda::emulated

using namespace mixt::cuda::emulated;

namespace {

CUevent_st* resolve_event(cudaEvent_t e) {
  for (const auto& p : g_events)
    if (p.get() == e) return e->destroyed ? nullptr : e;
  return nullptr;
}

cudaError_t create_stream(cudaStream_t* out, unsigned flags, int priority) {
  if (out == nullptr || (flags & ~static_cast<unsigned>(cudaStreamNonBlocking)) != 0)
    return set_last_error(cudaErrorInvalidValue);
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  auto s = std::make_unique<CUstream_st>();
  s->device = current_device();
  s->flags = flags;
  // Out-of-range priorities are clamped, as the runtime documents.
  s->priority = std::clamp(priority, limits::kStreamPriorityGreatest, limits::kStreamPriorityLeast);
  touch_context(s->device);
  *out = s.get();
  g_streams.push_back(std::move(s));
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* s) { return create_stream(s, cudaStreamDefault, 0); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) { return create_stream(s, flags, 0); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int priority) {
  return create_stream(s, flags, priority);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (is_legacy_handle(stream)) return set_last_error(cudaErrorInvalidResourceHandle);
  CUstream_st* s = resolve(stream);
  if (s == nullptr) return set_last_error(cudaErrorInvalidResourceHandle);
  s->destroyed = true;  // queued work still runs (the runtime documents this)
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return set_last_error(synchronize_stream(stream)); }

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  CUstream_st* s = resolve(stream);
  if (s == nullptr) return set_last_error(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = sticky_error(); e != cudaSuccess) return e;
  if (!s->last || s->last->done) return cudaSuccess;
  // Not finished: make progress so a polling loop ends, but say "not ready" this time.
  run_until({s->last});
  return cudaErrorNotReady;
}

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int* priority) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  CUstream_st* s = resolve(stream);
  if (s == nullptr || priority == nullptr) return set_last_error(cudaErrorInvalidValue);
  *priority = s->priority;
  return cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int* flags) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  CUstream_st* s = resolve(stream);
  if (s == nullptr || flags == nullptr) return set_last_error(cudaErrorInvalidValue);
  *flags = s->flags;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* status) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (status == nullptr || resolve(stream) == nullptr) return set_last_error(cudaErrorInvalidValue);
  *status = cudaStreamCaptureStatusNone;  // the emulated device has no graph capture
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = limits::kStreamPriorityLeast;
  if (greatest) *greatest = limits::kStreamPriorityGreatest;
  return cudaSuccess;
}

// Waits for the current device only (other devices' work goes on, as on real GPUs).
cudaError_t cudaDeviceSynchronize(void) { return set_last_error(synchronize_device(current_device())); }

cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  constexpr unsigned kKnown = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (e == nullptr || (flags & ~kKnown) != 0) return set_last_error(cudaErrorInvalidValue);
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  auto ev = std::make_unique<CUevent_st>();
  ev->device = current_device();
  ev->flags = flags;
  *e = ev.get();
  g_events.push_back(std::move(ev));
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  CUevent_st* ev = resolve_event(e);
  if (ev == nullptr) return set_last_error(cudaErrorInvalidResourceHandle);
  ev->destroyed = true;
  ev->work.reset();
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (const cudaError_t err = sticky_error(); err != cudaSuccess) return err;
  CUevent_st* ev = resolve_event(e);
  CUstream_st* s = resolve(stream);
  if (ev == nullptr || s == nullptr || ev->device != s->device) return set_last_error(cudaErrorInvalidResourceHandle);
  return queue(s, [] {}, {}, &ev->work);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t e, unsigned int flags) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (const cudaError_t err = sticky_error(); err != cudaSuccess) return err;
  CUevent_st* ev = resolve_event(e);
  CUstream_st* s = resolve(stream);
  if (ev == nullptr || s == nullptr || flags != 0) return set_last_error(cudaErrorInvalidResourceHandle);
  if (!ev->work) return cudaSuccess;  // never recorded: nothing to wait for
  return queue(s, [] {}, {ev->work});
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  CUevent_st* ev = resolve_event(e);
  if (ev == nullptr) return set_last_error(cudaErrorInvalidResourceHandle);
  if (const cudaError_t err = sticky_error(); err != cudaSuccess) return err;
  if (!ev->work || ev->work->done) return cudaSuccess;
  run_until({ev->work});
  return cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  CUevent_st* ev = resolve_event(e);
  if (ev == nullptr) return set_last_error(cudaErrorInvalidResourceHandle);
  if (ev->work) run_until({ev->work});
  return set_last_error(sticky_error());
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  CUevent_st* a = resolve_event(start);
  CUevent_st* b = resolve_event(end);
  if (ms == nullptr) return set_last_error(cudaErrorInvalidValue);
  if (a == nullptr || b == nullptr || !a->work || !b->work || (a->flags & cudaEventDisableTiming) ||
      (b->flags & cudaEventDisableTiming))
    return set_last_error(cudaErrorInvalidResourceHandle);
  if (!a->work->done || !b->work->done) return set_last_error(cudaErrorNotReady);
  *ms = static_cast<float>(b->work->finished_ms - a->work->finished_ms);
  return cudaSuccess;
}

}  // extern "C"
