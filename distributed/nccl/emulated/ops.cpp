// The emulated NCCL's collectives and send/recv (Note [Emulated NCCL] in
// nccl.cpp): NCCL's argument checks at the call, then one piece of stream-ordered
// work per call (or per group) that stages the inputs, moves them with
// non-blocking MPI on the communicator's MPI communicator, waits, reduces and
// writes the outputs.
//
// Note [Emulated NCCL reductions]: every rank gets every contribution (an
// allgather, a gather to the root, an alltoall for reduce-scatter) and reduces them
// itself in rank order 0, 1, ..., n-1, so every rank's result is the same bits and
// a run is deterministic. Each step rounds to the data type, as NCCL's kernels do:
// float16, bfloat16 and float8 are widened to float, combined and rounded back to
// nearest even (runtime/float_types.h). Integer sums and products wrap. min/max of
// floats are fmin/fmax (a NaN loses to a number). ncclAvg is NCCL's: floating
// types multiply each contribution by 1/n rounded to the type, then sum
// (PreMulSum); integers sum, then divide, truncating (SumPostDiv).
#include <mixt/distributed/nccl/emulated/internal.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <new>
#include <type_traits>

#include <mixt/kernels/cuda/emulated/access_checks.h>
#include <mixt/kernels/cuda/emulated/emulator.h>
#include <mixt/runtime/float_types.h>

// The largest MPI count per message (a test build lowers it to exercise the path
// of datatypes for counts past INT_MAX).
#ifndef MIXT_EMULATED_NCCL_MAX_COUNT
#define MIXT_EMULATED_NCCL_MAX_COUNT INT_MAX
#endif

namespace mixt::nccl_emulated {

namespace emu = mixt::cuda::emulated;

namespace {

constexpr int kP2PTag = 1;  // NCCL matches a pair's sends and receives in issue order: one tag

size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

bool is_collective(Op::Kind k) { return k != Op::Send && k != Op::Recv; }
bool reduces(Op::Kind k) { return k == Op::AllReduce || k == Op::Reduce || k == Op::ReduceScatter; }

// ---- reductions (Note [Emulated NCCL reductions]) ----

template <class T>
constexpr bool kNarrow = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                         std::is_same_v<T, Float8_e4m3fn> || std::is_same_v<T, Float8_e5m2>;

template <class T>
T combine(T a, T b, ncclRedOp_t op) {
  if constexpr (kNarrow<T>) {
    return T(static_cast<float>(combine(static_cast<float>(a), static_cast<float>(b), op)));
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case ncclProd: return a * b;
      case ncclMax: return std::fmax(a, b);
      case ncclMin: return std::fmin(a, b);
      default: return a + b;  // sum, avg
    }
  } else {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case ncclProd: return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case ncclMax: return a < b ? b : a;
      case ncclMin: return b < a ? b : a;
      default: return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    }
  }
}

// out[i] = in_0[i] op in_1[i] op ... op in_{n-1}[i], in_r = in + r * stride elements.
template <class T>
void reduce_typed(T* out, const T* in, size_t stride, int n, size_t count, ncclRedOp_t op) {
  if constexpr (!std::is_integral_v<T>) {
    if (op == ncclAvg) {  // NCCL's PreMulSum: each contribution times 1/n rounded to the type, then summed
      const T scale = T(1.0 / n);
      for (size_t i = 0; i < count; ++i) out[i] = combine(in[i], scale, ncclProd);
      for (int r = 1; r < n; ++r) {
        const T* x = in + static_cast<size_t>(r) * stride;
        for (size_t i = 0; i < count; ++i) out[i] = combine(out[i], combine(x[i], scale, ncclProd), ncclSum);
      }
      return;
    }
  }
  std::memcpy(static_cast<void*>(out), in, count * sizeof(T));
  for (int r = 1; r < n; ++r) {
    const T* x = in + static_cast<size_t>(r) * stride;
    for (size_t i = 0; i < count; ++i) out[i] = combine(out[i], x[i], op);
  }
  if constexpr (std::is_integral_v<T>) {
    if (op == ncclAvg)  // NCCL's SumPostDiv
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<T>(out[i] / static_cast<T>(n));
  }
}

