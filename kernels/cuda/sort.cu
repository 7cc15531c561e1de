// Device kernels of sort, argsort, topk and unique: every line's elements become (key,
// position) pairs (Note [Sort keys]), sorted by a bitonic network in scratch memory
// (Note [Bitonic lines]), then the first `keep` pairs of each line are gathered; unique
// marks, numbers and writes the groups of one sorted line. Values move as raw bits.
#include <mixt/kernels/common/sort_keys.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/kernels/cuda/sort_launch.h>

namespace mixt::cuda {
namespace {

// Pairs of every line, the padding included (one thread per padded position).
template <class T>
__global__ void sort_keys_kernel(SortArgs a) {
  const T* in = static_cast<const T*>(a.in);
  const int64_t total = a.outer * a.inner * a.padded;
  for (int64_t t = grid_start(); t < total; t += grid_step()) {
    const int64_t line = t / a.padded, j = t - line * a.padded;
    if (j < a.len) {
      const int64_t o = line / a.inner, i = line - o * a.inner;
      a.keys[t] = sort_keys::order_key(in[(o * a.len + j) * a.inner + i], a.descending);
      a.pos[t] = j;
    } else {
      a.keys[t] = sort_keys::kPadKey;
      a.pos[t] = a.padded;
    }
  }
}

// One (k, j) step of the network over every line (one thread per compared pair).
__global__ void bitonic_step_kernel(SortArgs a, int64_t k, int64_t j) {
  const int64_t half = a.padded / 2;
  const int64_t total = a.outer * a.inner * half;
  for (int64_t t = grid_start(); t < total; t += grid_step()) {
    const int64_t line = t / half;
    int64_t lo, hi;
    sort_keys::bitonic_pair(t - line * half, j, &lo, &hi);
    sort_keys::bitonic_compare_swap(a.keys + line * a.padded, a.pos + line * a.padded, lo, hi, k);
  }
}

template <class U>
__global__ void sort_gather_kernel(SortGatherArgs g) {
  const SortArgs& a = g.sort;
  const U* in = static_cast<const U*>(a.in);
  U* values = static_cast<U*>(g.values);
  const int64_t total = a.outer * g.keep * a.inner;
  for (int64_t t = grid_start(); t < total; t += grid_step()) {
    const int64_t o = t / (g.keep * a.inner), rest = t - o * g.keep * a.inner;
    const int64_t j = rest / a.inner, i = rest - j * a.inner;
    const int64_t p = a.pos[(o * a.inner + i) * a.padded + j];
    g.indices[t] = p;
    if (values) values[t] = in[(o * a.len + p) * a.inner + i];
  }
}

__global__ void unique_marks_kernel(UniqueMarkArgs a) {
  for (int64_t j = grid_start(); j < a.n; j += grid_step())
    a.marks[j] = j == 0 || a.keys[j] != a.keys[j - 1] || sort_keys::is_nan_key(a.keys[j]) ? 1 : 0;
}

template <class U>
__global__ void unique_write_kernel(UniqueWriteArgs a) {
  const U* in = static_cast<const U*>(a.in);
  U* values = static_cast<U*>(a.values);
  for (int64_t j = grid_start(); j < a.n; j += grid_step()) {
    const int64_t g = a.group[j] - 1;
    if (a.inverse) a.inverse[a.pos[j]] = g;
    if (a.marks[j]) {
      values[g] = in[a.pos[j]];
      a.starts[g] = j;
    }
  }
}

__global__ void unique_counts_kernel(UniqueWriteArgs a) {
  for (int64_t g = grid_start(); g < a.groups; g += grid_step())
    a.counts[g] = (g + 1 < a.groups ? a.starts[g + 1] : a.n) - a.starts[g];
}

}  // namespace

cudaError_t launch_sort(const SortArgs& a, cudaStream_t stream) {
  const int64_t lines = a.outer * a.inner;
  if (lines == 0 || a.len == 0) return cudaSuccess;
  const cudaError_t e = visit_dtype(a.dtype, "sort", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_kernel(sort_keys_kernel<T>, {grid_for(lines * a.padded), kBlockThreads, 0, stream}, a);
    return cudaGetLastError();
  });
  if (e != cudaSuccess) return e;
  for (int64_t k = 2; k <= a.padded; k <<= 1)
    for (int64_t j = k / 2; j >= 1; j >>= 1)
      launch_kernel(bitonic_step_kernel, {grid_for(lines * a.padded / 2), kBlockThreads, 0, stream}, a, k, j);
  return cudaGetLastError();
}

cudaError_t launch_sort_gather(const SortGatherArgs& g, cudaStream_t stream) {
  const int64_t total = g.sort.outer * g.keep * g.sort.inner;
  if (total == 0) return cudaSuccess;
  return visit_size(static_cast<int>(element_size(g.sort.dtype)), [&](auto u) {
    launch_kernel(sort_gather_kernel<typename decltype(u)::type>, {grid_for(total), kBlockThreads, 0, stream}, g);
    return cudaGetLastError();
  });
}

cudaError_t launch_unique_marks(const UniqueMarkArgs& a, cudaStream_t stream) {
  if (a.n == 0) return cudaSuccess;
  launch_kernel(unique_marks_kernel, {grid_for(a.n), kBlockThreads, 0, stream}, a);
  return cudaGetLastError();
}

cudaError_t launch_unique_write(const UniqueWriteArgs& a, cudaStream_t stream) {
  if (a.n == 0) return cudaSuccess;
  const cudaError_t e = visit_size(static_cast<int>(element_size(a.dtype)), [&](auto u) {
    launch_kernel(unique_write_kernel<typename decltype(u)::type>, {grid_for(a.n), kBlockThreads, 0, stream}, a);
    return cudaGetLastError();
  });
  if (e != cudaSuccess || a.counts == nullptr) return e;
  launch_kernel(unique_counts_kernel, {grid_for(a.groups), kBlockThreads, 0, stream}, a);
  return cudaGetLastError();
}

}  // namespace mixt::cuda
