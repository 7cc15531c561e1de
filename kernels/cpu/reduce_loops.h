// The CPU reduction engine: a strided reduction over any set of dims of a
// (non-contiguous) input, driven by a Reducer that says how values fold into an
// accumulator. Outputs are split across threads when there are many; a few large
// reductions split their reduced range instead, with per-thread partials merged
// in order (so "first occurrence" stays first).
//
// A Reducer R is one of kernels/common/reducers.h (init, accumulate, combine; the
// store calls project): values arrive as opmath_t<T> of the input storage type T.
// The index i is the linear position in the reduced range; it follows the logical
// order only when one dim is reduced (the only case where index reductions use it).
// Within a thread positions are folded in increasing order; partials of later
// ranges are combined into earlier ones.
//
// Vector paths (kernels/cpu/vec/rows.h) take sum, mean, var/std, amax/amin, logsumexp
// and the 1- and 2-norms of float, double, bfloat16 and float16. A contiguous run is
// summed in double in fixed slots and the run's sum added to the accumulator; var takes
// the run's mean and centred squares in two passes and merges them by Chan's formula;
// amax/amin take the run's extremum (NaN wins); logsumexp the run's maximum and its sum
// of exp(x - max) in double. A reduction over an outer dim adds whole rows of
// neighbouring outputs at once; over dim 0 of a 2-D layout, fixed chunks of rows stream
// through column kernels (reduce_rows_by_chunks: sums, norms, amax/amin, var/std).
// Every other reducer folds one value at a time.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include <omp.h>

#include <mixt/kernels/common/reduce_geometry.h>
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/common/reducers.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/row_buffers.h>
#include <mixt/kernels/cpu/vec/rows.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/tensor.h>

