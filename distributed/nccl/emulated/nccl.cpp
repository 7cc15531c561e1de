// The NCCL stand-in of the emulated CUDA device (-Dcuda=emulated): NCCL's API as
// nccl.h declares it, over Open MPI, one rank per process. This file: versions,
// errors, communicators (init, split, finalize, destroy, abort, queries) and
// groups; rendezvous.cpp: MPI and the bootstrap; ops.cpp: the collectives and
// send/recv.
//
// Note [Emulated NCCL]: a communicator is an MPI communicator of its own (made
// from MPI_COMM_WORLD for an id, from the parent for a split; Note [Emulated NCCL
// rendezvous]) plus the CUDA device that was current at init. Operations are
// checked when called, as NCCL's argument checks are (ncclInvalidArgument, and
// ncclGetLastError says which argument), then queued on the caller's stream with
// the emulated runtime's enqueue(): when the work runs it copies the inputs from
// device memory (host memory in the emulation), moves them with non-blocking MPI,
// waits, reduces in rank order and writes the outputs. A group's operations are
// one piece of work that posts them all before it waits, so matching sends and
// receives of a group never deadlock. Errors found while work runs (MPI failures,
// peers that never come within MIXT_EMULATED_NCCL_TIMEOUT, counts that differ)
// become the communicator's asynchronous error, reported by ncclCommGetAsyncError;
// ncclCommAbort frees a communicator without waiting, and queued work of an
// aborted communicator does nothing.
#include <mixt/distributed/nccl/emulated/internal.h>

#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include <mixt/kernels/cuda/emulated/emulator.h>

