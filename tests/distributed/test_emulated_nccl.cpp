// The NCCL stand-in of the emulated CUDA device (distributed/nccl/emulated) under
// `mpirun -np N` (N = 1, 2, 4; also run alone): every collective and data type
// against a result computed here on the host, ncclAvg, grouped send/recv (a ring,
// two messages to one peer in order, a nested group over two streams with a send
// to itself), split communicators (NCCL_SPLIT_NOCOLOR included), blocking and
// non-blocking communicators, the argument checks (a host buffer is refused with
// ncclInvalidArgument and ncclGetLastError names it), asynchronous errors (a
// count that differs between send and receive, a peer that never comes within
// MIXT_EMULATED_NCCL_TIMEOUT), ncclCommAbort of a communicator whose operation is
// blocked, and finalize/destroy. Each rank uses CUDA device rank % device count
// of the emulated runtime; MIXT_EMULATED_ASYNC=deferred runs it in deferred mode.
// Own main, no Catch2: rank 0 prints "test_emulated_nccl: N checks, M failures"
// (all ranks' sums); exit 1 on failure.
//
// Build (emulated builds): this file, the emulated CUDA runtime
// (kernels/cuda/emulated/runtime_*.cpp, launch_limits.cpp), the NCCL stand-in
// (distributed/nccl/emulated/*.cpp) and Open MPI's C library.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <mixt/runtime/float_types.h>

namespace {

int g_rank = 0, g_size = 1, g_device = 0, g_devices = 1;
int g_checks = 0, g_failures = 0;

void expect(bool ok, const std::string& what) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d: FAIL %s\n", g_rank, what.c_str());
}

std::string result_name(ncclResult_t r) {
  return std::to_string(static_cast<int>(r)) + " (" + ncclGetErrorString(r) + ")";
}

// `r` is `want`; the message says which call it was.
bool expect_result(ncclResult_t r, ncclResult_t want, const std::string& what) {
  expect(r == want, what + ": returned " + result_name(r) + ", expected " + result_name(want) +
                        (r != ncclSuccess ? std::string(" [") + ncclGetLastError(nullptr) + "]" : ""));
  return r == want;
}
#define NCCL_OK(call) expect_result((call), ncclSuccess, #call)

bool last_error_has(const char* needle) { return std::strstr(ncclGetLastError(nullptr), needle) != nullptr; }

void cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "rank %d: %s failed: %s\n", g_rank, what, cudaGetErrorString(e));
  MPI_Abort(MPI_COMM_WORLD, 2);
}

