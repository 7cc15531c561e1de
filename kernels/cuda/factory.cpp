// Factories and fills on CUDA: empty, full and fill_. Values convert as on the
// CPU (Scalar::to<T>: a value outside an integer dtype's range raises, Note
// [Scalar conversions]); zero-bit fills of dense tensors use cudaMemsetAsync.
#include <cstring>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

// The bits of `value` converted to storage type `dtype` (in the low bytes).
uint64_t value_bits(ScalarType dtype, const Scalar& value) {
  return visit_dtype(dtype, "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = value.to<T>();
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    return bits;
  });
}

// Writes `value` to every element of the CUDA tensor `t` (no internal overlap).
void fill_tensor(const Tensor& t, const Scalar& value, const OpCall& c) {
  const uint64_t bits = value_bits(t.dtype(), value);
  if (t.numel() == 0) return;
  DeviceGuard guard(t.device().index(), op_name(c.op).data());
  const cudaStream_t stream = current_native_stream(t.device().index());
  if (bits == 0 && t.is_contiguous()) {
    check(cudaMemsetAsync(t.data_ptr(), 0, static_cast<size_t>(t.nbytes()), stream), "fill_");
    return;
  }
  const OperandGeometry geom[1] = {{&t.sizes(), &t.strides(), t.element_size()}};
  check(launch_fill(make_launch_layout(t.sizes(), geom), t.data_ptr(), static_cast<int>(t.element_size()), bits,
                    stream),
        "fill_");
}

// The result tensor of a factory: the caller's out[0] (same shape) or a new one of `sizes` on attrs.device.
Tensor factory_output(OpCall& c, const Shape& sizes) {
  MIXT_CHECK_OP(c.attrs.device.is_cuda(), c, "the CUDA kernel cannot create a tensor on {}", c.attrs.device);
  if (!c.out[0].defined()) return make_empty(sizes, c.attrs.dtype, c.attrs.device);
  MIXT_CHECK_OP(c.out[0].sizes() == sizes && c.out[0].device() == c.attrs.device, c,
                "the output is {} but the factory makes shape {} on {}", c.out[0].describe(), sizes, c.attrs.device);
  return c.out[0];
}

void empty_kernel(OpCall& c, DispatchKeySet) { c.out[0] = factory_output(c, c.attrs.get<attrs::Sizes>().sizes); }

void full_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::Full>();
  MIXT_CHECK_OP(a.value.has_value(), c, "no fill value given");
  Tensor out = factory_output(c, a.sizes);
  fill_tensor(out, a.value, c);
  c.out[0] = out;
}

void fill_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  MIXT_CHECK_OP(t.is_cuda(), c, "the CUDA kernel got a tensor on {}", t.device());
  const Scalar& value = c.attrs.get<attrs::Value>().value;
  MIXT_CHECK_OP(value.has_value(), c, "no fill value given");
  check_writable(c, t, "the tensor");
  fill_tensor(t, value, c);
  c.out[0] = t;
}

}  // namespace

void register_factory_kernels() {
  register_kernel(OpId::empty, DispatchKey::CUDA, empty_kernel);
  register_kernel(OpId::full, DispatchKey::CUDA, full_kernel);
  register_kernel(OpId::fill_, DispatchKey::CUDA, fill_kernel);
}

}  // namespace mixt::cuda