namespace mixt::nccl_emulated {

namespace emu = mixt::cuda::emulated;

namespace {

thread_local std::string t_last_error;
std::unordered_map<ncclComm*, std::shared_ptr<ncclComm>> g_comms;

constexpr unsigned kConfigMagic = 0xcafebeef;

// The blocking mode when a config leaves it undefined: NCCL_COMM_BLOCKING, else blocking.
bool default_blocking() {
  const char* v = std::getenv("NCCL_COMM_BLOCKING");
  return v == nullptr || std::atoi(v) != 0;
}

// Checks `config` (null: inherit `parent`'s, or the defaults) into `out`.
ncclResult_t read_config(const char* what, const ncclConfig_t* config, const ncclComm* parent, ncclConfig_t* out,
                         bool* blocking) {
  ncclConfig_t defaults = NCCL_CONFIG_INITIALIZER;
  if (config == nullptr) {
    *out = parent ? parent->config : defaults;
    *blocking = parent ? parent->blocking : default_blocking();
    return ncclSuccess;
  }
  if (config->magic != kConfigMagic || config->size < offsetof(ncclConfig_t, blocking) + sizeof(int))
    return fail(ncclInvalidArgument, strf("%s: config was not initialised with NCCL_CONFIG_INITIALIZER", what));
  if (config->blocking != NCCL_CONFIG_UNDEF_INT && config->blocking != 0 && config->blocking != 1)
    return fail(ncclInvalidArgument, strf("%s: config->blocking is %d (0 or 1)", what, config->blocking));
  *out = defaults;
  std::memcpy(out, config, std::min(config->size, sizeof *out));
  out->netName = nullptr;  // not kept: the caller owns the strings
  out->commName = nullptr;
  *blocking = config->blocking == NCCL_CONFIG_UNDEF_INT ? default_blocking() : config->blocking == 1;
  return ncclSuccess;
}

// Makes progress until `done()` holds (checked under the lock) or the peer timeout
// passes; false on timeout.
template <class Done>
bool drive(Done&& done) {
  const double limit = peer_timeout_seconds();
  const auto start = Clock::now();
  Pause pause;
  for (;;) {
    {
      std::lock_guard lock(state_mutex());
      progress(true);
      if (done()) return true;
    }
    if (limit > 0 && std::chrono::duration<double>(Clock::now() - start).count() > limit) return false;
    pause();
  }
}

// What a blocking creation returns once `c` (and the split's `parent`) settled;
// a creation whose peers do not all come within the peer timeout fails.
ncclResult_t settle_creation(const std::shared_ptr<ncclComm>& c, const std::shared_ptr<ncclComm>& parent,
                             const char* what) {
  const bool in_time = drive([&] {
    return comm_state(*c) != ncclInProgress && (!parent || comm_state(*parent) != ncclInProgress);
  });
  std::lock_guard lock(state_mutex());
  if (!in_time) {
    const std::string why =
        strf("%s: not every rank took part within %g s (MIXT_EMULATED_NCCL_TIMEOUT)", what, peer_timeout_seconds());
    for (ncclComm* x : {c.get(), parent.get()}) {
      if (x == nullptr) continue;
      set_comm_error(*x, ncclRemoteError, why);
      drop_tasks(*x);
      x->busy = 0;
    }
  }
  const ncclResult_t s = comm_state(*c);
  return s == ncclSuccess ? s : fail(s, c->error_text);
}

// Polls `comm` (as a non-blocking caller would) until its finalize completed;
// fails it with ncclRemoteError when the queued work does not finish in time.
ncclResult_t wait_finalized(ncclComm_t comm, const std::shared_ptr<ncclComm>& c) {
  const double limit = peer_timeout_seconds();
  const auto start = Clock::now();
  Pause pause;
  for (;;) {
    ncclResult_t state = ncclInProgress;
    if (const ncclResult_t r = ncclCommGetAsyncError(comm, &state); r != ncclSuccess) return r;
    std::lock_guard lock(state_mutex());
    if (state == ncclSuccess) return ncclSuccess;
    if (state != ncclInProgress) return fail(state, c->error_text);
    if (limit > 0 && std::chrono::duration<double>(Clock::now() - start).count() > limit) {
      set_comm_error(*c, ncclRemoteError,
                     strf("ncclCommFinalize: queued operations did not finish within %g s (MIXT_EMULATED_NCCL_TIMEOUT)",
                          limit));
      return fail(ncclRemoteError, c->error_text);
    }
    pause();
  }
}

// settle_creation for a blocking call: a communicator that failed is freed and
// *newcomm is NULL (as NCCL's failed init leaves it).
ncclResult_t settle_blocking(const std::shared_ptr<ncclComm>& c, const std::shared_ptr<ncclComm>& parent,
                             ncclComm_t* newcomm, const char* what) {
  const ncclResult_t r = settle_creation(c, parent, what);
  if (r == ncclSuccess || c.get() != *newcomm) return r;
  std::lock_guard lock(state_mutex());
  c->aborted = true;
  unregister_comm(c.get());
  if (c->mpi != MPI_COMM_NULL && mpi_alive()) MPI_Comm_free(&c->mpi);
  *newcomm = nullptr;
  return r;
}

// Lets the emulated runtime run the work queued on `comm`'s streams (deferred
// mode; never under the lock).
void run_queued(ncclComm_t comm) {
  std::vector<cudaStream_t> streams;
  int device = -1;
  {
    std::lock_guard lock(state_mutex());
    const std::shared_ptr<ncclComm> c = lookup(comm);
    if (!c || c->queued == 0) return;
    streams = c->streams;
    device = c->device;
  }
  DeviceScope scope(device);
  for (cudaStream_t s : streams) emu::synchronize_stream(s);
}

// The return of a non-blocking creation call.
ncclResult_t nonblocking_return(const ncclComm& c) {
  const ncclResult_t s = comm_state(c);
  if (s == ncclSuccess || s == ncclInProgress) return ncclInProgress;
  return fail(s, c.error_text);
}

ncclResult_t init_rank(ncclComm_t* newcomm, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* config,
                       int device) {
  const char* what = "ncclCommInitRank";
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "ncclCommInitRank: newcomm is NULL");
  *newcomm = nullptr;
  if (nranks < 1) return fail(ncclInvalidArgument, strf("%s: invalid device count (%d) requested", what, nranks));
  if (rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, strf("%s: rank %d exceeds ndev=%d", what, rank, nranks));
  auto c = std::make_shared<ncclComm>();
  if (const ncclResult_t r = read_config(what, config, nullptr, &c->config, &c->blocking); r != ncclSuccess) return r;
  c->rank = rank;
  c->nranks = nranks;
  c->device = device;
  {
    std::lock_guard lock(state_mutex());
    if (const ncclResult_t r = ensure_mpi(); r != ncclSuccess) return r;
    if (const ncclResult_t r = start_init(c, id, nranks, rank); r != ncclSuccess) return r;
    register_comm(c);
    *newcomm = c.get();
    progress(false);
  }
  if (GroupState& g = group_state(); g.depth > 0) {
    g.created.push_back(c);
    return ncclSuccess;
  }
  if (c->blocking) return settle_blocking(c, nullptr, newcomm, what);
  std::lock_guard lock(state_mutex());
  return nonblocking_return(*c);
}

}  // namespace

