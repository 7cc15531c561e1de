// im2col / col2im on the CPU for 1-D and 2-D windows (the unfold / fold of a
// convolution). Rows of the columns are ordered (channel, kernel position) as
// PyTorch's unfold, columns by output position in row-major order. 1-D windows
// run as 2-D ones of height 1. col2im sums overlapping windows in double and
// rounds once.
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/conv_geometry.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cpu {
namespace {

// The window geometry in 2-D (a 1-D window has kernel 1, stride 1, padding 0 and input 1 along h).
struct Window {
  int rank = 2;
  int64_t k[2] = {1, 1}, s[2] = {1, 1}, p[2] = {0, 0}, d[2] = {1, 1};
  int64_t in[2] = {1, 1}, out[2] = {1, 1};
  int64_t kernel_numel() const { return k[0] * k[1]; }
  int64_t blocks() const { return out[0] * out[1]; }
};

// The window attributes of im2col / col2im: one value per spatial dim each.
struct WindowAttrs {
  const Shape &kernel, &stride, &padding, &dilation;
};
WindowAttrs window_attrs(const OpCall& c) {
  if (c.op == OpId::col2im) {
    const auto& a = c.attrs.get<attrs::Col2im>();
    return {a.kernel, a.stride, a.padding, a.dilation};
  }
  const auto& a = c.attrs.get<attrs::Im2col>();
  return {a.kernel, a.stride, a.padding, a.dilation};
}

// The number of spatial dims of the window: 1 or 2, the same for every attribute.
int window_rank(const OpCall& c) {
  const WindowAttrs a = window_attrs(c);
  const int r = a.kernel.size();
  MIXT_CHECK_OP((r == 1 || r == 2) && a.stride.size() == r && a.padding.size() == r && a.dilation.size() == r, c,
                "expected kernel, stride, padding and dilation for 1 or 2 spatial dims, got {}, {}, {}, {}", a.kernel,
                a.stride, a.padding, a.dilation);
  return r;
}

// The window of the attributes over an image of `spatial` size.
Window make_window(const OpCall& c, const Shape& spatial) {
  const WindowAttrs a = window_attrs(c);
  const int r = window_rank(c);
  MIXT_CHECK_OP(spatial.size() == r, c, "expected {} spatial sizes for a {}-D window, got {}", r, r, spatial);
  Window w;
  w.rank = r;
  for (int i = 0; i < r; ++i) {
    const int j = i + 2 - r;  // 1-D windows fill the second slot
    w.k[j] = a.kernel[i], w.s[j] = a.stride[i], w.p[j] = a.padding[i], w.d[j] = a.dilation[i], w.in[j] = spatial[i];
    w.out[j] = window_output_size(c, w.in[j], w.k[j], w.s[j], w.p[j], w.d[j]);
  }
  // Every later product of these sizes is bounded by the two checked here.
  const char* op = op_name(c.op).data();
  checked_mul(checked_mul(w.k[0], w.k[1], op), checked_mul(w.out[0], w.out[1], op), op);
  checked_mul(w.in[0], w.in[1], op);
  return w;
}

// Visits every (kernel position, output position) pair of one channel plane with the input index or -1 when it
// falls into the padding: f(col_index, input_index).
template <class F>
void for_each_tap(const Window& w, F&& f) {
  int64_t col = 0;
  for (int64_t ki = 0; ki < w.k[0]; ++ki)
    for (int64_t kj = 0; kj < w.k[1]; ++kj)
      for (int64_t oi = 0; oi < w.out[0]; ++oi) {
        const int64_t ii = oi * w.s[0] - w.p[0] + ki * w.d[0];
        const bool row_in = ii >= 0 && ii < w.in[0];
        for (int64_t oj = 0; oj < w.out[1]; ++oj, ++col) {
          const int64_t ij = oj * w.s[1] - w.p[1] + kj * w.d[1];
          f(col, row_in && ij >= 0 && ij < w.in[1] ? ii * w.in[1] + ij : -1);
        }
      }
}

void check_input(const OpCall& c, const Tensor& t) {
  MIXT_CHECK_OP(t.is_cpu(), c, "the CPU kernel got a tensor on {}", t.device());
  MIXT_CHECK_OP(is_floating(t.dtype()), c, "expected a floating input, got {}", t.dtype());
}

void finish(OpCall& c, const Tensor& out) {
  if (c.out[0].defined())
    host::copy_into(c.out[0], out, c);
  else
    c.out[0] = out;
}

// x [N, C, *spatial] -> [N, C * prod(kernel), L].
void im2col_kernel(OpCall& c, DispatchKeySet) {
  check_input(c, c.in[0]);
  const int r = window_rank(c);
  MIXT_CHECK_OP(c.in[0].dim() == r + 2, c, "expected an input [N, C, *spatial] with {} spatial dims, got shape {}", r,
                c.in[0].sizes());
  const Tensor x = host::contiguous(c.in[0], c);
  Shape spatial;
  for (int i = 2; i < x.dim(); ++i) spatial.push_back(x.size(i));
  const Window w = make_window(c, spatial);
  const int64_t planes = x.size(0) * x.size(1), plane = w.in[0] * w.in[1], taps = w.kernel_numel() * w.blocks();
  Tensor out = make_empty({x.size(0), checked_mul(x.size(1), w.kernel_numel(), "im2col"), w.blocks()}, x.dtype(),
                          x.device());
  visit_dtype<dtypes::kFloating>(x.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data_ptr<T>();
    T* py = out.data_ptr<T>();
    parallel_for(planes, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, taps)), [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl) {
        const T* src = px + pl * plane;
        T* dst = py + pl * taps;
        for_each_tap(w, [&](int64_t col, int64_t i) { dst[col] = i >= 0 ? src[i] : convert<T>(0.0); });
      }
    });
  });
  finish(c, out);
}