void reduce(void* out, const void* in, size_t stride, int n, size_t count, ncclDataType_t t, ncclRedOp_t op) {
  switch (t) {
#define MIXT_REDUCE_CASE(nccl_type, T) \
  case nccl_type: return reduce_typed(static_cast<T*>(out), static_cast<const T*>(in), stride, n, count, op);
    MIXT_REDUCE_CASE(ncclInt8, int8_t)
    MIXT_REDUCE_CASE(ncclUint8, uint8_t)
    MIXT_REDUCE_CASE(ncclInt32, int32_t)
    MIXT_REDUCE_CASE(ncclUint32, uint32_t)
    MIXT_REDUCE_CASE(ncclInt64, int64_t)
    MIXT_REDUCE_CASE(ncclUint64, uint64_t)
    MIXT_REDUCE_CASE(ncclFloat16, Half)
    MIXT_REDUCE_CASE(ncclFloat32, float)
    MIXT_REDUCE_CASE(ncclFloat64, double)
    MIXT_REDUCE_CASE(ncclBfloat16, BFloat16)
    MIXT_REDUCE_CASE(ncclFloat8e4m3, Float8_e4m3fn)
    MIXT_REDUCE_CASE(ncclFloat8e5m2, Float8_e5m2)
#undef MIXT_REDUCE_CASE
    default: break;
  }
}

// ---- checks at the call ----

ncclResult_t group_fail(ncclResult_t r) {
  GroupState& g = group_state();
  if (g.depth > 0 && g.error == ncclSuccess) g.error = r;
  return r;
}

// A buffer of `bytes` must be memory the communicator's device reads and writes:
// device memory of that device, or mapped pinned host memory. Current device:
// the communicator's.
ncclResult_t check_buffer(const Op& o, const char* which, const void* p, size_t bytes) {
  if (bytes == 0) return ncclSuccess;
  const int device = o.comm->device;
  if (p == nullptr) return fail(ncclInvalidArgument, strf("%s: %s is NULL (%zu bytes)", o.name, which, bytes));
  const emu::Allocation a = emu::find_allocation(p, bytes);
  if (a.kind == emu::MemoryKind::Device && a.device == device) return ncclSuccess;
  if (a.kind == emu::MemoryKind::PinnedHost && emu::device_accessible(p, bytes)) return ncclSuccess;
  std::string why;
  if (a.kind == emu::MemoryKind::Device) {
    why = strf("is memory of CUDA device %d, but the communicator's device is %d", a.device, device);
  } else if (const emu::Allocation start = emu::find_allocation(p, 1); start.kind != emu::MemoryKind::None) {
    why = strf("runs past the end of its allocation (%zu bytes at %p)", start.bytes,
               static_cast<const void*>(start.base));
  } else {
    why = "is not device memory (host memory: copy it to the device with cudaMemcpy first)";
  }
  return fail(ncclInvalidArgument, strf("%s: %s %p (%zu bytes) %s", o.name, which, p, bytes, why.c_str()));
}