namespace mixt::cpu {

// Calls run(p, stride, n, i0) for the runs along reduced dim 0 that cover the
// reduced positions [begin, end) from `base`: n elements at p, p + stride, ...
// whose first has reduced index i0.
template <class Run>
void for_each_reduced_run(const ReduceGeometry& g, const char* base, int64_t begin, int64_t end, Run&& run) {
  if (g.nred == 0) {  // a single element
    if (begin < end) run(base, int64_t{0}, int64_t{1}, int64_t{0});
    return;
  }
  int64_t idx[kMaxDims];
  const char* p = base;
  int64_t rem = begin;
  for (int d = 0; d < g.nred; ++d) {
    idx[d] = rem % g.red_sizes[d];
    rem /= g.red_sizes[d];
    p += idx[d] * g.red_strides[d];
  }
  int64_t pos = begin;
  while (pos < end) {
    const int64_t n = std::min(g.red_sizes[0] - idx[0], end - pos);
    run(p, g.red_strides[0], n, pos);
    pos += n;
    if (pos >= end) break;
    p += n * g.red_strides[0];
    idx[0] += n;
    for (int d = 0; d + 1 < g.nred && idx[d] == g.red_sizes[d]; ++d) {
      p += g.red_strides[d + 1] - g.red_sizes[d] * g.red_strides[d];
      idx[d] = 0;
      ++idx[d + 1];
    }
  }
}

// Reads one element of storage type T as its compute type.
template <class T>
inline opmath_t<T> load(const char* p) {
  return static_cast<opmath_t<T>>(*reinterpret_cast<const T*>(p));
}

// Storage types the vector paths read (float and double directly, the others widened).
template <class T>
inline constexpr bool is_vector_storage_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                            std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>;

// True when reducer R over storage type T is a double sum the vector paths compute
// (sum and mean of floating inputs), or a double Welford (var, std).
template <class R, class T>
inline constexpr bool is_vector_sum_v =
    is_vector_storage_v<T> && std::is_base_of_v<reducers::Sum<double>, R>;
template <class R, class T>
inline constexpr bool is_vector_welford_v = is_vector_storage_v<T> && std::is_same_v<R, reducers::Welford<double>>;

// True when reducer R over storage type T is amax or amin (Max tells which).
template <class R, class T>
struct vector_extremum : std::false_type {};
template <class T, bool Max>
struct vector_extremum<reducers::Extremum<opmath_t<T>, Max>, T> : std::bool_constant<is_vector_storage_v<T>> {
  static constexpr bool max = Max;
};

// True when reducer R over storage type T is logsumexp or a norm (the 1- and 2-norms take
// the vector path; the kind is known at run time).
template <class R, class T>
inline constexpr bool is_vector_logsumexp_v = is_vector_storage_v<T> && std::is_same_v<R, reducers::LogSumExp>;
template <class R, class T>
inline constexpr bool is_vector_norm_v = is_vector_storage_v<T> && std::is_same_v<R, reducers::Norm>;

// Narrow runs are widened in blocks of this many values.
constexpr int64_t kWidenBlock = 2048;

// Calls f(w, i, m) over the n contiguous values at x: w holds the m values from x + i
// as a work row (row_buffers.h), narrow ones widened in blocks of kWidenBlock.
template <class T, class F>
void for_each_work_block(const T* x, int64_t n, F&& f) {
  if constexpr (is_work_type_v<T>) {
    f(x, int64_t{0}, n);
  } else {
    work_t<T> buf[kWidenBlock];
    for (int64_t i = 0; i < n; i += kWidenBlock) {
      const int64_t m = std::min(kWidenBlock, n - i);
      load_line(x + i, 1, buf, m);
      f(static_cast<const work_t<T>*>(buf), i, m);
    }
  }
}

// Folds the n contiguous values at x (reduced positions i0, i0 + 1, ...) into acc.
template <class T, class R>
void fold_run(const R& r, typename R::acc_t& acc, const T* x, int64_t n, int64_t i0) {
  if constexpr (is_vector_sum_v<R, T>) {
    for_each_work_block(x, n, [&](const auto* w, int64_t, int64_t m) { acc += vec::sum_row(w, m); });
  } else if constexpr (is_vector_welford_v<R, T>) {
    for_each_work_block(x, n, [&](const auto* w, int64_t, int64_t m) {
      const vec::RowMoments mv = vec::row_moments(w, m, true);
      r.combine(acc, reducers::WelfordAcc<double>{mv.mean, mv.var * static_cast<double>(m), m});
    });
  } else if constexpr (is_vector_logsumexp_v<R, T>) {
    for_each_work_block(x, n, [&](const auto* w, int64_t, int64_t m) {
      const double top = static_cast<double>(vec::extremum_row(w, m, true));  // NaN when the run holds one
      if (std::isnan(top)) {
        acc.nan = true;
        return;
      }
      // An infinite maximum decides the result alone (project gives it back).
      R::fold(acc, top, std::isinf(top) ? 1.0 : vec::sum_exp_row(w, m, top));
    });
  } else if constexpr (is_vector_norm_v<R, T>) {
    if (r.kind == reducers::NormKind::Two || r.kind == reducers::NormKind::One) {
      for_each_work_block(x, n, [&](const auto* w, int64_t, int64_t m) {
        acc += vec::abs_sum_row(w, m, r.kind == reducers::NormKind::Two);
      });
    } else {
      for (int64_t i = 0; i < n; ++i) r.accumulate(acc, static_cast<opmath_t<T>>(x[i]), i0 + i);
    }
  } else if constexpr (vector_extremum<R, T>::value) {
    for_each_work_block(x, n, [&](const auto* w, int64_t, int64_t m) {
      r.combine(acc, vec::extremum_row(w, m, vector_extremum<R, T>::max));
    });
  } else {
    for (int64_t i = 0; i < n; ++i) r.accumulate(acc, static_cast<opmath_t<T>>(x[i]), i0 + i);
  }
}

// Folds the reduced positions [begin, end) from `base` into `acc`.
template <class T, class R>
void reduce_range(const ReduceGeometry& g, const R& r, const char* base, int64_t begin, int64_t end,
                  typename R::acc_t& acc) {
  for_each_reduced_run(g, base, begin, end, [&](const char* p, int64_t s, int64_t n, int64_t i0) {
    if (s == static_cast<int64_t>(sizeof(T))) {
      fold_run(r, acc, reinterpret_cast<const T*>(p), n, i0);
    } else {
      for (int64_t i = 0; i < n; ++i) r.accumulate(acc, load<T>(p + i * s), i0 + i);
    }
  });
}

// Outputs folded together when the kept dim is the one contiguous in memory: a pass
// over the reduced positions reads runs of this many neighbouring values (16 KiB of
// float32), so a reduction over dim 0 streams along the rows.
constexpr int64_t kOuterBlock = 4096;

// Reduces outputs [ob, oe) where kept dim 0 has the smallest stride: a block of
// neighbouring outputs shares each pass over the reduced positions.
template <class T, class R, class Store>
void reduce_outer_block(const ReduceGeometry& g, const R& r, const char* in, int64_t ob, int64_t oe, Store& store) {
  using acc_t = typename R::acc_t;
  const int64_t ks = g.kept_strides[0];
  const std::unique_ptr<acc_t[]> acc(new acc_t[static_cast<size_t>(std::min(kOuterBlock, oe - ob))]);
  int64_t o = ob;
  while (o < oe) {
    // Stay inside one row of kept dim 0 so the block's outputs are evenly spaced.
    const int64_t in_row = g.kept_sizes[0] - o % g.kept_sizes[0];
    const int64_t b = std::min({kOuterBlock, oe - o, in_row});
    for (int64_t j = 0; j < b; ++j) acc[j] = r.init();
    for_each_reduced_run(g, in + kept_offset(g, o), 0, g.red_numel,
                         [&](const char* p, int64_t s, int64_t n, int64_t i0) {
                           for (int64_t i = 0; i < n; ++i) {
                             const char* q = p + i * s;
                             if constexpr (is_vector_sum_v<R, T>) {
                               if (ks == static_cast<int64_t>(sizeof(T))) {
                                 for_each_work_block(reinterpret_cast<const T*>(q), b,
                                                     [&](const auto* w, int64_t at, int64_t m) {
                                                       vec::add_row_into(w, acc.get() + at, m);
                                                     });
                                 continue;
                               }
                             }
                             if (ks == static_cast<int64_t>(sizeof(T))) {
                               const T* x = reinterpret_cast<const T*>(q);
#pragma omp simd
                               for (int64_t j = 0; j < b; ++j) r.accumulate(acc[j], static_cast<opmath_t<T>>(x[j]), i0 + i);
                             } else {
                               for (int64_t j = 0; j < b; ++j) r.accumulate(acc[j], load<T>(q + j * ks), i0 + i);
                             }
                           }
                         });
    for (int64_t j = 0; j < b; ++j) store(o + j, acc[j]);
    o += b;
  }
}

// Rows per chunk when a reduction over dim 0 of a [rows, cols] layout is split by rows.
constexpr int64_t kRowChunk = 512;

// True when reduce_rows_by_chunks has a column kernel for reducer R over storage type T.
template <class R, class T>
inline constexpr bool has_column_fold_v = is_vector_sum_v<R, T> || is_vector_welford_v<R, T> ||
                                          vector_extremum<R, T>::value || is_vector_norm_v<R, T>;

// A reduction over the rows of a contiguous [rows, cols] layout (one reduced and one kept
// dim, kept contiguous): fixed chunks of kRowChunk rows stream (contiguous memory) into
// per-column accumulators, a chunk on any thread, each row folded in by a column kernel
// (sums and the 1- and 2-norms add in double, amax/amin keep the extremum, var/std take
// Welford's step); the chunks' accumulators are then combined in chunk order, so the
// result does not depend on the number of threads. False when `g` has another shape or
// R has no column kernel (the caller takes the general path).
template <class T, class R, class Store>
bool reduce_rows_by_chunks(const ReduceGeometry& g, const R& r, const char* base, Store& store) {
  if constexpr (!has_column_fold_v<R, T>) {
    return false;
  } else {
    if (g.nkept != 1 || g.nred != 1 || g.kept_strides[0] != static_cast<int64_t>(sizeof(T)) ||
        g.red_strides[0] != g.kept_sizes[0] * static_cast<int64_t>(sizeof(T)) || g.red_numel < 2 * kRowChunk)
      return false;
    if constexpr (is_vector_norm_v<R, T>) {
      if (r.kind != reducers::NormKind::Two && r.kind != reducers::NormKind::One) return false;
    }
    using acc_t = typename R::acc_t;
    const int64_t rows = g.red_numel, cols = g.out_numel, chunks = (rows + kRowChunk - 1) / kRowChunk;
    std::vector<acc_t> partial(static_cast<size_t>(chunks * cols), r.init());
    const T* x = reinterpret_cast<const T*>(base);
    parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
      std::vector<double> mean, m2;  // Welford's running moments of a chunk
      for (int64_t ch = b; ch < e; ++ch) {
        acc_t* acc = partial.data() + ch * cols;
        const int64_t first = ch * kRowChunk, end = std::min(rows, first + kRowChunk);
        if constexpr (is_vector_welford_v<R, T>) {
          mean.assign(static_cast<size_t>(cols), 0.0);
          m2.assign(static_cast<size_t>(cols), 0.0);
        }
        for (int64_t i = first; i < end; ++i)
          for_each_work_block(x + i * cols, cols, [&](const auto* w, int64_t at, int64_t m) {
            if constexpr (is_vector_sum_v<R, T>)
              vec::add_row_into(w, acc + at, m);
            else if constexpr (is_vector_norm_v<R, T>)
              vec::add_abs_row_into(w, acc + at, m, r.kind == reducers::NormKind::Two);
            else if constexpr (vector_extremum<R, T>::value)
              vec::extremum_row_into(w, acc + at, m, vector_extremum<R, T>::max);
            else
              vec::welford_row_into(w, mean.data() + at, m2.data() + at, i - first + 1, m);
          });
        if constexpr (is_vector_welford_v<R, T>)
          for (int64_t c = 0; c < cols; ++c) acc[c] = {mean[static_cast<size_t>(c)], m2[static_cast<size_t>(c)], end - first};
      }
    });
    for (int64_t o = 0; o < cols; ++o) {
      acc_t acc = partial[static_cast<size_t>(o)];
      for (int64_t ch = 1; ch < chunks; ++ch) r.combine(acc, partial[static_cast<size_t>(ch * cols + o)]);
      store(o, acc);
    }
    return true;
  }
}