std::mutex& state_mutex() {
  static std::mutex m;
  return m;
}

ncclResult_t fail(ncclResult_t r, const std::string& text) {
  t_last_error = text;
  return r;
}

std::string strf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return strf("MPI error %d", rc);
  return std::string(text, static_cast<size_t>(len));
}

ncclResult_t mpi_result(int rc) {
  int cls = MPI_ERR_OTHER;
  MPI_Error_class(rc, &cls);
  if (cls == MPI_ERR_TRUNCATE) return ncclInvalidUsage;
#ifdef MPIX_ERR_PROC_FAILED
  if (cls == MPIX_ERR_PROC_FAILED) return ncclRemoteError;
#endif
  return ncclSystemError;
}

void set_comm_error(ncclComm& c, ncclResult_t r, const std::string& text) {
  if (c.error != ncclSuccess) return;
  c.error = r;
  c.error_text = c.nranks > 0 ? strf("rank %d of %d: %s", c.rank, c.nranks, text.c_str()) : text;
}

std::shared_ptr<ncclComm> lookup(ncclComm_t handle) {
  const auto it = g_comms.find(handle);
  return it == g_comms.end() ? nullptr : it->second;
}

void register_comm(const std::shared_ptr<ncclComm>& c) { g_comms[c.get()] = c; }

void unregister_comm(ncclComm_t handle) { g_comms.erase(handle); }

ncclResult_t comm_state(const ncclComm& c) {
  if (c.error != ncclSuccess) return c.error;
  return c.busy > 0 ? ncclInProgress : ncclSuccess;
}

ncclResult_t ready_comm(ncclComm_t handle, const char* what, std::shared_ptr<ncclComm>* out) {
  if (handle == nullptr) return fail(ncclInvalidArgument, strf("%s: comm is NULL", what));
  *out = lookup(handle);
  if (!*out)
    return fail(ncclInvalidArgument,
                strf("%s: comm %p is not a live communicator (never made, destroyed or aborted)", what,
                     static_cast<void*>(handle)));
  const ncclComm& c = **out;
  const ncclResult_t s = comm_state(c);
  if (s == ncclInProgress)
    return fail(ncclInvalidArgument, strf("%s: Attempt to use communicator before the previous operation returned "
                                          "ncclSuccess (poll ncclCommGetAsyncError until it does)",
                                          what));
  if (s != ncclSuccess) return fail(s, strf("%s: the communicator failed: %s", what, c.error_text.c_str()));
  if (c.finalized || c.finalizing) return fail(ncclInvalidUsage, strf("%s: the communicator was finalized", what));
  return ncclSuccess;
}

DeviceScope::DeviceScope(int device) {
  const int current = emu::current_device();
  if (current != device && cudaSetDevice(device) == cudaSuccess) previous_ = current;
}

DeviceScope::~DeviceScope() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

}  // namespace mixt::nccl_emulated