ncclResult_t check(Op& o, ncclComm_t handle) {
  {
    std::lock_guard lock(state_mutex());
    progress(false);
    if (const ncclResult_t r = ready_comm(handle, o.name, &o.comm); r != ncclSuccess) return r;
  }
  const ncclComm& c = *o.comm;
  const size_t es = type_size(o.type);
  if (es == 0) return fail(ncclInvalidArgument, strf("%s: datatype %d is not an ncclDataType_t", o.name, (int)o.type));
  if (reduces(o.kind) && (o.op < ncclSum || o.op >= ncclNumOps))
    return fail(ncclInvalidArgument,
                strf("%s: reduction %d is not one of ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg (the emulated NCCL "
                     "has no ncclRedOpCreatePreMulSum)",
                     o.name, (int)o.op));
  if (o.kind == Op::Broadcast || o.kind == Op::Reduce) {
    if (o.peer < 0 || o.peer >= c.nranks)
      return fail(ncclInvalidArgument, strf("%s: root %d of a communicator of %d ranks", o.name, o.peer, c.nranks));
  }
  if (!is_collective(o.kind) && (o.peer < 0 || o.peer >= c.nranks))
    return fail(ncclInvalidArgument, strf("%s: peer %d of a communicator of %d ranks", o.name, o.peer, c.nranks));
  const size_t n = static_cast<size_t>(c.nranks);
  if (o.count > SIZE_MAX / es / n) return fail(ncclInvalidArgument, strf("%s: count %zu overflows", o.name, o.count));
  const size_t bytes = o.count * es;
  DeviceScope scope(c.device);
  const int sd = emu::stream_device(o.stream);
  if (sd < 0)
    return fail(ncclInvalidArgument, strf("%s: stream %p is not a CUDA stream (destroyed?)", o.name, (void*)o.stream));
  if (sd != c.device)
    return fail(ncclInvalidArgument, strf("%s: stream %p belongs to CUDA device %d, the communicator to device %d",
                                          o.name, (void*)o.stream, sd, c.device));
  const bool root = o.peer == c.rank;
  ncclResult_t r = ncclSuccess;
  switch (o.kind) {
    case Op::AllReduce:
      if ((r = check_buffer(o, "sendbuff", o.send, bytes)) == ncclSuccess)
        r = check_buffer(o, "recvbuff", o.recv, bytes);
      break;
    case Op::Broadcast:
      if (!root || (r = check_buffer(o, "sendbuff", o.send, bytes)) == ncclSuccess)
        r = check_buffer(o, "recvbuff", o.recv, bytes);
      break;
    case Op::Reduce:
      if ((r = check_buffer(o, "sendbuff", o.send, bytes)) == ncclSuccess && root)
        r = check_buffer(o, "recvbuff", o.recv, bytes);
      break;
    case Op::AllGather:
      if ((r = check_buffer(o, "sendbuff", o.send, bytes)) == ncclSuccess)
        r = check_buffer(o, "recvbuff", o.recv, n * bytes);
      break;
    case Op::ReduceScatter:
      if ((r = check_buffer(o, "sendbuff", o.send, n * bytes)) == ncclSuccess)
        r = check_buffer(o, "recvbuff", o.recv, bytes);
      break;
    case Op::Send: r = check_buffer(o, "sendbuff", o.send, bytes); break;
    case Op::Recv: r = check_buffer(o, "recvbuff", o.recv, bytes); break;
  }
  return r;
}

ncclResult_t submit(Op o, ncclComm_t handle) {
  if (const ncclResult_t r = check(o, handle); r != ncclSuccess) return group_fail(r);
  if (GroupState& g = group_state(); g.depth > 0) {
    g.ops.push_back(std::move(o));
    return ncclSuccess;
  }
  std::vector<Op> one;
  one.push_back(std::move(o));
  return launch(std::move(one));
}

// ---- the work ----

// An MPI datatype of `bytes` bytes as one element (count 1), or MPI_BYTE x bytes
// when that fits an int.
struct Block {
  MPI_Datatype type = MPI_BYTE;
  int count = 0;
  bool owned = false;
};
Block block_of(size_t bytes) {
  constexpr size_t kMax = static_cast<size_t>(MIXT_EMULATED_NCCL_MAX_COUNT);
  if (bytes <= kMax) return {MPI_BYTE, static_cast<int>(bytes), false};
  const size_t unit = std::min<size_t>(size_t{1} << 20, kMax);
  MPI_Datatype units = MPI_DATATYPE_NULL, units_n = MPI_DATATYPE_NULL, whole = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(static_cast<int>(unit), MPI_BYTE, &units);
  MPI_Type_contiguous(static_cast<int>(bytes / unit), units, &units_n);
  const int lengths[2] = {1, static_cast<int>(bytes % unit)};
  const MPI_Aint displacements[2] = {0, static_cast<MPI_Aint>(bytes / unit * unit)};
  const MPI_Datatype types[2] = {units_n, MPI_BYTE};
  MPI_Type_create_struct(2, lengths, displacements, types, &whole);
  MPI_Type_commit(&whole);
  MPI_Type_free(&units);
  MPI_Type_free(&units_n);
  return {whole, 1, true};
}

// The staging buffers of one operation (kept alive by an abandoned MPI operation).
struct Staging {
  std::unique_ptr<char[]> in, out;
};

// One operation while its work runs.
struct Live {
  Op* op = nullptr;
  bool active = false;  // posted, waiting for MPI
  bool done = false;    // MPI finished: write the outputs
  std::vector<MPI_Request> reqs;
  MPI_Status status{};
  std::shared_ptr<Staging> buf;
};

char* staged_copy(const void* src, size_t bytes) {
  char* p = new char[bytes];
  std::memcpy(p, src, bytes);
  return p;
}