// cols [N, C * prod(kernel), L] -> [N, C, *spatial], summing overlapping windows.
void col2im_kernel(OpCall& c, DispatchKeySet) {
  check_input(c, c.in[0]);
  const Tensor cols = host::contiguous(c.in[0], c);
  const Shape& output_size = c.attrs.get<attrs::Col2im>().output_size;
  const Window w = make_window(c, output_size);
  MIXT_CHECK_OP(cols.dim() == 3, c, "expected columns [N, C * prod(kernel), L], got shape {}", cols.sizes());
  const int64_t kn = w.kernel_numel();
  MIXT_CHECK_OP(cols.size(1) % kn == 0, c, "dim 1 of the columns ({}) is not a multiple of the kernel size {}",
                cols.size(1), kn);
  MIXT_CHECK_OP(cols.size(2) == w.blocks(), c,
                "the columns hold {} blocks but the output size {} with this window gives {}", cols.size(2),
                output_size, w.blocks());
  Shape out_sizes{cols.size(0), cols.size(1) / kn};
  for (int64_t s : output_size) out_sizes.push_back(s);
  Tensor out = make_empty(out_sizes, cols.dtype(), cols.device());
  const int64_t planes = out_sizes[0] * out_sizes[1], plane = w.in[0] * w.in[1], taps = kn * w.blocks();
  visit_dtype<dtypes::kFloating>(cols.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = cols.data_ptr<T>();
    T* py = out.data_ptr<T>();
    parallel_for(planes, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, taps)), [&](int64_t b, int64_t e) {
      std::vector<double> acc(static_cast<size_t>(plane));
      for (int64_t pl = b; pl < e; ++pl) {
        std::fill(acc.begin(), acc.end(), 0.0);
        const T* src = px + pl * taps;
        for_each_tap(w, [&](int64_t col, int64_t i) {
          if (i >= 0) acc[static_cast<size_t>(i)] += static_cast<double>(src[col]);
        });
        for (int64_t i = 0; i < plane; ++i) py[pl * plane + i] = convert<T>(acc[static_cast<size_t>(i)]);
      }
    });
  });
  finish(c, out);
}

}  // namespace

void register_conv_kernels() {
  register_kernel(OpId::im2col, DispatchKey::CPU, im2col_kernel);
  register_kernel(OpId::col2im, DispatchKey::CPU, col2im_kernel);
}

}  // namespace mixt::cpu
