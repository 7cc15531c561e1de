// Device kernels of cumsum and cumprod, with the CPU's accumulators (double for floating
// inputs, wrapping int64 for integer and bool ones), each output rounded once. Lines are
// scanned under a ScanPlan (Note [Chunked scans], kernels/common/scan_plan.h): one thread
// per line in order (the CPU's bits), or a few long lines cut into chunks scanned by many
// threads in three passes (chunk totals, their carries in chunk order, the chunks rescanned
// from their carries); the passes are the plan header's functions.
#include <mixt/kernels/common/reducers.h>
#include <mixt/kernels/common/scan_plan.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/kernels/cuda/reduce.cuh>
#include <mixt/kernels/cuda/reduce_launch.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

// cumsum's (add) or cumprod's (mul) fold of two accumulators: the CPU's arithmetic.
struct ScanOp {
  bool prod = false;
  template <class Acc>
  MIXT_HD Acc operator()(Acc a, Acc b) const {
    return prod ? reducers::mul(a, b) : reducers::add(a, b);
  }
};

template <class Acc>
__device__ __forceinline__ Acc scan_identity(const ScanArgs& a) {
  return a.prod ? Acc(1) : Acc(0);
}

// Thread t of the per-(line, chunk) passes: its line, its chunk and the line's byte
// offsets in out (off[0]) and in (off[1]).
__device__ __forceinline__ void locate(const ScanArgs& a, int64_t t, int64_t* line, int64_t* c, int64_t (&off)[2]) {
  *line = div_nonneg(t, a.plan.chunks);
  *c = t - *line * a.plan.chunks;
  element_offsets(a.lines, *line, off);
}

// Pass 1: the totals of every chunk but each line's last, into the workspace.
template <class T, class Acc>
__global__ void scan_totals_kernel(ScanArgs a) {
  const char* in = static_cast<const char*>(a.in);
  Acc* slots = static_cast<Acc*>(a.workspace);
  for (int64_t t = grid_start(); t < scan_chunk_threads(a.plan); t += grid_step()) {
    int64_t line, c, off[2];
    locate(a, t, &line, &c, off);
    if (c + 1 == a.plan.chunks) continue;
    const char* base = in + off[1];
    slots[t] = scan_chunk_total(a.plan, c, scan_identity<Acc>(a), ScanOp{a.prod},
                                [&](int64_t k) { return static_cast<Acc>(load_opmath<T>(base + k * a.in_stride)); });
  }
}

// Pass 2: each line's totals folded in chunk order into carries.
template <class Acc>
__global__ void scan_carries_kernel(ScanArgs a) {
  Acc* slots = static_cast<Acc*>(a.workspace);
  for (int64_t line = grid_start(); line < a.plan.lines; line += grid_step())
    scan_fold_slots(a.plan, slots + line * a.plan.chunks, ScanOp{a.prod});
}

// Pass 3, or the whole scan when plan.chunks == 1: each chunk scanned from its carry.
template <class T, class Acc, class Out>
__global__ void scan_chunks_kernel(ScanArgs a) {
  const char* in = static_cast<const char*>(a.in);
  char* out = static_cast<char*>(a.out);
  const Acc* slots = static_cast<const Acc*>(a.workspace);
  for (int64_t t = grid_start(); t < scan_chunk_threads(a.plan); t += grid_step()) {
    int64_t line, c, off[2];
    locate(a, t, &line, &c, off);
    const char* src = in + off[1];
    char* dst = out + off[0];
    scan_chunk(
        a.plan, c, c == 0 ? scan_identity<Acc>(a) : slots[t - 1], ScanOp{a.prod},
        [&](int64_t k) { return static_cast<Acc>(load_opmath<T>(src + k * a.in_stride)); },
        [&](int64_t k, Acc acc) { *reinterpret_cast<Out*>(dst + k * a.out_stride) = store_as<Out>(acc); });
  }
}

template <class T, class Acc, class Out>
cudaError_t launch_typed(const ScanArgs& a, cudaStream_t s) {
  static_assert(sizeof(Acc) == kScanAccBytes, "the workspace holds kScanAccBytes per slot");
  const unsigned blocks = grid_for(scan_chunk_threads(a.plan));
  if (a.plan.chunks > 1) {
    if (a.workspace == nullptr) return cudaErrorInvalidValue;
    launch_kernel(scan_totals_kernel<T, Acc>, {blocks, kBlockThreads, 0, s}, a);
    launch_kernel(scan_carries_kernel<Acc>, {grid_for(a.plan.lines), kBlockThreads, 0, s}, a);
  }
  launch_kernel(scan_chunks_kernel<T, Acc, Out>, {blocks, kBlockThreads, 0, s}, a);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_scan(const ScanArgs& args, cudaStream_t stream) {
  if (args.lines.numel == 0 || args.plan.n == 0) return cudaSuccess;
  return visit_dtype(args.in_dtype, "cumsum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<opmath_t<T>>) {
      return launch_typed<T, double, T>(args, stream);
    } else {
      // Out is int64, or the input's own type when that was requested.
      if (args.out_dtype == dtype_of<T>) return launch_typed<T, int64_t, T>(args, stream);
      return launch_typed<T, int64_t, int64_t>(args, stream);
    }
  });
}

}  // namespace mixt::cuda