// Posts `l`'s MPI operation (caller holds the lock). The inputs are read now: in stream order.
int post(Live& l) {
  const Op& o = *l.op;
  const ncclComm& c = *o.comm;
  const size_t n = static_cast<size_t>(c.nranks), bytes = o.count * type_size(o.type);
  if (bytes == 0 || (c.nranks == 1 && is_collective(o.kind))) {  // nothing to move
    l.done = true;
    return MPI_SUCCESS;
  }
  l.buf = std::make_shared<Staging>();
  Staging& s = *l.buf;
  const Block b = block_of(bytes);
  const bool root = o.peer == c.rank;
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  switch (o.kind) {
    case Op::AllReduce:
    case Op::AllGather:
      s.in.reset(staged_copy(o.send, bytes));
      s.out.reset(new char[n * bytes]);
      rc = MPI_Iallgather(s.in.get(), b.count, b.type, s.out.get(), b.count, b.type, c.mpi, &req);
      break;
    case Op::Reduce:
      s.in.reset(staged_copy(o.send, bytes));
      if (root) s.out.reset(new char[n * bytes]);
      rc = MPI_Igather(s.in.get(), b.count, b.type, s.out.get(), b.count, b.type, o.peer, c.mpi, &req);
      break;
    case Op::Broadcast:
      s.in.reset(root ? staged_copy(o.send, bytes) : new char[bytes]);
      rc = MPI_Ibcast(s.in.get(), b.count, b.type, o.peer, c.mpi, &req);
      break;
    case Op::ReduceScatter:
      s.in.reset(staged_copy(o.send, n * bytes));
      s.out.reset(new char[n * bytes]);
      rc = MPI_Ialltoall(s.in.get(), b.count, b.type, s.out.get(), b.count, b.type, c.mpi, &req);
      break;
    case Op::Send:
      // Synchronous mode: done once the peer's receive matched (NCCL's send blocks the GPU until then).
      s.in.reset(staged_copy(o.send, bytes));
      rc = MPI_Issend(s.in.get(), b.count, b.type, o.peer, kP2PTag, c.mpi, &req);
      break;
    case Op::Recv:
      s.out.reset(new char[bytes]);
      rc = MPI_Irecv(s.out.get(), b.count, b.type, o.peer, kP2PTag, c.mpi, &req);
      break;
  }
  if (b.owned) {
    MPI_Datatype t = b.type;
    MPI_Type_free(&t);  // operations in flight keep it
  }
  if (rc == MPI_SUCCESS) {
    l.reqs.push_back(req);
    l.active = true;
  }
  return rc;
}

// Writes `l`'s outputs once MPI finished (no lock: touches only this operation's memory).
// Returns an error text when the peers did not keep the contract.
std::string write_outputs(Live& l) {
  const Op& o = *l.op;
  const ncclComm& c = *o.comm;
  const int n = c.nranks;
  const size_t es = type_size(o.type), bytes = o.count * es;
  if (bytes == 0) return "";
  if (n == 1 && is_collective(o.kind)) {  // every collective of one rank is a copy (avg: x * 1)
    std::memmove(o.recv, o.send, bytes);
    return "";
  }
  const Staging& s = *l.buf;
  switch (o.kind) {
    case Op::AllReduce: reduce(o.recv, s.out.get(), o.count, n, o.count, o.type, o.op); break;
    case Op::Reduce:
      if (o.peer == c.rank) reduce(o.recv, s.out.get(), o.count, n, o.count, o.type, o.op);
      break;
    case Op::ReduceScatter: reduce(o.recv, s.out.get(), o.count, n, o.count, o.type, o.op); break;
    case Op::Broadcast: std::memcpy(o.recv, s.in.get(), bytes); break;
    case Op::AllGather: std::memcpy(o.recv, s.out.get(), static_cast<size_t>(n) * bytes); break;
    case Op::Send: break;
    case Op::Recv: {
      int got = 0;
      MPI_Get_count(&l.status, MPI_BYTE, &got);
      if (got != MPI_UNDEFINED && static_cast<size_t>(got) != bytes && bytes <= INT_MAX)
        return strf("ncclRecv from rank %d: %zu bytes expected, the peer sent %d (send and receive must have the "
                    "same count and datatype)",
                    o.peer, bytes, got);
      std::memcpy(o.recv, s.out.get(), bytes);
      break;
    }
  }
  return "";
}