// Device memory of the current device.
struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) { cuda_ok(cudaMalloc(&p, std::max<size_t>(n, 1)), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  char* at(size_t offset) const { return static_cast<char*>(p) + offset; }
  void upload(const std::vector<uint8_t>& h) {
    cuda_ok(cudaMemcpy(p, h.data(), h.size(), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  std::vector<uint8_t> download() const {
    std::vector<uint8_t> h(bytes);
    cuda_ok(cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return h;
  }
};

// ---- data types: values as doubles, stored in the type's bytes ----

enum class Kind { Int, UInt, Float };
struct Type {
  ncclDataType_t t;
  const char* name;
  size_t size;
  Kind kind;
};
const std::vector<Type> kTypes = {
    {ncclInt8, "int8", 1, Kind::Int},          {ncclUint8, "uint8", 1, Kind::UInt},
    {ncclInt32, "int32", 4, Kind::Int},        {ncclUint32, "uint32", 4, Kind::UInt},
    {ncclInt64, "int64", 8, Kind::Int},        {ncclUint64, "uint64", 8, Kind::UInt},
    {ncclFloat16, "float16", 2, Kind::Float},  {ncclFloat32, "float32", 4, Kind::Float},
    {ncclFloat64, "float64", 8, Kind::Float},  {ncclBfloat16, "bfloat16", 2, Kind::Float},
    {ncclFloat8e4m3, "float8e4m3", 1, Kind::Float}, {ncclFloat8e5m2, "float8e5m2", 1, Kind::Float},
};

template <class T>
void put(void* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
template <class T>
T get(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void store(const Type& ty, void* p, double v) {
  switch (ty.t) {
    case ncclInt8: return put(p, static_cast<int8_t>(static_cast<int64_t>(v)));
    case ncclUint8: return put(p, static_cast<uint8_t>(static_cast<int64_t>(v)));
    case ncclInt32: return put(p, static_cast<int32_t>(static_cast<int64_t>(v)));
    case ncclUint32: return put(p, static_cast<uint32_t>(static_cast<int64_t>(v)));
    case ncclInt64: return put(p, static_cast<int64_t>(v));
    case ncclUint64: return put(p, static_cast<uint64_t>(static_cast<int64_t>(v)));
    case ncclFloat16: return put(p, mixt::Half(v));
    case ncclFloat32: return put(p, static_cast<float>(v));
    case ncclFloat64: return put(p, v);
    case ncclBfloat16: return put(p, mixt::BFloat16(v));
    case ncclFloat8e4m3: return put(p, mixt::Float8_e4m3fn(v));
    case ncclFloat8e5m2: return put(p, mixt::Float8_e5m2(v));
    default: return;
  }
}

double load(const Type& ty, const void* p) {
  switch (ty.t) {
    case ncclInt8: return get<int8_t>(p);
    case ncclUint8: return get<uint8_t>(p);
    case ncclInt32: return get<int32_t>(p);
    case ncclUint32: return get<uint32_t>(p);
    case ncclInt64: return static_cast<double>(get<int64_t>(p));
    case ncclUint64: return static_cast<double>(get<uint64_t>(p));
    case ncclFloat16: return static_cast<float>(get<mixt::Half>(p));
    case ncclFloat32: return get<float>(p);
    case ncclFloat64: return get<double>(p);
    case ncclBfloat16: return static_cast<float>(get<mixt::BFloat16>(p));
    case ncclFloat8e4m3: return static_cast<float>(get<mixt::Float8_e4m3fn>(p));
    case ncclFloat8e5m2: return static_cast<float>(get<mixt::Float8_e5m2>(p));
    default: return 0;
  }
}

double round_to(const Type& ty, double v) {
  uint8_t b[8];
  store(ty, b, v);
  return load(ty, b);
}

// Rank r's element i: small integers whose sums, products and quarters every type
// holds exactly at up to 4 ranks (float8 e5m2 has 3 significant bits).
double value(const Type& ty, int r, size_t i) {
  const int v = static_cast<int>((i * 7 + static_cast<size_t>(r) * 3) % (ty.kind == Kind::UInt ? 4 : 5));
  return ty.kind == Kind::UInt ? v : v - 2;
}

std::vector<uint8_t> fill(const Type& ty, size_t count, const std::function<double(size_t)>& f) {
  std::vector<uint8_t> h(count * ty.size);
  for (size_t i = 0; i < count; ++i) store(ty, h.data() + i * ty.size, f(i));
  return h;
}

// The documented reduction (Note [Emulated NCCL reductions]): rank order, each step
// rounded to the type; avg: floats sum x * (1/n rounded), integers sum then divide.
double reference(const Type& ty, ncclRedOp_t op, const std::vector<double>& xs) {
  const int n = static_cast<int>(xs.size());
  auto R = [&](double v) { return round_to(ty, v); };
  if (op == ncclAvg) {
    if (ty.kind != Kind::Float) {
      int64_t s = 0;
      for (double x : xs) s += static_cast<int64_t>(x);
      return R(static_cast<double>(s / n));
    }
    const double scale = R(1.0 / n);
    double acc = R(xs[0] * scale);
    for (int r = 1; r < n; ++r) acc = R(acc + R(xs[r] * scale));
    return acc;
  }
  double acc = xs[0];
  for (int r = 1; r < n; ++r) {
    const double x = xs[r];
    acc = R(op == ncclSum ? acc + x : op == ncclProd ? acc * x : op == ncclMax ? std::max(acc, x) : std::min(acc, x));
  }
  return acc;
}

// Compares `got` with `want` element by element (bits); reports the first difference.
void expect_bytes(const Type& ty, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                  const std::string& what) {
  if (got.size() != want.size()) return expect(false, what + ": sizes differ");
  for (size_t i = 0; i * ty.size < got.size(); ++i) {
    if (std::memcmp(got.data() + i * ty.size, want.data() + i * ty.size, ty.size) != 0) {
      return expect(false, what + ": element " + std::to_string(i) + " is " +
                               std::to_string(load(ty, got.data() + i * ty.size)) + ", expected " +
                               std::to_string(load(ty, want.data() + i * ty.size)));
    }
  }
  expect(true, what);
}

const char* op_name(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "sum";
    case ncclProd: return "prod";
    case ncclMax: return "max";
    case ncclMin: return "min";
    case ncclAvg: return "avg";
    default: return "?";
  }
}

// Waits until a non-blocking communicator's last call settled; its state.
ncclResult_t settle(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
    if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return state;
}

ncclUniqueId shared_id() {
  ncclUniqueId id{};
  if (g_rank == 0) NCCL_OK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  return id;
}

// A barrier that keeps polling `live`: the process that made a unique id answers
// joins only from inside NCCL calls (the stand-in has no threads), so a rank done
// with a rendezvous keeps serving it until every rank had its answer.
void serving_barrier(ncclComm_t live) {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  for (int done = 0; !done;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    ncclResult_t state;
    ncclCommGetAsyncError(live, &state);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

const std::vector<size_t> kCounts = {0, 1, 7, 1000};

// ---- the collectives ----

void test_all_reduce(ncclComm_t comm, cudaStream_t stream, bool in_place, const char* label) {
  for (const Type& ty : kTypes) {
    for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
      for (size_t count : kCounts) {
        const std::string what = std::string(label) + " ncclAllReduce " + ty.name + " " + op_name(op) +
                                 " count " + std::to_string(count) + (in_place ? " in place" : "");
        DeviceBuffer send(count * ty.size), recv(count * ty.size);
        send.upload(fill(ty, count, [&](size_t i) { return value(ty, g_rank, i); }));
        void* out = in_place ? send.p : recv.p;
        if (!NCCL_OK(ncclAllReduce(send.p, out, count, ty.t, op, comm, stream))) continue;
        cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        const auto want = fill(ty, count, [&](size_t i) {
          std::vector<double> xs;
          for (int r = 0; r < g_size; ++r) xs.push_back(value(ty, r, i));
          return reference(ty, op, xs);
        });
        expect_bytes(ty, (in_place ? send : recv).download(), want, what);
      }
    }
  }
}

void test_reduce(ncclComm_t comm) {
  for (const Type& ty : {kTypes[2], kTypes[7], kTypes[9]}) {
    for (int root = 0; root < g_size; ++root) {
      const size_t count = 33;
      DeviceBuffer send(count * ty.size), recv(count * ty.size);
      send.upload(fill(ty, count, [&](size_t i) { return value(ty, g_rank, i); }));
      const bool mine = root == g_rank;
      if (!NCCL_OK(ncclReduce(send.p, mine ? recv.p : nullptr, count, ty.t, ncclSum, root, comm, nullptr))) continue;
      cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
      if (!mine) continue;
      const auto want = fill(ty, count, [&](size_t i) {
        std::vector<double> xs;
        for (int r = 0; r < g_size; ++r) xs.push_back(value(ty, r, i));
        return reference(ty, ncclSum, xs);
      });
      expect_bytes(ty, recv.download(), want,
                   std::string("ncclReduce ") + ty.name + " to root " + std::to_string(root));
    }
  }
}

void test_broadcast(ncclComm_t comm) {
  for (const Type& ty : kTypes) {
    for (int root = 0; root < g_size; ++root) {
      for (bool in_place : {false, true}) {
        const size_t count = 100;
        DeviceBuffer send(count * ty.size), recv(count * ty.size);
        send.upload(fill(ty, count, [&](size_t i) { return value(ty, g_rank, i); }));
        recv.upload(fill(ty, count, [](size_t) { return 1; }));
        void* out = in_place ? send.p : recv.p;
        const std::string what = std::string("ncclBroadcast ") + ty.name + " from " + std::to_string(root) +
                                 (in_place ? " in place" : "");
        if (!NCCL_OK(ncclBroadcast(send.p, out, count, ty.t, root, comm, nullptr))) continue;
        cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
        expect_bytes(ty, (in_place ? send : recv).download(),
                     fill(ty, count, [&](size_t i) { return value(ty, root, i); }), what);
      }
    }
  }
  // The deprecated in-place form.
  const Type& ty = kTypes[7];
  DeviceBuffer buf(8 * ty.size);
  buf.upload(fill(ty, 8, [&](size_t i) { return value(ty, g_rank, i); }));
  if (NCCL_OK(ncclBcast(buf.p, 8, ty.t, g_size - 1, comm, nullptr))) {
    cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    expect_bytes(ty, buf.download(), fill(ty, 8, [&](size_t i) { return value(ty, g_size - 1, i); }), "ncclBcast");
  }
}

void test_all_gather(ncclComm_t comm) {
  for (const Type& ty : kTypes) {
    for (bool in_place : {false, true}) {
      const size_t count = 9;
      const size_t n = static_cast<size_t>(g_size);
      DeviceBuffer send(count * ty.size), recv(n * count * ty.size);
      const auto mine = fill(ty, count, [&](size_t i) { return value(ty, g_rank, i); });
      const void* in = send.p;
      if (in_place) {
        std::vector<uint8_t> h(n * count * ty.size, 0);
        std::memcpy(h.data() + static_cast<size_t>(g_rank) * count * ty.size, mine.data(), mine.size());
        recv.upload(h);
        in = recv.at(static_cast<size_t>(g_rank) * count * ty.size);
      } else {
        send.upload(mine);
      }
      if (!NCCL_OK(ncclAllGather(in, recv.p, count, ty.t, comm, nullptr))) continue;
      cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
      expect_bytes(ty, recv.download(),
                   fill(ty, n * count, [&](size_t i) { return value(ty, static_cast<int>(i / count), i % count); }),
                   std::string("ncclAllGather ") + ty.name + (in_place ? " in place" : ""));
    }
  }
}

void test_reduce_scatter(ncclComm_t comm) {
  for (const Type& ty : kTypes) {
    for (ncclRedOp_t op : {ncclSum, ncclAvg, ncclMax}) {
      for (bool in_place : {false, true}) {
        const size_t count = 5, n = static_cast<size_t>(g_size);
        DeviceBuffer send(n * count * ty.size), recv(count * ty.size);
        send.upload(fill(ty, n * count, [&](size_t i) { return value(ty, g_rank, i); }));
        void* out = in_place ? send.at(static_cast<size_t>(g_rank) * count * ty.size) : recv.p;
        const std::string what = std::string("ncclReduceScatter ") + ty.name + " " + op_name(op) +
                                 (in_place ? " in place" : "");
        if (!NCCL_OK(ncclReduceScatter(send.p, out, count, ty.t, op, comm, nullptr))) continue;
        cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
        std::vector<uint8_t> got;
        if (in_place) {
          const auto all = send.download();
          const size_t at = static_cast<size_t>(g_rank) * count * ty.size;
          got.assign(all.begin() + static_cast<long>(at), all.begin() + static_cast<long>(at + count * ty.size));
        } else {
          got = recv.download();
        }
        expect_bytes(ty, got, fill(ty, count, [&](size_t i) {
                       std::vector<double> xs;
                       for (int r = 0; r < g_size; ++r)
                         xs.push_back(value(ty, r, static_cast<size_t>(g_rank) * count + i));
                       return reference(ty, op, xs);
                     }),
                     what);
      }
    }
  }
}

// A ring in one group (each rank sends to the next, receives from the previous:
// without the group every rank's send would wait for a receive never posted),
// two messages to one peer (matched in order) and an all-reduce in the same group.
void test_group_ring(ncclComm_t comm) {
  const Type& ty = kTypes[7];
  const size_t count = 64;
  const int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
  DeviceBuffer a(count * 4), b(count * 4), ra(count * 4), rb(count * 4), ar(count * 4);
  a.upload(fill(ty, count, [&](size_t i) { return value(ty, g_rank, i); }));
  b.upload(fill(ty, count, [&](size_t i) { return 10 + value(ty, g_rank, i); }));
  ar.upload(fill(ty, count, [](size_t) { return 1; }));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(a.p, count, ncclFloat32, next, comm, nullptr));
  NCCL_OK(ncclSend(b.p, count, ncclFloat32, next, comm, nullptr));
  NCCL_OK(ncclRecv(ra.p, count, ncclFloat32, prev, comm, nullptr));
  NCCL_OK(ncclRecv(rb.p, count, ncclFloat32, prev, comm, nullptr));
  NCCL_OK(ncclAllReduce(ar.p, ar.p, count, ncclFloat32, ncclSum, comm, nullptr));
  if (!NCCL_OK(ncclGroupEnd())) return;
  cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  expect_bytes(ty, ra.download(), fill(ty, count, [&](size_t i) { return value(ty, prev, i); }), "group ring: first");
  expect_bytes(ty, rb.download(), fill(ty, count, [&](size_t i) { return 10 + value(ty, prev, i); }),
               "group ring: second, in order");
  expect_bytes(ty, ar.download(), fill(ty, count, [](size_t) { return g_size; }), "group ring: the all-reduce");
}

// A nested group over two streams (the work waits for both streams' queued work;
// both streams continue after it) with a send to itself.
void test_group_streams(ncclComm_t comm, cudaStream_t other) {
  const Type& ty = kTypes[3];  // uint32
  const size_t count = 16;
  DeviceBuffer x(count * 4), y(count * 4), to_self(count * 4), from_self(count * 4);
  x.upload(fill(ty, count, [&](size_t i) { return value(ty, g_rank, i); }));
  y.upload(fill(ty, count, [&](size_t i) { return 1 + value(ty, g_rank, i); }));
  to_self.upload(fill(ty, count, [&](size_t i) { return 100 + i; }));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(x.p, x.p, count, ncclUint32, ncclSum, comm, nullptr));
  NCCL_OK(ncclGroupEnd());  // inner: nothing runs yet
  NCCL_OK(ncclAllReduce(y.p, y.p, count, ncclUint32, ncclMax, comm, other));
  NCCL_OK(ncclRecv(from_self.p, count, ncclUint32, g_rank, comm, other));
  NCCL_OK(ncclSend(to_self.p, count, ncclUint32, g_rank, comm, nullptr));
  if (!NCCL_OK(ncclGroupEnd())) return;
  cuda_ok(cudaStreamSynchronize(other), "cudaStreamSynchronize");
  cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  auto over_ranks = [&](ncclRedOp_t op, double add) {
    return fill(ty, count, [&](size_t i) {
      std::vector<double> xs;
      for (int r = 0; r < g_size; ++r) xs.push_back(add + value(ty, r, i));
      return reference(ty, op, xs);
    });
  };
  expect_bytes(ty, x.download(), over_ranks(ncclSum, 0), "two-stream group: the legacy stream's all-reduce");
  expect_bytes(ty, y.download(), over_ranks(ncclMax, 1), "two-stream group: the other stream's all-reduce");
  expect_bytes(ty, from_self.download(), fill(ty, count, [](size_t i) { return 100 + i; }),
               "two-stream group: a send to itself");
}

// ---- communicators ----

void test_split(ncclComm_t world) {
  // An all-reduce still queued on the parent (deferred mode) runs before the split,
  // on every rank: the ranks' MPI collectives stay in the same order.
  DeviceBuffer before(4);
  before.upload(fill(kTypes[2], 1, [](size_t) { return 3; }));
  NCCL_OK(ncclAllReduce(before.p, before.p, 1, ncclInt32, ncclSum, world, nullptr));
  if (g_rank == 0) cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");  // only rank 0 ran it
  // Two colors, keys reversing the order.
  ncclComm_t half = nullptr;
  const int color = g_rank % 2;
  const bool split = NCCL_OK(ncclCommSplit(world, color, g_size - g_rank, &half, nullptr));
  cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  expect_bytes(kTypes[2], before.download(), fill(kTypes[2], 1, [](size_t) { return 3 * g_size; }),
               "an all-reduce queued before a split");
  if (split && half != nullptr) {
    std::vector<int> members;
    for (int r = 0; r < g_size; ++r)
      if (r % 2 == color) members.push_back(r);
    int count = -1, rank = -1, device = -1;
    NCCL_OK(ncclCommCount(half, &count));
    NCCL_OK(ncclCommUserRank(half, &rank));
    NCCL_OK(ncclCommCuDevice(half, &device));
    const int pos = static_cast<int>(std::find(members.begin(), members.end(), g_rank) - members.begin());
    expect(count == static_cast<int>(members.size()), "split: size " + std::to_string(count));
    expect(rank == static_cast<int>(members.size()) - 1 - pos,
           "split: keys order the ranks (got " + std::to_string(rank) + ")");
    expect(device == g_device, "split: the parent's device");
    DeviceBuffer x(4);
    x.upload(fill(kTypes[2], 1, [](size_t) { return g_rank; }));
    if (NCCL_OK(ncclAllReduce(x.p, x.p, 1, ncclInt32, ncclSum, half, nullptr))) {
      cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
      int sum = 0;
      for (int m : members) sum += m;
      expect_bytes(kTypes[2], x.download(), fill(kTypes[2], 1, [&](size_t) { return sum; }), "split: all-reduce");
    }
    NCCL_OK(ncclCommDestroy(half));
  }
  // Rank 0 opts out; non-blocking config.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t rest = reinterpret_cast<ncclComm_t>(0x1);
  const ncclResult_t r = ncclCommSplit(world, g_rank == 0 ? NCCL_SPLIT_NOCOLOR : 7, 0, &rest, &config);
  expect(r == ncclSuccess || r == ncclInProgress, "non-blocking split returns ncclSuccess or ncclInProgress");
  expect_result(settle(world), ncclSuccess, "the parent settles after the split");
  if (g_rank == 0) {
    expect(rest == nullptr, "NCCL_SPLIT_NOCOLOR gives a NULL communicator");
    return;
  }
  if (rest == nullptr) return expect(false, "split: no communicator");
  expect_result(settle(rest), ncclSuccess, "non-blocking split settles");
  int count = -1;
  NCCL_OK(ncclCommCount(rest, &count));
  expect(count == g_size - 1, "split without rank 0: size");
  DeviceBuffer x(8);
  x.upload(fill(kTypes[4], 1, [](size_t) { return 1; }));
  if (NCCL_OK(ncclAllReduce(x.p, x.p, 1, ncclInt64, ncclSum, rest, nullptr))) {
    expect_result(settle(rest), ncclSuccess, "split without rank 0: all-reduce settles");
    cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    expect_bytes(kTypes[4], x.download(), fill(kTypes[4], 1, [](size_t) { return g_size - 1; }),
                 "split without rank 0: all-reduce");
  }
  const ncclResult_t f = ncclCommFinalize(rest);
  expect(f == ncclSuccess || f == ncclInProgress, "non-blocking finalize returns ncclSuccess or ncclInProgress");
  expect_result(settle(rest), ncclSuccess, "non-blocking finalize settles");
  NCCL_OK(ncclCommDestroy(rest));
}

// The checks at the call: nothing is queued and ncclGetLastError says why.
void test_refusals(ncclComm_t comm) {
  DeviceBuffer dev(64);
  std::vector<char> host(64);
  expect_result(ncclAllReduce(host.data(), dev.p, 16, ncclFloat32, ncclSum, comm, nullptr), ncclInvalidArgument,
                "host sendbuff");
  expect(last_error_has("sendbuff") && last_error_has("not device memory"),
         std::string("the error names the send buffer: ") + ncclGetLastError(nullptr));
  expect_result(ncclAllReduce(dev.p, host.data(), 16, ncclFloat32, ncclSum, comm, nullptr), ncclInvalidArgument,
                "host recvbuff");
  expect(last_error_has("recvbuff"), std::string("the error names the receive buffer: ") + ncclGetLastError(nullptr));
  expect_result(ncclAllReduce(dev.p, dev.p, 17, ncclFloat32, ncclSum, comm, nullptr), ncclInvalidArgument,
                "a count past the end of the allocation");
  expect(last_error_has("past the end"), std::string("the error says past the end: ") + ncclGetLastError(nullptr));
  expect_result(ncclAllReduce(dev.p, dev.p, 4, ncclNumTypes /* not a datatype; a value outside the enum's range would be undefined behaviour */, ncclSum, comm, nullptr),
                ncclInvalidArgument, "datatype ncclNumTypes");
  expect_result(ncclAllReduce(dev.p, dev.p, 4, ncclFloat32, static_cast<ncclRedOp_t>(42), comm, nullptr),
                ncclInvalidArgument, "reduction 42");
  expect_result(ncclBroadcast(dev.p, dev.p, 4, ncclFloat32, g_size, comm, nullptr), ncclInvalidArgument, "root = size");
  expect_result(ncclSend(dev.p, 4, ncclFloat32, -1, comm, nullptr), ncclInvalidArgument, "peer -1");
  expect_result(ncclAllReduce(dev.p, dev.p, 4, ncclFloat32, ncclSum, nullptr, nullptr), ncclInvalidArgument,
                "NULL comm");
  expect_result(ncclAllGather(dev.p, dev.p, 64 / 4, ncclFloat32, comm, nullptr),
                g_size == 1 ? ncclSuccess : ncclInvalidArgument, "all-gather output smaller than size x count");
  cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  if (g_devices > 1) {  // memory of another device than the communicator's
    cuda_ok(cudaSetDevice((g_device + 1) % g_devices), "cudaSetDevice");
    {
      DeviceBuffer other(64);
      cuda_ok(cudaSetDevice(g_device), "cudaSetDevice");
      expect_result(ncclAllReduce(other.p, dev.p, 4, ncclFloat32, ncclSum, comm, nullptr), ncclInvalidArgument,
                    "a buffer of another device");
      expect(last_error_has("memory of CUDA device"), std::string("names the device: ") + ncclGetLastError(nullptr));
    }
  }
  // A group with a refused call runs nothing and fails at ncclGroupEnd.
  NCCL_OK(ncclGroupStart());
  expect_result(ncclAllReduce(host.data(), dev.p, 4, ncclFloat32, ncclSum, comm, nullptr), ncclInvalidArgument,
                "a refused call in a group");
  NCCL_OK(ncclAllReduce(dev.p, dev.p, 4, ncclFloat32, ncclSum, comm, nullptr));
  expect_result(ncclGroupEnd(), ncclInvalidArgument, "ncclGroupEnd of a group with a refused call");
  expect_result(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  // The communicator stays usable.
  DeviceBuffer x(4);
  x.upload(fill(kTypes[7], 1, [](size_t) { return 2; }));
  if (NCCL_OK(ncclAllReduce(x.p, x.p, 1, ncclFloat32, ncclSum, comm, nullptr))) {
    cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    expect_bytes(kTypes[7], x.download(), fill(kTypes[7], 1, [](size_t) { return 2 * g_size; }),
                 "usable after the refusals");
  }
}

ncclComm_t split_copy(ncclComm_t world) {
  ncclComm_t c = nullptr;
  NCCL_OK(ncclCommSplit(world, 0, g_rank, &c, nullptr));
  return c;
}

// Errors found while the work runs become the communicator's asynchronous error.
void test_async_errors(ncclComm_t world) {
  if (g_size >= 2) {  // rank 1 receives more than rank 0 sends
    ncclComm_t c = split_copy(world);
    DeviceBuffer buf(64);
    if (g_rank == 0) NCCL_OK(ncclSend(buf.p, 4, ncclFloat32, 1, c, nullptr));
    if (g_rank == 1) NCCL_OK(ncclRecv(buf.p, 8, ncclFloat32, 0, c, nullptr));
    cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    ncclResult_t state = ncclSuccess;
    NCCL_OK(ncclCommGetAsyncError(c, &state));
    if (g_rank == 1) {
      expect_result(state, ncclInvalidUsage, "a receive of another count: the asynchronous error");
      expect(last_error_has("expected"), std::string("says what differs: ") + ncclGetLastError(nullptr));
      expect_result(ncclAllReduce(buf.p, buf.p, 1, ncclFloat32, ncclSum, c, nullptr), ncclInvalidUsage,
                    "a failed communicator refuses operations");
    } else if (g_rank == 0) {
      expect_result(state, ncclSuccess, "the sender completed");
    }
    NCCL_OK(ncclCommAbort(c));
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // A peer that never comes: MIXT_EMULATED_NCCL_TIMEOUT (rank 0 waits for rank 1's send, or its own at one rank).
  ncclComm_t c = split_copy(world);
  DeviceBuffer buf(16);
  if (g_rank == 0) {
    setenv("MIXT_EMULATED_NCCL_TIMEOUT", "0.5", 1);
    const auto start = std::chrono::steady_clock::now();
    NCCL_OK(ncclRecv(buf.p, 4, ncclFloat32, g_size > 1 ? 1 : 0, c, nullptr));
    cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    unsetenv("MIXT_EMULATED_NCCL_TIMEOUT");
    ncclResult_t state = ncclSuccess;
    NCCL_OK(ncclCommGetAsyncError(c, &state));
    expect_result(state, ncclRemoteError, "a peer that never sends: ncclRemoteError");
    expect(last_error_has("MIXT_EMULATED_NCCL_TIMEOUT"),
           std::string("names the timeout: ") + ncclGetLastError(nullptr));
    expect(s < 30, "gave up in " + std::to_string(s) + " s (timeout 0.5 s)");
  }
  NCCL_OK(ncclCommAbort(c));
  MPI_Barrier(MPI_COMM_WORLD);
}

// ncclCommAbort from another thread ends work blocked on the communicator.
void test_abort(ncclComm_t world) {
  ncclComm_t c = split_copy(world);
  if (g_rank == 0) {
    std::atomic<bool> finished{false};
    std::thread blocked([&] {
      cuda_ok(cudaSetDevice(g_device), "cudaSetDevice");
      DeviceBuffer buf(16);
      ncclRecv(buf.p, 4, ncclFloat32, g_size > 1 ? 1 : 0, c, nullptr);  // nobody sends
      cudaStreamSynchronize(nullptr);
      finished = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    expect(!finished, "the receive waits for its peer");
    const auto start = std::chrono::steady_clock::now();
    NCCL_OK(ncclCommAbort(c));
    blocked.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    expect(s < 10, "abort ended the blocked work in " + std::to_string(s) + " s");
  } else {
    NCCL_OK(ncclCommAbort(c));
  }
  int count = 0;
  expect_result(ncclCommCount(c, &count), ncclInvalidArgument, "an aborted handle is refused");
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace

int main() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  cuda_ok(cudaGetDeviceCount(&g_devices), "cudaGetDeviceCount");
  g_device = g_rank % g_devices;
  cuda_ok(cudaSetDevice(g_device), "cudaSetDevice");

  int version = 0;
  NCCL_OK(ncclGetVersion(&version));
  expect(version == NCCL_VERSION_CODE, "ncclGetVersion is the header's");
  for (int r = 0; r < ncclNumResults; ++r)
    expect(std::strlen(ncclGetErrorString(static_cast<ncclResult_t>(r))) > 0, "an error string for each result");
  expect_result(ncclGetUniqueId(nullptr), ncclInvalidArgument, "ncclGetUniqueId(NULL)");

  // A blocking communicator of every rank.
  ncclComm_t world = nullptr;
  const ncclUniqueId id = shared_id();
  if (!NCCL_OK(ncclCommInitRank(&world, g_size, id, g_rank))) MPI_Abort(MPI_COMM_WORLD, 2);
  int count = -1, rank = -1, device = -1;
  NCCL_OK(ncclCommCount(world, &count));
  NCCL_OK(ncclCommUserRank(world, &rank));
  NCCL_OK(ncclCommCuDevice(world, &device));
  expect(count == g_size && rank == g_rank && device == g_device, "count, rank and device of the communicator");
  ncclComm_t again = nullptr;
  expect_result(ncclCommInitRank(&again, g_size, id, g_rank), g_size == 1 ? ncclSuccess : ncclInvalidUsage,
                "a unique id serves one communicator");
  if (g_size == 1) {  // nobody to meet: the id is not consulted
    if (again != nullptr) NCCL_OK(ncclCommDestroy(again));
  } else {
    expect(again == nullptr, "a failed blocking init leaves a NULL handle");
  }
  serving_barrier(world);

  // A non-blocking one, on a stream of its own.
  ncclComm_t nb = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t r = ncclCommInitRankConfig(&nb, g_size, shared_id(), g_rank, &config);
  expect(r == ncclSuccess || r == ncclInProgress, "non-blocking init returns ncclSuccess or ncclInProgress");
  expect(nb != nullptr, "non-blocking init sets the handle at once");
  expect_result(settle(nb), ncclSuccess, "non-blocking init settles");
  cudaStream_t stream = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");

  test_all_reduce(world, nullptr, false, "blocking");
  test_all_reduce(nb, stream, true, "non-blocking");
  test_reduce(world);
  test_broadcast(world);
  test_all_gather(world);
  test_reduce_scatter(world);
  test_group_ring(world);
  test_group_streams(world, stream);
  test_split(world);
  test_refusals(world);
  test_async_errors(world);
  test_abort(world);

  NCCL_OK(ncclCommFinalize(world));
  NCCL_OK(ncclCommDestroy(world));
  const ncclResult_t f = ncclCommFinalize(nb);
  expect(f == ncclSuccess || f == ncclInProgress, "non-blocking finalize");
  expect_result(settle(nb), ncclSuccess, "non-blocking finalize settles");
  NCCL_OK(ncclCommDestroy(nb));
  cudaStreamDestroy(stream);

  int totals[2] = {g_checks, g_failures}, sums[2] = {0, 0};
  MPI_Allreduce(totals, sums, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("test_emulated_nccl: %d checks, %d failures (%d ranks)\n", sums[0], sums[1], g_size);
  MPI_Finalize();
  return sums[1] == 0 ? 0 : 1;
}
