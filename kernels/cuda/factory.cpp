// Factories and fills on CUDA: empty, full, fill_, arange, linspace and eye. Values
// convert as on the CPU (Scalar::to<T>: a value outside an integer dtype's range raises,
// Note [Scalar conversions]); zero-bit fills of dense tensors use cudaMemsetAsync; arange
// and linspace use the CPU's formulas (kernels/common/factory_math.h).
#include <cstring>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/factory_checks.h>
#include <mixt/kernels/common/factory_math.h>
#include <mixt/kernels/cuda/factory.h>
#include <mixt/kernels/cuda/factory_launch.h>
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

// A dense result of attrs.dtype for the computed factories: the caller's out[0] when it is
// dense and of that dtype, else a new tensor (copied into out[0] by finish_output).
Tensor dense_output(OpCall& c, const Shape& sizes) {
  Tensor out = factory_output(c, sizes);
  if (out.is_contiguous() && out.dtype() == c.attrs.dtype) return out;
  return make_empty(sizes, c.attrs.dtype, c.attrs.device);
}

void finish_output(OpCall& c, const Tensor& result) {
  if (!c.out[0].defined() || c.out[0].is_same(result)) {
    c.out[0] = result;
    return;
  }
  const Tensor& dst = c.out[0];
  MIXT_CHECK_OP(cast_supported(result.dtype(), dst.dtype()), c,
                "writing a {} result into the {} output is not implemented on CUDA", result.dtype(), dst.dtype());
  DeviceGuard guard(dst.device().index(), op_name(c.op).data());
  move_elements(dst, result, current_native_stream(dst.device().index()), op_name(c.op).data());
}

void arange_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dtype = c.attrs.dtype;
  MIXT_CHECK_OP(dtype != kBool, c, "not implemented for dtype bool");
  const auto& at = c.attrs.get<attrs::Arange>();
  const bool exact = !at.start.is_floating() && !at.end.is_floating() && !at.step.is_floating();
  const int64_t n = arange_size(c, exact);
  Tensor out = dense_output(c, {n});
  ArangeArgs a;
  a.out = out.data_ptr();
  a.n = n;
  a.dtype = dtype;
  a.exact = exact && is_integral(dtype);
  if (a.exact) {
    a.start_int = static_cast<uint64_t>(at.start.to_int());
    a.step_int = static_cast<uint64_t>(at.step.to_int());
  }
  a.start = at.start.to_double();
  a.step = at.step.to_double();
  DeviceGuard guard(c.attrs.device.index(), "arange");
  check(launch_arange(a, current_native_stream(c.attrs.device.index())), "arange");
  finish_output(c, out);
}

void linspace_kernel(OpCall& c, DispatchKeySet) {
  const auto& at = c.attrs.get<attrs::Linspace>();
  MIXT_CHECK_OP(at.steps >= 0, c, "number of steps must be non-negative (got {})", at.steps);
  MIXT_CHECK_OP(c.attrs.dtype != kBool, c, "not implemented for dtype bool");
  Tensor out = dense_output(c, {at.steps});
  LinspaceArgs a;
  a.out = out.data_ptr();
  a.l = factory_math::make_linspace(at.start.to_double(), at.end.to_double(), at.steps);
  a.dtype = c.attrs.dtype;
  DeviceGuard guard(c.attrs.device.index(), "linspace");
  check(launch_linspace(a, current_native_stream(c.attrs.device.index())), "linspace");
  finish_output(c, out);
}

void eye_kernel(OpCall& c, DispatchKeySet) {
  const int64_t n = c.attrs.get<attrs::Eye>().rows, m = c.attrs.get<attrs::Eye>().cols;
  MIXT_CHECK_OP(n >= 0 && m >= 0, c, "eye needs non-negative sizes (got {} x {})", n, m);
  Tensor out = dense_output(c, {n, m});
  fill_tensor(out, Scalar(0), c);
  if (out.numel() > 0) {
    DeviceGuard guard(c.attrs.device.index(), "eye");
    check(launch_eye_diagonal(out.data_ptr(), n, m, static_cast<int>(out.element_size()),
                              value_bits(out.dtype(), Scalar(1)), current_native_stream(c.attrs.device.index())),
          "eye");
  }
  finish_output(c, out);
}

}  // namespace

Tensor dense_copy(const Tensor& t, cudaStream_t stream, const char* op) {
  Tensor out = make_empty(t.sizes(), t.dtype(), t.device());
  move_elements(out, t, stream, op);
  return out;
}

void write_output(OpCall& c, int i, const Tensor& result, cudaStream_t stream) {
  Tensor& out = c.out[static_cast<size_t>(i)];
  if (!out.defined()) {
    out = result;
    return;
  }
  MIXT_CHECK_OP(out.sizes() == result.sizes() && out.dtype() == result.dtype() && out.device() == result.device(), c,
                "output {} is {} but the result is {}", i, out.describe(), result.describe());
  check_writable(c, out, "the output");
  move_elements(out, result, stream, op_name(c.op).data());
}

int64_t read_int64(const int64_t* p, cudaStream_t stream, const char* op) {
  int64_t v = 0;
  check(cudaMemcpyAsync(&v, p, sizeof v, cudaMemcpyDeviceToHost, stream), op);
  check(cudaStreamSynchronize(stream), op);
  return v;
}

void register_factory_kernels() {
  register_kernel(OpId::empty, DispatchKey::CUDA, empty_kernel);
  register_kernel(OpId::full, DispatchKey::CUDA, full_kernel);
  register_kernel(OpId::fill_, DispatchKey::CUDA, fill_kernel);
  register_kernel(OpId::arange, DispatchKey::CUDA, arange_kernel);
  register_kernel(OpId::linspace, DispatchKey::CUDA, linspace_kernel);
  register_kernel(OpId::eye, DispatchKey::CUDA, eye_kernel);
}

}  // namespace mixt::cuda