// write_outputs, then the bytes written count as initialised for the device's initcheck.
std::string finish(Live& l) {
  std::string error = write_outputs(l);
  const Op& o = *l.op;
  const size_t bytes = o.count * type_size(o.type);
  const bool receives = o.kind != Op::Send && (o.kind != Op::Reduce || o.peer == o.comm->rank);
  if (error.empty() && receives && bytes)
    emu::note_written(o.recv, o.kind == Op::AllGather ? static_cast<size_t>(o.comm->nranks) * bytes : bytes);
  return error;
}

// Abandons `l`'s MPI operation (its communicator failed or was aborted).
void abandon(Live& l) {
  if (!l.active) return;
  orphan(std::move(l.reqs), l.buf, l.op->kind == Op::Recv);
  l.active = false;
}

// Tickets: a batch counts as queued on its communicators until it ran or was dropped.
struct Batch {
  std::vector<Op> ops;
  std::vector<std::shared_ptr<ncclComm>> comms;
  bool released = false;
  void release() {
    if (released) return;
    released = true;
    for (const auto& c : comms) c->queued -= 1;
  }
  ~Batch() { release(); }
};

void run(Batch& batch) {
  std::vector<Live> live(batch.ops.size());
  {
    std::lock_guard lock(state_mutex());
    for (size_t i = 0; i < live.size(); ++i) {
      Live& l = live[i];
      l.op = &batch.ops[i];
      ncclComm& c = *l.op->comm;
      if (c.aborted || c.error != ncclSuccess || c.mpi == MPI_COMM_NULL || !mpi_alive()) continue;
      try {
        if (const int rc = post(l); rc != MPI_SUCCESS)
          set_comm_error(c, mpi_result(rc), strf("%s: %s", l.op->name, mpi_error_text(rc).c_str()));
      } catch (const std::bad_alloc&) {
        set_comm_error(c, ncclSystemError, strf("%s: out of host memory for the staging buffers", l.op->name));
      }
    }
  }
  const double limit = peer_timeout_seconds();
  const auto start = Clock::now();
  Pause pause;
  for (;;) {
    bool waiting = false;
    {
      std::lock_guard lock(state_mutex());
      progress(false);
      for (Live& l : live) {
        if (!l.active) continue;
        ncclComm& c = *l.op->comm;
        if (c.aborted || c.error != ncclSuccess || !mpi_alive()) {
          abandon(l);
          continue;
        }
        int flag = 0;
        const int rc = MPI_Testall(static_cast<int>(l.reqs.size()), l.reqs.data(), &flag, &l.status);
        if (rc != MPI_SUCCESS) {
          const int err = rc == MPI_ERR_IN_STATUS ? l.status.MPI_ERROR : rc;
          set_comm_error(c, mpi_result(err), strf("%s: %s", l.op->name, mpi_error_text(err).c_str()));
          abandon(l);
        } else if (flag) {
          l.active = false;
          l.done = true;
        } else {
          waiting = true;
        }
      }
      if (waiting && limit > 0 && std::chrono::duration<double>(Clock::now() - start).count() > limit) {
        for (Live& l : live) {
          if (!l.active) continue;
          set_comm_error(*l.op->comm, ncclRemoteError,
                         strf("%s: the peers did not take part within %g s (MIXT_EMULATED_NCCL_TIMEOUT; a rank that "
                              "died, hangs, or issued its operations in another order)",
                              l.op->name, limit));
          abandon(l);
        }
        waiting = false;
      }
    }
    if (!waiting) break;
    pause();
  }
  for (Live& l : live) {
    if (!l.done) continue;
    if (const std::string why = finish(l); !why.empty()) {
      std::lock_guard lock(state_mutex());
      set_comm_error(*l.op->comm, ncclInvalidUsage, why);
    }
  }
  std::lock_guard lock(state_mutex());
  batch.release();
}

}  // namespace

GroupState::GroupState() = default;
GroupState::~GroupState() = default;

GroupState& group_state() {
  thread_local GroupState g;
  return g;
}

