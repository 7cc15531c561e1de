// The geometry of a strided reduction, shared by the CPU engine (kernels/cpu/reduce_loops.h)
// and the CUDA kernels (kernels/cuda/reduce.cuh), plus the CUDA launch plan and the
// order in which a group of device threads folds its partials. Plain C++ with MIXT_HD,
// so tests/cpu/test_reducers.cpp runs all of it on the host.
//
// An input is split into kept dims (the output's, row-major, innermost first) and
// reduced dims (smallest stride first, so a walk over the reduced positions follows
// memory); strides in bytes. Output o's reduced inputs sit at
//   base + kept_offset(g, o) + reduced_offset(g, k)   for k in [0, red_numel).
#pragma once

#include <cstdint>

#include <mixt/kernels/common/launch_geometry.h>
#include <mixt/kernels/common/layout_index.h>
#include <mixt/runtime/macros.h>
#include <mixt/runtime/shape.h>

namespace mixt {

struct ReduceGeometry {
  int nkept = 0, nred = 0;
  int64_t kept_sizes[kMaxDims] = {}, kept_strides[kMaxDims] = {};
  int64_t red_sizes[kMaxDims] = {}, red_strides[kMaxDims] = {};
  int64_t out_numel = 1, red_numel = 1;
};

// Splits a non-empty input (`nd` dims of `sizes`, `strides` in elements of `element_size`
// bytes) by `mask` (bit d: dim d is reduced), dropping size-1 dims and merging neighbours
// that are contiguous with each other. An empty input has no strides worth following:
// callers give it out_numel = the kept sizes' product and red_numel = 0 (nothing is read).
inline ReduceGeometry make_reduce_geometry(int nd, const int64_t* sizes, const int64_t* strides, int64_t element_size,
                                           uint32_t mask) {
  ReduceGeometry g;
  int64_t rs[kMaxDims], rst[kMaxDims];
  int nr = 0;
  for (int d = nd - 1; d >= 0; --d) {
    const int64_t size = sizes[d];
    if (size == 1) continue;  // a size-1 dim's stride is never stepped (and is unbounded)
    const int64_t stride = strides[d] * element_size;
    if (mask & (1u << d)) {
      g.red_numel *= size;
      rs[nr] = size, rst[nr] = stride, ++nr;
      continue;
    }
    g.out_numel *= size;
    if (g.nkept > 0 && stride == g.kept_strides[g.nkept - 1] * g.kept_sizes[g.nkept - 1]) {
      g.kept_sizes[g.nkept - 1] *= size;
    } else {
      g.kept_sizes[g.nkept] = size, g.kept_strides[g.nkept] = stride, ++g.nkept;
    }
  }
  // Reduced dims: the order does not change which elements are folded, so walk memory
  // in order (a stable insertion sort by stride; at most kMaxDims entries).
  for (int i = 1; i < nr; ++i) {
    const int64_t s = rs[i], st = rst[i];
    int j = i;
    for (; j > 0 && rst[j - 1] > st; --j) rs[j] = rs[j - 1], rst[j] = rst[j - 1];
    rs[j] = s, rst[j] = st;
  }
  for (int i = 0; i < nr; ++i) {
    if (g.nred > 0 && rst[i] == g.red_strides[g.nred - 1] * g.red_sizes[g.nred - 1]) {
      g.red_sizes[g.nred - 1] *= rs[i];
    } else {
      g.red_sizes[g.nred] = rs[i], g.red_strides[g.nred] = rst[i], ++g.nred;
    }
  }
  return g;
}

// Byte offset of linear position `i` over `n` dims (dim 0 fastest) of `sizes` and byte `strides`.
MIXT_HD inline int64_t linear_offset(const int64_t* sizes, const int64_t* strides, int n, int64_t i) {
  int64_t off = 0;
  for (int d = 0; d < n && i > 0; ++d) {
    const int64_t q = div_nonneg(i, sizes[d]);
    off += (i - q * sizes[d]) * strides[d];
    i = q;
  }
  return off;
}

// Byte offset of output `o` (row-major over the kept dims) in the input.
MIXT_HD inline int64_t kept_offset(const ReduceGeometry& g, int64_t o) {
  return linear_offset(g.kept_sizes, g.kept_strides, g.nkept, o);
}

// Byte offset of reduced position `k` (reduced dim 0 fastest) from an output's base.
MIXT_HD inline int64_t reduced_offset(const ReduceGeometry& g, int64_t k) {
  return g.nred == 1 ? k * g.red_strides[0] : linear_offset(g.red_sizes, g.red_strides, g.nred, k);
}

// True when the kept dim that is innermost in memory is closer than every reduced dim:
// neighbouring outputs are neighbours in memory (a reduction over the outer dims).
MIXT_HD inline bool kept_is_inner(const ReduceGeometry& g) {
  return g.nkept > 0 && g.nred > 0 && g.kept_strides[0] < g.red_strides[0];
}

// ---- the CUDA launch plan ----
//
// Each output is reduced by a group of `group` threads (a power of two dividing the
// block), and its reduced range may be cut into `splits` consecutive chunks of `chunk`
// positions, each reduced by its own block (for few, long reductions). Within a chunk,
// lane l folds positions first + l, first + l + group, ... in that order (consecutive
// lanes read consecutive addresses when reduced dim 0 is dense), then the group folds
// its partials with the fixed tree of group_tree_level; a second pass folds the chunks'
// partials in chunk order. No atomics: the same bits on every run and every GPU for a
// given shape (the plan depends on the shape only).
// When the outputs themselves are the dense direction (kept_is_inner) and there are
// enough of them, a group is one thread walking its output's positions in order (the
// CPU's order) and neighbouring threads read neighbouring addresses.
struct ReduceLaunch {
  int group = 1;              // threads per output (and chunk)
  int block = kBlockThreads;  // threads per block
  int64_t outputs_per_block = kBlockThreads;
  unsigned blocks = 1;        // grid.x; a block strides over output rounds beyond it
  int64_t splits = 1;         // chunks per output (grid.y); > 1 needs the second pass
  int64_t chunk = 0;          // reduced positions per chunk (the last may be shorter)
};

constexpr int64_t kReduceTargetThreads = int64_t{1} << 18;  // about the resident threads of a large GPU
constexpr int64_t kReduceMinPerThread = 64;                 // positions a thread folds before a split pays
constexpr int64_t kReduceMaxSplits = 1024;
constexpr int64_t kReduceMaxAccBytes = 32;  // workspace bytes per chunk partial (the largest acc_t)

// The smallest power of two >= n (n >= 1), capped at `cap` (a power of two).
MIXT_HD inline int pow2_at_least(int64_t n, int cap) {
  int p = 1;
  while (p < cap && p < n) p <<= 1;
  return p;
}

MIXT_HD inline ReduceLaunch make_reduce_launch(const ReduceGeometry& g) {
  ReduceLaunch l;
  const int64_t outs = g.out_numel > 0 ? g.out_numel : 1, n = g.red_numel;
  if (n <= 1) {
    l.group = 1;
  } else if (kept_is_inner(g)) {
    // One thread per output when there are enough outputs; otherwise lanes share outputs.
    const int64_t want = (kReduceTargetThreads + outs - 1) / outs;
    const int a = pow2_at_least(want, kBlockThreads), b = pow2_at_least(n, kBlockThreads);
    l.group = a < b ? a : b;
  } else {
    l.group = pow2_at_least(n, kBlockThreads);
  }
  l.outputs_per_block = l.block / l.group;
  const int64_t rounds = (outs + l.outputs_per_block - 1) / l.outputs_per_block;
  l.blocks = static_cast<unsigned>(rounds < kMaxBlocks ? rounds : kMaxBlocks);
  // Few long reductions: cut each into chunks, so that more blocks share the work.
  const int64_t threads = rounds * l.block;
  if (threads < kReduceTargetThreads && n > l.group * kReduceMinPerThread) {
    int64_t splits = (kReduceTargetThreads + threads - 1) / threads;
    const int64_t most = n / (l.group * kReduceMinPerThread);
    splits = splits < most ? splits : most;
    splits = splits < kReduceMaxSplits ? splits : kReduceMaxSplits;
    l.splits = splits < 1 ? 1 : splits;
  }
  l.chunk = l.splits > 1 ? (n + l.splits - 1) / l.splits : n;
  if (l.splits > 1) l.splits = (n + l.chunk - 1) / l.chunk;  // no empty chunk
  return l;
}

// ---- row kernels (softmax, layer_norm, rms_norm): one block per row ----
//
// The block's threads are the row's group (the same lane order and tree as above); the
// row's values are kept in shared memory after the partials when they fit, so the row
// is read from global memory once.
constexpr int64_t kRowCacheBytes = 32 * 1024;
constexpr int kRowPartialBytes = 16;  // room per thread for the largest row accumulator

// Threads of a row block: a power of two, at least a warp, at most kBlockThreads.
MIXT_HD inline int row_block_threads(int64_t n) {
  const int t = pow2_at_least(n, kBlockThreads);
  return t < 32 ? 32 : t;
}

// True when n values of `value_bytes` each fit in the row cache.
MIXT_HD inline bool row_cache_fits(int64_t n, int64_t value_bytes) { return n * value_bytes <= kRowCacheBytes; }

// Dynamic shared memory of a row block of `threads` threads over rows of n values.
MIXT_HD inline int64_t row_shared_bytes(int threads, int64_t n, int64_t value_bytes) {
  return int64_t{threads} * kRowPartialBytes + (row_cache_fits(n, value_bytes) ? n * value_bytes : 0);
}

// One level of the group's tree: lane < s folds lane + s's partial into its own; the
// levels run s = group / 2, group / 4, ..., 1, with the group's result left in lane 0.
template <class R>
MIXT_HD inline void group_tree_level(const R& r, typename R::acc_t* partials, int lane, int s) {
  if (lane < s) r.combine(partials[lane], partials[lane + s]);
}

// The device's result for one output of n reduced positions under plan `l`, computed on
// the host in the device's order: per chunk, the lanes fold their positions (value(k)
// gives position k's value), then the tree; then the chunks in order. Tests compare it
// with the sequential fold; the CUDA kernels run the same steps.
template <class R, class Value>
typename R::acc_t reduce_in_device_order(const R& r, int64_t n, const ReduceLaunch& l, Value&& value) {
  using acc_t = typename R::acc_t;
  acc_t result = r.init();
  const int64_t chunk = l.splits > 1 ? l.chunk : n;
  for (int64_t c = 0; c < l.splits; ++c) {
    const int64_t first = c * chunk, end = first + chunk < n ? first + chunk : n;
    acc_t partials[kBlockThreads];
    for (int lane = 0; lane < l.group; ++lane) {
      partials[lane] = r.init();
      for (int64_t k = first + lane; k < end; k += l.group) r.accumulate(partials[lane], value(k), k);
    }
    for (int s = l.group / 2; s > 0; s >>= 1)
      for (int lane = 0; lane < s; ++lane) group_tree_level(r, partials, lane, s);
    if (c == 0) result = partials[0];
    else r.combine(result, partials[0]);
  }
  return result;
}

// The plan with `group` threads per output and no chunks (tests of the tree alone).
MIXT_HD inline ReduceLaunch group_only_launch(int group) {
  ReduceLaunch l;
  l.group = group;
  l.outputs_per_block = l.block / group;
  return l;
}

}  // namespace mixt
