// The CPU loop drivers of loops.h, compiled once (Note [Loop drivers compiled once]).
#include <mixt/kernels/cpu/loops.h>

#include <algorithm>

namespace mixt::cpu {

void parallel_for_erased(int64_t n, int64_t grain, RangeBody body, void* ctx) {
  const int nt = threads_for(n, grain);
  if (nt <= 1) {
    if (n > 0) body(ctx, 0, n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    const int64_t begin = split_point(n, t, T), end = split_point(n, t + 1, T);
    if (begin < end) body(ctx, begin, end);
  }
}

void parallel_threads_erased(int threads, ThreadBody body, void* ctx) {
#pragma omp parallel num_threads(threads)
  body(ctx, omp_get_thread_num(), omp_get_num_threads());
}

namespace {

// The runs of the linear range [begin, end) of the layout, each handed to `body`.
void for_each_range(const StridedLayout& L, char* const* base, int64_t begin, int64_t end, RunBody body, void* ctx) {
  const int nops = L.noperands;
  int64_t idx[kMaxDims];
  int64_t rem = begin;
  for (int d = 0; d < L.ndim; ++d) {
    idx[d] = rem % L.sizes[d];
    rem /= L.sizes[d];
  }
  char* ptrs[kMaxOperands];
  int64_t inner_strides[kMaxOperands];
  for (int op = 0; op < nops; ++op) {
    char* p = base[op];
    for (int d = 0; d < L.ndim; ++d) p += idx[d] * L.strides[op][d];
    ptrs[op] = p;
    inner_strides[op] = L.strides[op][0];
  }
  int64_t pos = begin;
  while (pos < end) {
    const int64_t run = std::min(L.sizes[0] - idx[0], end - pos);
    body(ctx, ptrs, inner_strides, run);
    pos += run;
    if (pos >= end) break;
    // Advance: finish dim 0, carry into the outer dims.
    for (int op = 0; op < nops; ++op) ptrs[op] += run * L.strides[op][0];
    idx[0] += run;
    for (int d = 0; d < L.ndim && idx[d] == L.sizes[d]; ++d) {
      for (int op = 0; op < nops; ++op) ptrs[op] -= L.sizes[d] * L.strides[op][d];
      idx[d] = 0;
      if (d + 1 < L.ndim) {
        ++idx[d + 1];
        for (int op = 0; op < nops; ++op) ptrs[op] += L.strides[op][d + 1];
      }
    }
  }
}

struct RangeWalk {
  const StridedLayout* L;
  char* const* base;
  RunBody body;
  void* ctx;
};

}  // namespace

void for_each_erased(const StridedLayout& L, char* const* base, int64_t grain, RunBody body, void* ctx) {
  if (L.numel == 0) return;
  RangeWalk walk{&L, base, body, ctx};
  parallel_for_erased(
      L.numel, grain,
      [](void* w, int64_t b, int64_t e) {
        const auto& rw = *static_cast<RangeWalk*>(w);
        for_each_range(*rw.L, rw.base, b, e, rw.body, rw.ctx);
      },
      &walk);
}

}  // namespace mixt::cpu