ncclResult_t launch(std::vector<Op> ops) {
  if (ops.empty()) return ncclSuccess;
  // The streams of the batch, the first one leading: the work runs there after
  // the others' queued work, and the others continue after it (as NCCL joins a
  // group's streams).
  struct Stream {
    cudaStream_t s;
    int device;
  };
  std::vector<Stream> streams;
  for (const Op& o : ops) {
    const bool seen = std::any_of(streams.begin(), streams.end(), [&](const Stream& x) {
      return x.s == o.stream && x.device == o.comm->device;
    });
    if (!seen) streams.push_back({o.stream, o.comm->device});
  }
  const char* what = ops.size() == 1 ? ops.front().name : "ncclGroupEnd";
  auto batch = std::make_shared<Batch>();
  batch->ops = std::move(ops);
  {
    std::lock_guard lock(state_mutex());
    for (const Op& o : batch->ops) {
      ncclComm& c = *o.comm;
      if (std::find(c.streams.begin(), c.streams.end(), o.stream) == c.streams.end()) c.streams.push_back(o.stream);
      if (std::find(batch->comms.begin(), batch->comms.end(), o.comm) != batch->comms.end()) continue;
      batch->comms.push_back(o.comm);
      c.queued += 1;
    }
  }
  auto cuda_fail = [&](cudaError_t e, const char* step) {
    return fail(ncclUnhandledCudaError, strf("%s: %s failed: %s", what, step, cudaGetErrorString(e)));
  };
  // Joins stream `from` into stream `to` (an event recorded on one, waited on by the other).
  auto join = [&](const Stream& from, const Stream& to) -> ncclResult_t {
    cudaEvent_t e = nullptr;
    {
      DeviceScope scope(from.device);
      if (const cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming); err != cudaSuccess)
        return cuda_fail(err, "cudaEventCreateWithFlags");
      if (const cudaError_t err = cudaEventRecord(e, from.s); err != cudaSuccess) {
        cudaEventDestroy(e);
        return cuda_fail(err, "cudaEventRecord");
      }
    }
    DeviceScope scope(to.device);
    const cudaError_t err = cudaStreamWaitEvent(to.s, e, 0);
    cudaEventDestroy(e);
    return err == cudaSuccess ? ncclSuccess : cuda_fail(err, "cudaStreamWaitEvent");
  };
  for (size_t i = 1; i < streams.size(); ++i)
    if (const ncclResult_t r = join(streams[i], streams[0]); r != ncclSuccess) return r;
  {
    DeviceScope scope(streams[0].device);
    const cudaError_t e = emu::enqueue(streams[0].s, what, [batch] { run(*batch); });
    if (e != cudaSuccess) return cuda_fail(e, "queueing the work on its stream");
  }
  for (size_t i = 1; i < streams.size(); ++i)
    if (const ncclResult_t r = join(streams[0], streams[i]); r != ncclSuccess) return r;
  return ncclSuccess;
}

}  // namespace mixt::nccl_emulated

using mixt::nccl_emulated::Op;
using mixt::nccl_emulated::submit;

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit({.kind = Op::AllReduce, .name = "ncclAllReduce", .send = sendbuff, .recv = recvbuff, .count = count,
                 .type = datatype, .op = op, .stream = stream},
                comm);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  return submit({.kind = Op::Reduce, .name = "ncclReduce", .send = sendbuff, .recv = recvbuff, .count = count,
                 .type = datatype, .op = op, .peer = root, .stream = stream},
                comm);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit({.kind = Op::Broadcast, .name = "ncclBroadcast", .send = sendbuff, .recv = recvbuff, .count = count,
                 .type = datatype, .peer = root, .stream = stream},
                comm);
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  return submit({.kind = Op::Broadcast, .name = "ncclBcast", .send = buff, .recv = buff, .count = count,
                 .type = datatype, .peer = root, .stream = stream},
                comm);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit({.kind = Op::AllGather, .name = "ncclAllGather", .send = sendbuff, .recv = recvbuff,
                 .count = sendcount, .type = datatype, .stream = stream},
                comm);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return submit({.kind = Op::ReduceScatter, .name = "ncclReduceScatter", .send = sendbuff, .recv = recvbuff,
                 .count = recvcount, .type = datatype, .op = op, .stream = stream},
                comm);
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return submit({.kind = Op::Send, .name = "ncclSend", .send = sendbuff, .count = count, .type = datatype,
                 .peer = peer, .stream = stream},
                comm);
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return submit({.kind = Op::Recv, .name = "ncclRecv", .recv = recvbuff, .count = count, .type = datatype,
                 .peer = peer, .stream = stream},
                comm);
}
