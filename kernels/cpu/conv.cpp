// im2col / col2im on the CPU for 1-D and 2-D windows (the unfold / fold of a
// convolution). Rows of the columns are ordered (channel, kernel position) as
// PyTorch's unfold, columns by output position in row-major order. 1-D windows
// run as 2-D ones of height 1. col2im sums overlapping windows in double and
// rounds once.
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/conv_geometry.h>
#include <mixt/kernels/common/conv_window.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cpu {
namespace {

using conv::for_each_tap;
using conv::Window;

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
  const conv::WindowCall call = conv::im2col_call(c, c.in[0]);
  const Window& w = call.w;
  const Tensor x = host::contiguous(c.in[0], c);
  const int64_t planes = x.size(0) * x.size(1), plane = w.plane(), taps = w.taps();
  Tensor out = make_empty(call.out_sizes, x.dtype(), x.device());
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
  const conv::WindowCall call = conv::col2im_call(c, c.in[0]);
  const Window& w = call.w;
  const Tensor cols = host::contiguous(c.in[0], c);
  const Shape& out_sizes = call.out_sizes;
  Tensor out = make_empty(out_sizes, cols.dtype(), cols.device());
  const int64_t planes = out_sizes[0] * out_sizes[1], plane = w.plane(), taps = w.taps();
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