using namespace mixt::nccl_emulated;

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (ncclGetLastError has the details)";
    case ncclSystemError: return "unhandled system error (ncclGetLastError has the details)";
    case ncclInternalError: return "internal error (ncclGetLastError has the details)";
    case ncclInvalidArgument: return "invalid argument (ncclGetLastError has the details)";
    case ncclInvalidUsage: return "invalid usage (ncclGetLastError has the details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t) { return t_last_error.c_str(); }

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  std::lock_guard lock(state_mutex());
  return make_unique_id(uniqueId);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  return init_rank(comm, nranks, commId, rank, config, mixt::cuda::emulated::current_device());
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return init_rank(comm, nranks, commId, rank, nullptr, mixt::cuda::emulated::current_device());
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr) return fail(ncclInvalidArgument, "ncclCommInitAll: comms is NULL");
  if (ndev != 1)
    return fail(ncclInvalidUsage, strf("ncclCommInitAll of %d devices: the emulated NCCL runs one rank per process "
                                       "(start the ranks with mpirun and use ncclCommInitRank)",
                                       ndev));
  ncclUniqueId id;
  if (const ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) return r;
  return init_rank(comms, 1, id, 0, nullptr, devlist ? devlist[0] : mixt::cuda::emulated::current_device());
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  const char* what = "ncclCommSplit";
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
  std::shared_ptr<ncclComm> parent, child;
  bool blocking = true;
  // The split posts an MPI collective on the parent's communicator now; the
  // parent's queued operations post theirs when they run: run them first, so that
  // every rank issues them in the same order.
  run_queued(comm);
  {
    std::lock_guard lock(state_mutex());
    progress(false);
    if (const ncclResult_t r = ready_comm(comm, what, &parent); r != ncclSuccess) return r;
    *newcomm = nullptr;
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
      return fail(ncclInvalidArgument, strf("%s: color %d (non-negative or NCCL_SPLIT_NOCOLOR)", what, color));
    ncclConfig_t cfg;
    if (const ncclResult_t r = read_config(what, config, parent.get(), &cfg, &blocking); r != ncclSuccess) return r;
    if (color != NCCL_SPLIT_NOCOLOR) {
      child = std::make_shared<ncclComm>();
      child->config = cfg;
      child->blocking = blocking;
      child->device = parent->device;
    }
    if (const ncclResult_t r = start_split(parent, child, color, key); r != ncclSuccess) return r;
    if (child) {
      register_comm(child);
      *newcomm = child.get();
    }
    progress(false);
  }
  if (GroupState& g = group_state(); g.depth > 0) {
    g.created.push_back(child ? child : parent);
    return ncclSuccess;
  }
  if (blocking) return child ? settle_blocking(child, parent, newcomm, what) : settle_creation(parent, nullptr, what);
  std::lock_guard lock(state_mutex());
  const ncclResult_t p = comm_state(*parent);
  if (p != ncclSuccess && p != ncclInProgress) return fail(p, parent->error_text);
  return child ? nonblocking_return(*child) : ncclInProgress;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  const char* what = "ncclCommGetAsyncError";
  if (asyncError == nullptr) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  std::shared_ptr<ncclComm> c;
  bool finalizing = false;
  {
    std::lock_guard lock(state_mutex());
    if (comm == nullptr) return fail(ncclInvalidArgument, strf("%s: comm is NULL", what));
    c = lookup(comm);
    if (!c) return fail(ncclInvalidArgument, strf("%s: comm %p is not a live communicator", what, (void*)comm));
    finalizing = c->finalizing;
  }
  if (finalizing) run_queued(comm);  // a finalize waits for the queued work (deferred mode)
  std::lock_guard lock(state_mutex());
  progress(true);
  if (c->finalizing && c->queued == 0) {
    c->finalizing = false;
    c->finalized = true;
    c->busy = std::max(0, c->busy - 1);
  }
  *asyncError = comm_state(*c);
  if (*asyncError != ncclSuccess && *asyncError != ncclInProgress) fail(*asyncError, c->error_text);
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  std::shared_ptr<ncclComm> c;
  {
    std::lock_guard lock(state_mutex());
    if (const ncclResult_t r = ready_comm(comm, "ncclCommFinalize", &c); r != ncclSuccess) return r;
    c->finalizing = true;
    c->busy += 1;
  }
  if (c->blocking) return wait_finalized(comm, c);
  ncclResult_t state = ncclInProgress;
  ncclCommGetAsyncError(comm, &state);
  std::lock_guard lock(state_mutex());
  return state == ncclSuccess || state == ncclInProgress ? ncclInProgress : fail(state, c->error_text);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  std::shared_ptr<ncclComm> c;
  bool wait = false;
  {
    std::lock_guard lock(state_mutex());
    if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommDestroy: comm is NULL");
    c = lookup(comm);
    if (!c)
      return fail(ncclInvalidArgument,
                  strf("ncclCommDestroy: comm %p is not a live communicator", static_cast<void*>(comm)));
    if (c->error == ncclSuccess && c->busy > 0 && !c->finalizing)
      return fail(ncclInvalidUsage, "ncclCommDestroy: the communicator is still being made or split (ncclInProgress): "
                                    "poll ncclCommGetAsyncError until ncclSuccess, or ncclCommAbort it");
    // Without ncclCommFinalize, destroy finalizes (waits for the queued work); a
    // failed communicator is freed at once.
    if (c->error == ncclSuccess && !c->finalized) {
      if (!c->finalizing) c->busy += 1;
      c->finalizing = true;
      wait = true;
    }
  }
  if (wait) wait_finalized(comm, c);
  std::lock_guard lock(state_mutex());
  unregister_comm(comm);
  if (c->mpi != MPI_COMM_NULL && mpi_alive()) MPI_Comm_free(&c->mpi);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  // No CUDA runtime call: a thread blocked in this communicator's queued work
  // holds the runtime while it waits, and notices the abort.
  std::lock_guard lock(state_mutex());
  const std::shared_ptr<ncclComm> c = lookup(comm);
  if (!c) return fail(ncclInvalidArgument, strf("ncclCommAbort: comm %p is not a live communicator", (void*)comm));
  c->aborted = true;
  drop_tasks(*c);
  unregister_comm(comm);
  if (c->mpi != MPI_COMM_NULL && mpi_alive()) MPI_Comm_free(&c->mpi);
  return ncclSuccess;
}

