// Ternary elementwise kernels on the CPU: addcmul, addcdiv, lerp (and their
// in-place forms) and where, with broadcasting of all operands. The ops come from the
// shared list (kernels/common/elementwise_ops.h).
#include <cstring>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/kernels/common/elementwise_attrs.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cpu {
namespace {

// where(condition, a, b): condition must be bool; a and b promote to a common dtype;
// all three broadcast together.
void where_kernel(OpCall& c) {
  const Tensor& cond = c.in[0];
  const auto [shape, dtype] = where_result(c);
  for (int i = 0; i < 3; ++i)
    MIXT_CHECK_OP(c.in[i].is_cpu(), c, "expected CPU tensors, but input {} is on {}", i, c.in[i].device());
  const Tensor a = host::converted(c.in[1], dtype, c), b = host::converted(c.in[2], dtype, c);
  Tensor out = make_empty(shape, dtype, Device::cpu());
  // The elements' bits are selected (a and b already hold the result dtype), without a
  // branch; condition bytes are read as uint8, nonzero meaning true.
  const OperandGeometry geom[4] = {{&out.sizes(), &out.strides(), out.element_size()},
                                   {&cond.sizes(), &cond.strides(), cond.element_size()},
                                   {&a.sizes(), &a.strides(), a.element_size()},
                                   {&b.sizes(), &b.strides(), b.element_size()}};
  const StridedLayout L = make_strided_layout(out.sizes(), geom);
  char* base[4] = {static_cast<char*>(out.data_ptr()), static_cast<char*>(cond.data_ptr()),
                   static_cast<char*>(a.data_ptr()), static_cast<char*>(b.data_ptr())};
  visit_size(out.element_size(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    for_each(L, base, [](char** p, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(U) && s[1] == 1 && s[2] == sizeof(U) && s[3] == sizeof(U)) {
        U* o = reinterpret_cast<U*>(p[0]);
        const uint8_t* k = reinterpret_cast<const uint8_t*>(p[1]);
        const U* x = reinterpret_cast<const U*>(p[2]);
        const U* y = reinterpret_cast<const U*>(p[3]);
        for (int64_t i = 0; i < n; ++i) o[i] = select_bits(k[i], x[i], y[i]);
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        U x, y;
        std::memcpy(&x, p[2] + i * s[2], sizeof(U));
        std::memcpy(&y, p[3] + i * s[3], sizeof(U));
        const U r = select_bits(*reinterpret_cast<const uint8_t*>(p[1] + i * s[1]), x, y);
        std::memcpy(p[0] + i * s[0], &r, sizeof(U));
      }
    });
  });
  if (c.out[0].defined()) {  // an out= call: the result is copied (and cast) into it
    MIXT_CHECK_OP(c.out[0].sizes() == shape, c, "the output has shape {} but the broadcast shape is {}",
                  c.out[0].sizes(), shape);
    MIXT_CHECK_OP(can_cast(dtype, c.out[0].dtype()), c, "result type {} can't be cast to the output's dtype {}", dtype,
                  c.out[0].dtype());
    host::copy_into(c.out[0], out, c);
  } else {
    c.out[0] = out;
  }
}

// The kernel of a ternary row of the list. Scalar operands become 0-dim tensors, except
// a scalar third operand (lerp's weight), which is applied in opmath precision.
template <class Maker, EwRule Rule, uint32_t Set>
void ternary_kernel(OpCall& c, DispatchKeySet) {
  if constexpr (Rule == EwRule::Where) {
    where_kernel(c);
  } else {
    check_elementwise_call(c);
    Elementwise e = prepare_elementwise(c, 3, elementwise_options(c, 3, Rule, Set));
    const OpParams p = elementwise_params(c, e.compute);
    visit_dtype<Set>(e.compute, op_name(c.op).data(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      for (int i = 0; i < 2; ++i)
        if (e.is_scalar[i]) materialize_scalar(e, i);
      Maker::template with<T>(p, [&](auto op) {
        if (e.is_scalar[2]) {
          const M w = scalar_value<T>(e.scalars[2]);
          Map<T, T, T>::apply(
              e.out, [op, w](M a, M b) { return op(a, b, w); }, e.inputs[0], e.inputs[1]);
        } else {
          Map<T, T, T, T>::apply(e.out, op, e.inputs[0], e.inputs[1], e.inputs[2]);
        }
      });
    });
    finish_elementwise(c, e);
  }
}

}  // namespace

void register_ternary_kernels() {
  using namespace dtypes;
#define MIXT_EW_REGISTER(name, inplace, Maker, Rule, Set) \
  register_elementwise(OpId::name, inplace, DispatchKey::CPU, ternary_kernel<Maker, EwRule::Rule, Set>);
  MIXT_ELEMENTWISE_TERNARY(MIXT_EW_REGISTER)
#undef MIXT_EW_REGISTER
}

}  // namespace mixt::cpu
