// copy_ on the CPU: broadcasting, conversion between every pair of dtypes, and
// overlap-safe copies within one storage.
#include <cstring>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/cpu/copy.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops.h>

namespace mixt::cpu {
namespace {

bool overlaps_differently(const Tensor& a, const Tensor& b) {
  return a.shares_storage(b) &&
         !(a.storage_offset() == b.storage_offset() && a.strides() == b.strides() && a.dtype() == b.dtype());
}

void copy_kernel(OpCall& c, DispatchKeySet) {
  Tensor& dst = c.in[0];
  MIXT_CHECK_OP(dst.is_cpu() && c.in[1].is_cpu(), c, "the CPU copy handles CPU tensors only");
  copy_into(dst, c.in[1], c);
  c.out[0] = dst;
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src_in, const OpCall& c) {
  MIXT_CHECK_OP(broadcast_shapes(src_in.sizes(), dst.sizes(), "copy_") == dst.sizes(), c,
                "source of shape {} cannot be broadcast to the destination's {}", src_in.sizes(), dst.sizes());
  check_writable(c, dst, "the destination");
  if (dst.numel() == 0) return;
  const Tensor src = overlaps_differently(dst, src_in) ? clone(src_in) : src_in;
  if (src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous() && src.numel() == dst.numel()) {
    if (src.data_ptr() != dst.data_ptr()) std::memmove(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(dst.nbytes()));
    return;
  }
  const OperandGeometry geom[2] = {{&dst.sizes(), &dst.strides(), dst.element_size()},
                                   {&src.sizes(), &src.strides(), src.element_size()}};
  const StridedLayout L = make_strided_layout(dst.sizes(), geom);
  char* base[2] = {static_cast<char*>(dst.data_ptr()), static_cast<char*>(src.data_ptr())};
  visit_dtype(dst.dtype(), "copy_", [&](auto to_tag) {
    using To = typename decltype(to_tag)::type;
    visit_dtype(src.dtype(), "copy_", [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      for_each(L, base, [](char** p, const int64_t* s, int64_t n) {
        char* out = p[0];
        const char* in = p[1];
        if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
          To* o = reinterpret_cast<To*>(out);
          const From* x = reinterpret_cast<const From*>(in);
          for (int64_t i = 0; i < n; ++i) o[i] = convert<To>(x[i]);
        } else {
          for (int64_t i = 0; i < n; ++i)
            *reinterpret_cast<To*>(out + i * s[0]) = convert<To>(*reinterpret_cast<const From*>(in + i * s[1]));
        }
      });
    });
  });
}

void register_copy_kernels() { register_kernel(OpId::copy_, DispatchKey::CPU, copy_kernel); }

}  // namespace mixt::cpu
