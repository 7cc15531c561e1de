// Scans on the CPU: cumsum and cumprod along one dim (the arithmetic of
// kernels/common/reducers.h, as the CUDA scan's). Floating inputs accumulate
// in double (as PyTorch's CPU kernels do for float) and round each output once;
// integer and bool inputs accumulate in wrapping int64 and give int64 unless a
// dtype is requested (the input is then converted to it first).
#include <algorithm>
#include <type_traits>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/common/reducers.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cpu {
namespace {

// The scanned dim (n elements) and the other dims (row-major, innermost first,
// coalesced). Input strides in bytes, output strides in elements.
struct ScanGeometry {
  int nouter = 0;
  int64_t sizes[kMaxDims] = {}, in_strides[kMaxDims] = {}, out_strides[kMaxDims] = {};
  int64_t outer_numel = 1;
  int64_t n = 1, in_stride = 0, out_stride = 0;
};

ScanGeometry make_scan_geometry(const Tensor& in, const Shape& out_strides, int dim) {
  ScanGeometry g;
  const int64_t es = in.element_size();
  for (int d = in.dim() - 1; d >= 0; --d) {
    const int64_t size = in.sizes()[d], is = in.strides()[d] * es, os = out_strides[d];
    if (d == dim) {
      g.n = size, g.in_stride = is, g.out_stride = os;
      continue;
    }
    g.outer_numel *= size;
    if (size == 1) continue;
    const int k = g.nouter - 1;
    if (k >= 0 && is == g.in_strides[k] * g.sizes[k] && os == g.out_strides[k] * g.sizes[k]) {
      g.sizes[k] *= size;
    } else {
      g.sizes[g.nouter] = size, g.in_strides[g.nouter] = is, g.out_strides[g.nouter] = os, ++g.nouter;
    }
  }
  return g;
}

// Input byte offset and output element offset of outer position `p`.
void outer_offsets(const ScanGeometry& g, int64_t p, int64_t& in_off, int64_t& out_off) {
  in_off = out_off = 0;
  for (int k = 0; k < g.nouter && p > 0; ++k) {
    const int64_t i = p % g.sizes[k];
    in_off += i * g.in_strides[k];
    out_off += i * g.out_strides[k];
    p /= g.sizes[k];
  }
}

// Neighbouring lines scanned together when the scanned dim is not the innermost in memory.
constexpr int64_t kScanBlock = 64;

// Scans lines [pb, pe) of `in` (storage T) with `op` into `out`, written by
// store(out, element offset, acc).
template <class T, class Acc, class Op, class Store>
void scan_lines(const ScanGeometry& g, const char* in, Acc init, Op op, Store& store, int64_t pb, int64_t pe) {
  const bool blocked = g.nouter > 0 && g.in_strides[0] < g.in_stride;
  int64_t p = pb;
  while (p < pe) {
    const int64_t b = blocked ? std::min({kScanBlock, pe - p, g.sizes[0] - p % g.sizes[0]}) : 1;
    int64_t in_off, out_off;
    outer_offsets(g, p, in_off, out_off);
    Acc acc[kScanBlock];
    for (int64_t j = 0; j < b; ++j) acc[j] = init;
    const int64_t is0 = g.nouter > 0 ? g.in_strides[0] : 0, os0 = g.nouter > 0 ? g.out_strides[0] : 0;
    for (int64_t k = 0; k < g.n; ++k) {
      const char* x = in + in_off + k * g.in_stride;
      const int64_t o = out_off + k * g.out_stride;
      for (int64_t j = 0; j < b; ++j) {
        acc[j] = op(acc[j], static_cast<Acc>(static_cast<opmath_t<T>>(*reinterpret_cast<const T*>(x + j * is0))));
        store(o + j * os0, acc[j]);
      }
    }
    p += b;
  }
}

// cumsum (Prod = false) / cumprod along a dim.
template <bool Prod>
void scan_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& in = c.in[0];
  MIXT_CHECK_OP(in.is_cpu(), c, "the CPU kernel got a tensor on {}", in.device());
  const int dim = scan_dim(c, c.attrs.get<attrs::Dim>().dim, in.dim());
  const ScalarType out_dtype = sum_result_dtype(in.dtype(), c.attrs.dtype);
  const Tensor x = c.attrs.dtype == ScalarType::Undefined ? in : host::converted(in, c.attrs.dtype, c);
  Tensor out = make_empty(x.sizes(), out_dtype, x.device());
  if (x.numel() > 0) {
    const ScanGeometry g = make_scan_geometry(x, out.strides(), dim);
    const char* base = static_cast<const char*>(x.data_ptr());
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, g.n));
    visit_dtype(x.dtype(), op_name(c.op).data(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<opmath_t<T>>) {
        T* o = out.data_ptr<T>();
        auto store = [o](int64_t i, double a) { o[i] = convert<T>(a); };
        auto op = [](double a, double v) { return Prod ? reducers::mul(a, v) : reducers::add(a, v); };
        parallel_for(g.outer_numel, grain,
                     [&](int64_t pb, int64_t pe) { scan_lines<T>(g, base, Prod ? 1.0 : 0.0, op, store, pb, pe); });
      } else {
        // Wrapping int64 arithmetic; out is int64 or the input's own type when requested.
        const bool wide = out_dtype != x.dtype();
        void* o = out.data_ptr();
        auto store = [o, wide](int64_t i, uint64_t a) {
          if (wide) static_cast<int64_t*>(o)[i] = static_cast<int64_t>(a);
          else static_cast<T*>(o)[i] = convert<T>(static_cast<int64_t>(a));
        };
        auto op = [](uint64_t a, uint64_t v) { return Prod ? reducers::mul(a, v) : reducers::add(a, v); };
        parallel_for(g.outer_numel, grain, [&](int64_t pb, int64_t pe) {
          scan_lines<T>(g, base, uint64_t{Prod ? 1u : 0u}, op, store, pb, pe);
        });
      }
    });
  }
  if (!c.out[0].defined()) {
    c.out[0] = out;
    return;
  }
  Tensor& given = c.out[0];
  MIXT_CHECK_OP(given.is_cpu() && given.sizes() == out.sizes() && can_cast(out.dtype(), given.dtype()), c,
                "the output ({}) cannot hold a result of {}", given.describe(), out.describe());
  host::copy_into(given, out, c);
}

}  // namespace

void register_scan_kernels() {
  register_kernel(OpId::cumsum, DispatchKey::CPU, scan_kernel<false>);
  register_kernel(OpId::cumprod, DispatchKey::CPU, scan_kernel<true>);
}

}  // namespace mixt::cpu
