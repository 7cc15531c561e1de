// softmax and log_softmax on the CPU, along one dim, and their fused backward kernels
// (Note [Fused backward ops]). The lines run through the vectorised row kernels
// (kernels/cpu/vec/rows.h): each line is max-subtracted (stable for large inputs), narrow
// floats compute in float32, line sums accumulate in double, and every output is rounded
// once. A row holding NaN or +Inf gives NaN, a row of -Inf gives NaN (as before; PyTorch
// agrees on NaN and -Inf rows).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/kernels/cpu/row_buffers.h>
#include <mixt/kernels/cpu/vec/rows.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cpu {
namespace {

// A tensor viewed as [outer, n, inner] around the softmax dim.
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};

Lines lines_of(const Tensor& x, int64_t dim) {
  Lines l;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t s = x.size(d);
    if (d < dim)
      l.outer *= s;
    else if (d == dim)
      l.n = s;
    else
      l.inner *= s;
  }
  return l;
}

// Lines handed to the row kernels at once when the dim is not the innermost one and has
// few neighbours (inner < kColumnsMin): a tile of neighbouring lines is gathered into
// work rows (whole cache lines are read), run, and scattered back.
constexpr int64_t kTile = 16;

// Runs fn(inputs, output, n) on every line of `l` as work rows (row_buffers.h): in place
// when the line is contiguous and T a work type, through converted rows otherwise. The
// K inputs and the output share the layout of `l`.
template <class T, size_t K, class Fn>
void for_each_work_line(const Lines& l, const std::array<const T*, K>& in, T* out, const Fn& fn) {
  using W = work_t<T>;
  const int64_t n = l.n;
  if (l.inner == 1) {
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, n));
    parallel_for(l.outer, grain, [&](int64_t b, int64_t e) {
      std::vector<W> buf(is_work_type_v<T> ? 0 : static_cast<size_t>((K + 1) * n));
      for (int64_t r = b; r < e; ++r) {
        std::array<const W*, K> w;
        W* o;
        if constexpr (is_work_type_v<T>) {
          for (size_t k = 0; k < K; ++k) w[k] = in[k] + r * n;
          o = out + r * n;
        } else {
          for (size_t k = 0; k < K; ++k) {
            load_line(in[k] + r * n, 1, buf.data() + k * n, n);
            w[k] = buf.data() + k * n;
          }
          o = buf.data() + K * n;
        }
        fn(w, o, n);
        if constexpr (!is_work_type_v<T>) store_line(o, out + r * n, 1, n);
      }
    });
    return;
  }
  const int64_t tiles = (l.inner + kTile - 1) / kTile;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, kTile * n));
  parallel_for(l.outer * tiles, grain, [&](int64_t b, int64_t e) {
    std::vector<W> buf(static_cast<size_t>((K + 1) * kTile * n));
    W* const ob = buf.data() + K * kTile * n;
    for (int64_t t = b; t < e; ++t) {
      const int64_t k0 = (t % tiles) * kTile, width = std::min(kTile, l.inner - k0);
      const int64_t base = (t / tiles) * n * l.inner + k0;
      for (size_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t c = 0; c < width; ++c)
            buf[static_cast<size_t>((static_cast<int64_t>(k) * kTile + c) * n + j)] =
                static_cast<W>(in[k][base + j * l.inner + c]);
      for (int64_t c = 0; c < width; ++c) {
        std::array<const W*, K> w;
        for (size_t k = 0; k < K; ++k) w[k] = buf.data() + (static_cast<int64_t>(k) * kTile + c) * n;
        fn(w, ob + c * n, n);
      }
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < width; ++c) out[base + j * l.inner + c] = convert<T>(ob[c * n + j]);
    }
  });
}

// Lines along an outer dim with at least kColumnsMin neighbours run as columns: a block
// of up to kColumnBlock neighbouring lines streams its rows (contiguous) through the
// column kernels, pass after pass, with one accumulator per line.
constexpr int64_t kColumnsMin = 64;
constexpr int64_t kColumnBlock = 2048;

// Runs block(o, c0, w) over the column blocks of `l` (outer index o, first line c0, width w).
template <class Block>
void for_each_column_block(const Lines& l, Block&& block) {
  const int64_t blocks = (l.inner + kColumnBlock - 1) / kColumnBlock;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, l.n * kColumnBlock));
  parallel_for(l.outer * blocks, grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t c0 = (t % blocks) * kColumnBlock;
      block(t / blocks, c0, std::min(kColumnBlock, l.inner - c0));
    }
  });
}