namespace {

// The checks of the attribute queries (NCCL's: a live communicator whose last operation settled).
ncclResult_t query(const ncclComm_t comm, const void* out, const char* what, std::shared_ptr<ncclComm>* c) {
  if (out == nullptr) return fail(ncclInvalidArgument, strf("%s: the output pointer is NULL", what));
  if (comm == nullptr) return fail(ncclInvalidArgument, strf("%s: comm is NULL", what));
  *c = lookup(comm);
  if (!*c) return fail(ncclInvalidArgument, strf("%s: comm %p is not a live communicator", what, (void*)comm));
  const ncclResult_t s = comm_state(**c);
  if (s == ncclInProgress)
    return fail(ncclInvalidArgument,
                strf("%s: Attempt to use communicator before the previous operation returned ncclSuccess", what));
  return s == ncclSuccess ? s : fail(s, (*c)->error_text);
}

}  // namespace

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  std::lock_guard lock(state_mutex());
  std::shared_ptr<ncclComm> c;
  if (const ncclResult_t r = query(comm, count, "ncclCommCount", &c); r != ncclSuccess) return r;
  *count = c->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  std::lock_guard lock(state_mutex());
  std::shared_ptr<ncclComm> c;
  if (const ncclResult_t r = query(comm, rank, "ncclCommUserRank", &c); r != ncclSuccess) return r;
  *rank = c->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  std::lock_guard lock(state_mutex());
  std::shared_ptr<ncclComm> c;
  if (const ncclResult_t r = query(comm, device, "ncclCommCuDevice", &c); r != ncclSuccess) return r;
  *device = c->device;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  group_state().depth += 1;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  GroupState& g = group_state();
  if (g.depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd: no ncclGroupStart to end");
  if (--g.depth > 0) return ncclSuccess;
  std::vector<Op> ops = std::move(g.ops);
  std::vector<std::shared_ptr<ncclComm>> created = std::move(g.created);
  const ncclResult_t error = g.error;
  g.ops.clear();
  g.created.clear();
  g.error = ncclSuccess;
  if (error != ncclSuccess) return error;  // a call of the group failed: nothing runs (its text stays)
  if (const ncclResult_t r = launch(std::move(ops)); r != ncclSuccess) return r;
  if (created.empty()) return ncclSuccess;
  bool any_blocking = false;
  for (const auto& c : created) any_blocking |= c->blocking;
  const bool in_time = !any_blocking || drive([&] {
    for (const auto& c : created)
      if (c->blocking && comm_state(*c) == ncclInProgress) return false;
    return true;
  });
  std::lock_guard lock(state_mutex());
  if (!in_time) {
    for (const auto& c : created) {
      if (!c->blocking || comm_state(*c) != ncclInProgress) continue;
      set_comm_error(*c, ncclRemoteError, strf("ncclGroupEnd: not every rank took part within %g s "
                                               "(MIXT_EMULATED_NCCL_TIMEOUT)",
                                               peer_timeout_seconds()));
      drop_tasks(*c);
      c->busy = 0;
    }
  }
  ncclResult_t result = ncclSuccess;
  for (const auto& c : created) {
    const ncclResult_t s = comm_state(*c);
    if (s == ncclInProgress) {
      if (result == ncclSuccess) result = ncclInProgress;
    } else if (s != ncclSuccess) {
      return fail(s, c->error_text);
    }
  }
  return result;
}