// Runs reducer `r` over `in` (storage type T) split by `g`, calling
// store(o, acc) once per output o (row-major over the kept dims).
template <class T, class R, class Store>
void run_reduction(const ReduceGeometry& g, const R& r, const Tensor& in, Store&& store) {
  using acc_t = typename R::acc_t;
  const char* base = static_cast<const char*>(in.data_ptr());
  if (g.out_numel == 0) return;
  if (g.red_numel == 0) {
    for (int64_t o = 0; o < g.out_numel; ++o) store(o, r.init());
    return;
  }
  const int nt_red = threads_for(g.red_numel);
  if (nt_red > 1 && g.out_numel < 2 * static_cast<int64_t>(omp_get_max_threads())) {
    // Few, large reductions: split each one's range, fold the partials in order.
    std::vector<acc_t> partial(static_cast<size_t>(nt_red));
    for (int64_t o = 0; o < g.out_numel; ++o) {
      const char* p = base + kept_offset(g, o);
      std::fill(partial.begin(), partial.end(), r.init());  // the runtime may grant fewer threads
      parallel_threads(nt_red, [&](int t, int nt) {
        acc_t acc = r.init();
        reduce_range<T>(g, r, p, split_point(g.red_numel, t, nt), split_point(g.red_numel, t + 1, nt), acc);
        partial[static_cast<size_t>(t)] = acc;
      });
      acc_t acc = partial[0];
      for (int u = 1; u < nt_red; ++u) r.combine(acc, partial[static_cast<size_t>(u)]);
      store(o, acc);
    }
    return;
  }
  const bool outer = g.nkept > 0 && g.nred > 0 && g.kept_strides[0] < g.red_strides[0];
  if (outer && reduce_rows_by_chunks<T>(g, r, base, store)) return;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / g.red_numel);
  parallel_for(g.out_numel, grain, [&](int64_t ob, int64_t oe) {
    if (outer) {
      reduce_outer_block<T>(g, r, base, ob, oe, store);
      return;
    }
    for (int64_t o = ob; o < oe; ++o) {
      acc_t acc = r.init();
      reduce_range<T>(g, r, base + kept_offset(g, o), 0, g.red_numel, acc);
      store(o, acc);
    }
  });
}

}  // namespace mixt::cpu
