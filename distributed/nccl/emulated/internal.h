// What the parts of the NCCL stand-in over Open MPI share (-Dcuda=emulated; not
// for applications, which see nccl.h). nccl.cpp has the API of communicators,
// errors and groups; rendezvous.cpp brings MPI up and runs the process's progress
// engine (unique ids, communicator creation and splits); ops.cpp the collectives
// and send/recv, queued on the caller's CUDA stream of the emulated device.
// See Note [Emulated NCCL] in nccl.cpp.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

// A communicator. The handle (ncclComm_t) is the raw pointer; the registry and
// the queued work own it through shared_ptr, so work queued before an abort or a
// destroy never touches freed memory. Fields are guarded by state_mutex() unless
// atomic.
struct ncclComm {
  int rank = -1, nranks = 0;
  int device = -1;                    // the CUDA device (the current one at init; a split's parent's)
  bool blocking = true;               // ncclConfig_t::blocking
  ncclConfig_t config{};              // as given (inherited by splits without a config)
  MPI_Comm mpi = MPI_COMM_NULL;       // its own MPI communicator, MPI_ERRORS_RETURN
  ncclResult_t error = ncclSuccess;   // the asynchronous error: sticky until abort
  std::string error_text;
  int busy = 0;                       // creation, splits of it, a finalize in flight: ncclInProgress
  bool finalizing = false, finalized = false;
  uint32_t splits = 0;                // splits of this communicator so far (their MPI tags)
  std::vector<cudaStream_t> streams;  // every stream work was queued on (finalize waits for them)
  std::atomic<bool> aborted{false};
  std::atomic<int> queued{0};         // batches queued on a stream and not yet run
};

namespace mixt::nccl_emulated {

using Clock = std::chrono::steady_clock;

// The one mutex of the stand-in: its state and every MPI call it makes (MPI may
// have been initialised below MPI_THREAD_MULTIPLE by the application). Never held
// while calling the CUDA runtime, which runs queued work under its own lock.
std::mutex& state_mutex();

// ---- errors ----
// Sets the calling thread's last error (ncclGetLastError) and returns `r`.
ncclResult_t fail(ncclResult_t r, const std::string& text);
// printf-style formatting.
std::string strf(const char* format, ...) __attribute__((format(printf, 1, 2)));
// MPI's text for an MPI error code.
std::string mpi_error_text(int rc);
// The NCCL result of an MPI error code (a lost peer: ncclRemoteError; a count
// that differs between ranks: ncclInvalidUsage; otherwise ncclSystemError).
ncclResult_t mpi_result(int rc);
// Puts `c` into the error state (the first error wins). Caller holds the lock.
void set_comm_error(ncclComm& c, ncclResult_t r, const std::string& text);

// ---- communicators (caller holds the lock) ----
std::shared_ptr<ncclComm> lookup(ncclComm_t handle);
void register_comm(const std::shared_ptr<ncclComm>& c);
void unregister_comm(ncclComm_t handle);
// What ncclCommGetAsyncError reports: the error, else ncclInProgress while busy.
ncclResult_t comm_state(const ncclComm& c);
// NCCL's check before an operation: a live handle whose last operation returned
// ncclSuccess (ncclInProgress becomes ncclInvalidArgument, an error stays), not
// finalized. `what` names the call in the error text.
ncclResult_t ready_comm(ncclComm_t handle, const char* what, std::shared_ptr<ncclComm>* out);

// ---- MPI and the progress engine (rendezvous.cpp; caller holds the lock) ----
// Initialises MPI at MPI_THREAD_MULTIPLE unless the application did (then
// finalises it at exit); ncclSystemError once MPI was finalised.
ncclResult_t ensure_mpi();
// True while MPI is initialised and not finalised.
bool mpi_alive();
// Makes the process's pending rendezvous and creations progress. With
// `may_block` a creation whose peers are all known also makes its MPI
// communicator (a short blocking call among them); work waiting for MPI passes
// false.
void progress(bool may_block);
// Fills `id` with a fresh unique id (this process serves its rendezvous).
ncclResult_t make_unique_id(ncclUniqueId* id);
// Starts joining the communicator of `id` as `rank` of `nranks`: `c` is busy
// until it completes or fails. ncclInvalidArgument for an id not made by
// make_unique_id.
ncclResult_t start_init(const std::shared_ptr<ncclComm>& c, const ncclUniqueId& id, int nranks, int rank);
// Starts a split of `parent`; `child` is null for NCCL_SPLIT_NOCOLOR.
ncclResult_t start_split(const std::shared_ptr<ncclComm>& parent, const std::shared_ptr<ncclComm>& child,
                         int color, int key);
// Forgets the pending creations and splits of `c` (ncclCommAbort): what they
// posted to MPI is kept until it completes, never waited for.
void drop_tasks(const ncclComm& c);
// Keeps MPI requests and the buffers they use until MPI completes them (an
// abandoned operation); `cancel` marks requests MPI may cancel (receives).
void orphan(std::vector<MPI_Request> requests, std::shared_ptr<void> buffers, bool cancel);

// ---- waiting ----
// Seconds an emulated operation waits for its peers before the communicator
// fails with ncclRemoteError (MIXT_EMULATED_NCCL_TIMEOUT, default 300; 0: never).
// Read at each use.
double peer_timeout_seconds();
// A poll loop's pause: yields first, then sleeps up to 1 ms.
class Pause {
 public:
  void operator()();

 private:
  int rounds_ = 0;
};

// ---- operations and groups (ops.cpp) ----
// One collective or send/recv, checked, waiting for its launch.
struct Op {
  enum Kind : uint8_t { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, Send, Recv };
  Kind kind = AllReduce;
  const char* name = "";  // the API call (static storage)
  std::shared_ptr<ncclComm> comm{};
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // elements; per rank for AllGather (sendcount) and ReduceScatter (recvcount)
  ncclDataType_t type = ncclInt8;
  ncclRedOp_t op = ncclSum;
  int peer = 0;  // the root (Broadcast, Reduce) or the peer (Send, Recv)
  cudaStream_t stream = nullptr;
};
// The calling thread's group (ncclGroupStart/End).
struct GroupState {
  int depth = 0;
  ncclResult_t error = ncclSuccess;               // the first failed call of the group
  std::vector<Op> ops;                            // launched at the outermost ncclGroupEnd
  std::vector<std::shared_ptr<ncclComm>> created; // inits and splits of the group
  GroupState();
  ~GroupState();
};
GroupState& group_state();
// Queues `ops` (checked) as one piece of work on their stream(s).
ncclResult_t launch(std::vector<Op> ops);

// Makes `device` current for the scope (never under the lock).
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace mixt::nccl_emulated