// softmax (log_softmax) of the columns of `l`: the maxima, the sums of exp in double,
// then the outputs. A line with NaN, +Inf or only -Inf gives NaN, as softmax_row.
template <bool Log, class T>
void softmax_columns(const Lines& l, const T* x, T* y) {
  using W = work_t<T>;
  for_each_column_block(l, [&](int64_t o, int64_t c0, int64_t w) {
    std::vector<W> m(static_cast<size_t>(w), -std::numeric_limits<W>::infinity()), k(static_cast<size_t>(w)), xbuf,
        ybuf(is_work_type_v<T> ? 0 : static_cast<size_t>(w));
    std::vector<double> s(static_cast<size_t>(w), 0.0);
    const T* xo = x + o * l.n * l.inner + c0;
    T* yo = y + o * l.n * l.inner + c0;
    for (int64_t j = 0; j < l.n; ++j) vec::extremum_row_into(work_row(xo + j * l.inner, w, xbuf), m.data(), w, true);
    for (int64_t j = 0; j < l.n; ++j) vec::col_sum_exp(work_row(xo + j * l.inner, w, xbuf), m.data(), s.data(), w);
    for (int64_t c = 0; c < w; ++c)
      k[c] = std::isnan(m[c]) || std::isinf(m[c]) ? std::numeric_limits<W>::quiet_NaN()
             : Log                                ? static_cast<W>(std::log(s[c]))
                                                  : static_cast<W>(1.0 / s[c]);
    for (int64_t j = 0; j < l.n; ++j) {
      W* out = is_work_type_v<T> ? reinterpret_cast<W*>(yo + j * l.inner) : ybuf.data();
      vec::col_softmax_out(work_row(xo + j * l.inner, w, xbuf), m.data(), k.data(), out, w, Log);
      if constexpr (!is_work_type_v<T>) store_line(ybuf.data(), yo + j * l.inner, 1, w);
    }
  });
}

// The backward of softmax_columns: the sums in double, rounded to the work type, then the outputs.
template <bool Log, class T>
void softmax_backward_columns(const Lines& l, const T* g, const T* y, T* gx) {
  using W = work_t<T>;
  for_each_column_block(l, [&](int64_t o, int64_t c0, int64_t w) {
    std::vector<W> k(static_cast<size_t>(w)), gbuf, ybuf, obuf(is_work_type_v<T> ? 0 : static_cast<size_t>(w));
    std::vector<double> s(static_cast<size_t>(w), 0.0);
    const int64_t at = o * l.n * l.inner + c0;
    for (int64_t j = 0; j < l.n; ++j) {
      const int64_t r = at + j * l.inner;
      vec::col_backward_sum(work_row(g + r, w, gbuf), work_row(y + r, w, ybuf), s.data(), w, Log);
    }
    for (int64_t c = 0; c < w; ++c) k[c] = static_cast<W>(s[c]);
    for (int64_t j = 0; j < l.n; ++j) {
      const int64_t r = at + j * l.inner;
      W* out = is_work_type_v<T> ? reinterpret_cast<W*>(gx + r) : obuf.data();
      vec::col_backward_out(work_row(g + r, w, gbuf), work_row(y + r, w, ybuf), k.data(), out, w, Log);
      if constexpr (!is_work_type_v<T>) store_line(obuf.data(), gx + r, 1, w);
    }
  });
}

void set_output(OpCall& c, const Tensor& out) {
  if (c.out[0].defined())
    host::copy_into(c.out[0], out, c);
  else
    c.out[0] = out;
}

template <bool Log>
void softmax_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& in = c.in[0];
  const ScalarType dt = c.attrs.dtype;
  MIXT_CHECK_OP(in.is_cpu(), c, "the CPU kernel got a tensor on {}", in.device());
  check_softmax_dtypes(c, in.dtype(), dt);
  const Tensor x = host::contiguous(dt == ScalarType::Undefined ? in : host::converted(in, dt, c), c);
  const int64_t dim = wrap_dim(c.attrs.get<attrs::Dim>().dim, x.dim(), op_name(c.op).data());
  const Lines l = lines_of(x, dim);
  Tensor out = make_empty(x.sizes(), x.dtype(), x.device());
  visit_dtype<dtypes::kFloating>(x.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data_ptr<T>();
    T* py = out.data_ptr<T>();
    if (l.inner >= kColumnsMin)
      softmax_columns<Log>(l, px, py);
    else
      for_each_work_line<T, 1>(l, {px}, py, [](const auto& w, auto* y, int64_t n) { vec::softmax_row(w[0], y, n, Log); });
  });
  set_output(c, out);
}

template <bool Log>
void softmax_backward_kernel(OpCall& c, DispatchKeySet) {
  const int64_t dim = check_softmax_backward(c);
  MIXT_CHECK_OP(c.in[1].is_cpu(), c, "the CPU kernel got a tensor on {}", c.in[1].device());
  const Tensor g = host::contiguous(c.in[0], c), y = host::contiguous(c.in[1], c);
  const Lines l = lines_of(y, dim);
  Tensor out = make_empty(y.sizes(), y.dtype(), y.device());
  visit_dtype<dtypes::kFloating>(y.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *pg = g.data_ptr<T>(), *py = y.data_ptr<T>();
    T* px = out.data_ptr<T>();
    if (l.inner >= kColumnsMin)
      softmax_backward_columns<Log>(l, pg, py, px);
    else
      for_each_work_line<T, 2>(l, {pg, py}, px, [](const auto& w, auto* gx, int64_t n) {
        vec::softmax_backward_row(w[0], w[1], gx, n, Log);
      });
  });
  set_output(c, out);
}

}  // namespace

void register_softmax_kernels() {
  register_kernel(OpId::softmax, DispatchKey::CPU, softmax_kernel<false>);
  register_kernel(OpId::log_softmax, DispatchKey::CPU, softmax_kernel<true>);
  register_kernel(OpId::softmax_backward, DispatchKey::CPU, softmax_backward_kernel<false>);
  register_kernel(OpId::log_softmax_backward, DispatchKey::CPU, softmax_backward_kernel<true>);
}

}  // namespace mixt::cpu
