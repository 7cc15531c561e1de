// gelu_backward and silu_backward on the CPU (Note [Fused backward ops]): grad_input =
// grad_output * f'(self) in one pass over any strides, split across threads as the
// elementwise kernels are (loops.h). float32 and the narrower floats compute in float32
// vector lanes (kernels/cpu/vec/activation_backward.h; the narrow floats in blocks widened
// to float32, as map_unary.h does), float64 in double with backward_math.h's formulas.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/backward_math.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/kernels/cpu/vec/activation_backward.h>
#include <mixt/kernels/cpu/vec/convert.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cpu {
namespace {

using backward_math::ActivationGrad;

ActivationGrad grad_of(const OpCall& c) {
  if (c.op == OpId::silu_backward) return ActivationGrad::Silu;
  return c.attrs.get<attrs::Gelu>().approximate == GeluApprox::Tanh ? ActivationGrad::GeluTanh : ActivationGrad::GeluErf;
}

template <class T>
inline constexpr bool kVecConverts = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// m values of storage type T at `src` (`stride` bytes apart) as floats.
template <class T>
void load_block(const char* src, int64_t stride, float* buf, int64_t m) {
  if constexpr (kVecConverts<T>) {
    if (stride == sizeof(T)) return vec::to_float(reinterpret_cast<const T*>(src), buf, static_cast<size_t>(m));
  }
  for (int64_t i = 0; i < m; ++i) buf[i] = static_cast<float>(*reinterpret_cast<const T*>(src + i * stride));
}

// m floats stored to `dst` (`stride` bytes apart) as T, each rounded once.
template <class T>
void store_block(const float* buf, char* dst, int64_t stride, int64_t m) {
  if constexpr (kVecConverts<T>) {
    if (stride == sizeof(T)) return vec::from_float(buf, reinterpret_cast<T*>(dst), static_cast<size_t>(m));
  }
  for (int64_t i = 0; i < m; ++i) *reinterpret_cast<T*>(dst + i * stride) = convert<T>(buf[i]);
}

// out = g * f'(x) for storage type T (float, Half, BFloat16, the float8s): dense float32 runs go to the
// vector function directly, every other run through float blocks, so a value does not
// depend on the strides.
template <class T>
void run_vec(ActivationGrad op, const Tensor& out, const Tensor& g, const Tensor& x) {
  const OperandGeometry geom[3] = {{&out.sizes(), &out.strides(), out.element_size()},
                                   {&g.sizes(), &g.strides(), g.element_size()},
                                   {&x.sizes(), &x.strides(), x.element_size()}};
  const StridedLayout L = make_strided_layout(out.sizes(), geom);
  char* base[3] = {static_cast<char*>(out.data_ptr()), static_cast<char*>(g.data_ptr()),
                   static_cast<char*>(x.data_ptr())};
  for_each(L, base, [&](char** p, const int64_t* s, int64_t n) {
    if constexpr (std::is_same_v<T, float>) {
      if (s[0] == sizeof(float) && s[1] == sizeof(float) && s[2] == sizeof(float))
        return vec::activation_backward(op, reinterpret_cast<const float*>(p[1]), reinterpret_cast<const float*>(p[2]),
                                        reinterpret_cast<float*>(p[0]), static_cast<size_t>(n));
    }
    constexpr int64_t kBlock = 512;
    alignas(64) float gb[kBlock];
    alignas(64) float xb[kBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      const int64_t m = n - i0 < kBlock ? n - i0 : kBlock;
      load_block<T>(p[1] + i0 * s[1], s[1], gb, m);
      load_block<T>(p[2] + i0 * s[2], s[2], xb, m);
      vec::activation_backward(op, gb, xb, gb, static_cast<size_t>(m));
      store_block<T>(gb, p[0] + i0 * s[0], s[0], m);
    }
  });
}

void activation_backward_kernel(OpCall& c, DispatchKeySet) {
  check_activation_backward(c);
  const Tensor &g = c.in[0], &x = c.in[1];
  MIXT_CHECK_OP(x.is_cpu(), c, "the CPU kernel got a tensor on {}", x.device());
  const ActivationGrad op = grad_of(c);
  Tensor out = make_empty(x.sizes(), x.dtype(), x.device());
  visit_dtype<dtypes::kFloating>(x.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>) {
      Map<double, double, double>::apply(
          out, [op](double gv, double xv) { return backward_math::activation_grad(op, gv, xv); }, g, x);
    } else {
      run_vec<T>(op, out, g, x);
    }
  });
  if (c.out[0].defined())
    host::copy_into(c.out[0], out, c);
  else
    c.out[0] = out;
}

}  // namespace

void register_activation_backward_kernels() {
  register_kernel(OpId::gelu_backward, DispatchKey::CPU, activation_backward_kernel);
  register_kernel(OpId::silu_backward, DispatchKey::CPU, activation_backward_kernel);
}

}  // namespace mixt::cpu
