// Factory kernels on the CPU (empty, full, arange, linspace, eye) and fill_.
// Values are computed in double (int64 for integer aranges) and rounded once on store.
#include <cmath>
#include <cstring>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/factory_checks.h>
#include <mixt/kernels/common/factory_math.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cpu {
namespace {

// Fills every element of `t` (any strides, no internal overlap) with the bits of one U.
template <class U>
void fill_as(const Tensor& t, const void* value) {
  U v;
  std::memcpy(&v, value, sizeof(U));
  if (t.is_contiguous()) {
    U* p = static_cast<U*>(t.data_ptr());
    parallel_for(t.numel(), kParallelGrain, [&](int64_t b, int64_t e) { std::fill(p + b, p + e, v); });
    return;
  }
  const OperandGeometry geom[1] = {{&t.sizes(), &t.strides(), t.element_size()}};
  const StridedLayout L = make_strided_layout(t.sizes(), geom);
  char* base[1] = {static_cast<char*>(t.data_ptr())};
  for_each(L, base, [&](char** p, const int64_t* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], &v, sizeof(U));
  });
}

// Fills `t` with `value` converted to its dtype (floats truncate into integers; a value
// outside an integer dtype's range raises: Note [Scalar conversions]).
void fill_value(const Tensor& t, const Scalar& value) {
  if (t.numel() == 0) return;
  alignas(8) unsigned char bytes[8];
  visit_dtype(t.dtype(), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = value.to<T>();
    std::memcpy(bytes, &v, sizeof(T));
  });
  switch (t.element_size()) {
    case 1: fill_as<uint8_t>(t, bytes); break;
    case 2: fill_as<uint16_t>(t, bytes); break;
    case 4: fill_as<uint32_t>(t, bytes); break;
    default: fill_as<uint64_t>(t, bytes); break;
  }
}

// A fresh contiguous tensor for a factory's result.
Tensor new_output(OpCall& c, const Shape& sizes) {
  MIXT_CHECK_OP(c.attrs.device.is_cpu(), c, "the CPU kernel cannot create a tensor on {}", c.attrs.device);
  return make_empty(sizes, c.attrs.dtype, c.attrs.device);
}

// Hands `result` back: as out[0], or copied into a caller-given out[0] of the same shape.
void set_output(OpCall& c, const Tensor& result) {
  if (!c.out[0].defined()) {
    c.out[0] = result;
    return;
  }
  MIXT_CHECK_OP(c.out[0].sizes() == result.sizes(), c, "the output has shape {} but the result has shape {}",
                c.out[0].sizes(), result.sizes());
  host::copy_into(c.out[0], result, c);
}

// empty: an uninitialized tensor of the given sizes.
void empty_kernel(OpCall& c, DispatchKeySet) { set_output(c, new_output(c, c.attrs.get<attrs::Sizes>().sizes)); }

// full: a new tensor of the given sizes filled with `value`.
void full_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::Full>();
  MIXT_CHECK_OP(a.value.has_value(), c, "no fill value given");
  Tensor out = new_output(c, a.sizes);
  fill_value(out, a.value);
  set_output(c, out);
}

// fill_: writes s0 into every element of the (possibly strided) tensor.
void fill_kernel(OpCall& c, DispatchKeySet) {
  Tensor self = c.out[0].defined() ? c.out[0] : c.in[0];
  MIXT_CHECK_OP(self.is_cpu(), c, "the CPU kernel got a tensor on {}", self.device());
  const Scalar& value = c.attrs.get<attrs::Value>().value;
  MIXT_CHECK_OP(value.has_value(), c, "no fill value given");
  check_writable(c, self, "the tensor");
  fill_value(self, value);
  c.out[0] = self;
}

// arange: start + i * step for i < ceil((end - start) / step).
void arange_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dtype = c.attrs.dtype;
  MIXT_CHECK_OP(dtype != kBool, c, "not implemented for dtype bool");
  const auto& a = c.attrs.get<attrs::Arange>();
  const bool exact = !a.start.is_floating() && !a.end.is_floating() && !a.step.is_floating();
  const int64_t n = arange_size(c, exact);
  Tensor out = new_output(c, {n});
  visit_dtype<dtypes::kNumeric>(dtype, "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    if (exact && std::is_integral_v<T>) {
      // Unsigned arithmetic: the wrap-around of out-of-range values is defined.
      const auto start = static_cast<uint64_t>(a.start.to_int()), step = static_cast<uint64_t>(a.step.to_int());
      parallel_for(n, kParallelGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) p[i] = convert<T>(factory_math::arange_int(start, step, i));
      });
    } else {
      const double start = a.start.to_double(), step = a.step.to_double();
      parallel_for(n, kParallelGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) p[i] = convert<T>(factory_math::arange_double(start, step, i));
      });
    }
  });
  set_output(c, out);
}

// linspace: `steps` values from start to end inclusive.
void linspace_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::Linspace>();
  const int64_t steps = a.steps;
  MIXT_CHECK_OP(steps >= 0, c, "number of steps must be non-negative (got {})", steps);
  MIXT_CHECK_OP(c.attrs.dtype != kBool, c, "not implemented for dtype bool");
  Tensor out = new_output(c, {steps});
  const factory_math::Linspace l = factory_math::make_linspace(a.start.to_double(), a.end.to_double(), steps);
  visit_dtype<dtypes::kNumeric>(c.attrs.dtype, "linspace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    parallel_for(steps, kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = convert<T>(factory_math::linspace_value(l, i));
    });
  });
  set_output(c, out);
}

// eye: an n x m matrix with ones on the diagonal.
void eye_kernel(OpCall& c, DispatchKeySet) {
  const int64_t n = c.attrs.get<attrs::Eye>().rows, m = c.attrs.get<attrs::Eye>().cols;
  MIXT_CHECK_OP(n >= 0 && m >= 0, c, "eye needs non-negative sizes (got {} x {})", n, m);
  Tensor out = new_output(c, {n, m});
  fill_value(out, Scalar(0));
  visit_dtype(c.attrs.dtype, "eye", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    const T one = convert<T>(int64_t{1});
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = one;
  });
  set_output(c, out);
}

}  // namespace

void register_factory_kernels() {
  register_kernel(OpId::empty, DispatchKey::CPU, empty_kernel);
  register_kernel(OpId::full, DispatchKey::CPU, full_kernel);
  register_kernel(OpId::arange, DispatchKey::CPU, arange_kernel);
  register_kernel(OpId::linspace, DispatchKey::CPU, linspace_kernel);
  register_kernel(OpId::eye, DispatchKey::CPU, eye_kernel);
  register_kernel(OpId::fill_, DispatchKey::CPU, fill_kernel);
}

}  // namespace mixt::cpu
