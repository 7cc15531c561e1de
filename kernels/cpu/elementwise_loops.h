// Typed loops of the CPU elementwise kernels (unary, binary, compare, ternary):
// out[i] = f(in_0[i], ...) over broadcast, strided operands, with a contiguous
// fast path and OpenMP for large tensors. Values reach `f` in opmath precision
// and are rounded once on store.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/elementwise.h>
#include <mixt/kernels/common/elementwise_attrs.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/vec/convert.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/tensor.h>

namespace mixt::cpu {

// The storage value at `p`, widened to opmath.
template <class T>
MIXT_ALWAYS_INLINE opmath_t<T> load(const char* p) {
  return static_cast<opmath_t<T>>(*reinterpret_cast<const T*>(p));
}

// True for float16 and bfloat16, whose scalar conversions cost more than most functors.
template <class T>
inline constexpr bool is_narrow_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// True when a dense run of Map<Out, In...> converts in blocks (Note [Narrow floats in
// blocks]): some operand is float16 / bfloat16 and every operand is float32 or narrow
// (their opmath is float32). Bool results (comparisons) keep the scalar loop, which the
// compiler vectorises well enough there (a bf16 comparison took 0.85 ms scalar, 1.05 in blocks).
template <class Out, class... In>
inline constexpr bool converts_in_blocks_v =
    (is_narrow_float_v<Out> || (is_narrow_float_v<In> || ...)) &&
    ((std::is_same_v<In, float> || is_narrow_float_v<In>) && ...) &&
    (std::is_same_v<Out, float> || is_narrow_float_v<Out>);

// Note [Narrow floats in blocks]: the scalar loop converts each float16 / bfloat16 value on
// its own (a rounding with a NaN test per store). Dense runs instead widen blocks of each
// narrow input to float32 in vector lanes (vec/convert.h), apply the functor to float32
// values, and round a block of results at once: the same values reach the functor and the
// same rounding (vec's conversions give the scalar ones' bits), so the result has the scalar
// loop's bits; test_elementwise_lists checks dense against strided runs.
constexpr int64_t kConvertBlock = 512;

// The kConvertBlock-or-fewer float32 values of input `x` from `i0`: the input itself when
// float32, else widened into `buf`.
template <class T>
MIXT_ALWAYS_INLINE const float* block_of(const T* x, int64_t i0, int64_t m, float* buf) {
  if constexpr (std::is_same_v<T, float>) {
    return x + i0;
  } else {
    vec::to_float(x + i0, buf, static_cast<size_t>(m));
    return buf;
  }
}

// Loops writing storage type Out from inputs of storage types In...
template <class Out, class... In>
struct Map {
  // One run of `n` elements (dim 0 of the layout).
  template <class F, size_t... K>
  static MIXT_ALWAYS_INLINE void run(char* const* p, const int64_t* s, int64_t n, const F& f_in,
                                     std::index_sequence<K...>) {
    // A local copy of the functor: stores through `o` cannot alias its parameters (clamp's
    // bounds, an alpha), so the compiler keeps them in registers and vectorises the loop.
    const F f = f_in;
    if (s[0] == sizeof(Out) && ((s[K + 1] == sizeof(In)) && ...)) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const std::tuple<const In*...> x{reinterpret_cast<const In*>(p[K + 1])...};
      if constexpr (converts_in_blocks_v<Out, In...>) {
        alignas(64) float buf[sizeof...(In)][kConvertBlock];
        alignas(64) float res[kConvertBlock];
        for (int64_t i0 = 0; i0 < n; i0 += kConvertBlock) {
          const int64_t m = std::min(kConvertBlock, n - i0);
          const float* const w[sizeof...(In)] = {block_of(std::get<K>(x), i0, m, buf[K])...};
          float* r = is_narrow_float_v<Out> ? res : reinterpret_cast<float*>(o + i0);
          for (int64_t j = 0; j < m; ++j) r[j] = static_cast<float>(f(w[K][j]...));
          if constexpr (is_narrow_float_v<Out>) vec::from_float(res, o + i0, static_cast<size_t>(m));
        }
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = convert<Out>(f(static_cast<opmath_t<In>>(std::get<K>(x)[i])...));
      }
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = convert<Out>(f(load<In>(p[K + 1] + i * s[K + 1])...));
    }
  }

  // out = f(ins...) elementwise; each input broadcasts to out's shape.
  template <class F, class... Ts>
  static void apply(const Tensor& out, const F& f, const Ts&... ins) {
    static_assert(sizeof...(Ts) == sizeof...(In), "one tensor per input type");
    constexpr int kN = sizeof...(In) + 1;
    const OperandGeometry geom[kN] = {{&out.sizes(), &out.strides(), out.element_size()},
                                      {&ins.sizes(), &ins.strides(), ins.element_size()}...};
    const StridedLayout L = make_strided_layout(out.sizes(), geom);
    char* base[kN] = {static_cast<char*>(out.data_ptr()), static_cast<char*>(ins.data_ptr())...};
    // A bad MIXT_CPU_ISA raises here, before the threads start (isa.h).
    if constexpr (converts_in_blocks_v<Out, In...>) (void)vec::active_isa();
    for_each(L, base,
             [&](char** p, const int64_t* s, int64_t n) { run(p, s, n, f, std::index_sequence_for<In...>{}); });
  }
};

// Calls f(TypeTag<U>{}) with U the unsigned integer of `size` bytes (a dtype's element
// size: 1, 2, 4 or 8), for loops that move element bits without reading them as values.
template <class F>
void visit_size(int64_t size, F&& f) {
  switch (size) {
    case 1: f(TypeTag<uint8_t>{}); break;
    case 2: f(TypeTag<uint16_t>{}); break;
    case 4: f(TypeTag<uint32_t>{}); break;
    default: f(TypeTag<uint64_t>{}); break;
  }
}

// The bits of `a` where the byte `cond` is nonzero, else those of `b`, without a branch:
// a random condition mispredicts half of the branches (where and masked_fill with a
// branch took about 2 ns an element here), and the loop vectorises.
template <class U>
MIXT_ALWAYS_INLINE U select_bits(uint8_t cond, U a, U b) {
  const U take_a = static_cast<U>(U(0) - static_cast<U>(cond != 0));
  return static_cast<U>(b ^ ((a ^ b) & take_a));
}

// True when pred(v) holds for some element v (as opmath) of `t`, of storage type T.
template <class T, class P>
bool any_element(const Tensor& t, const P& pred) {
  std::atomic<bool> found{false};
  const OperandGeometry geom[1] = {{&t.sizes(), &t.strides(), t.element_size()}};
  const StridedLayout L = make_strided_layout(t.sizes(), geom);
  char* base[1] = {static_cast<char*>(t.data_ptr())};
  for_each(L, base, [&](char** p, const int64_t* s, int64_t n) {
    bool hit = false;
    for (int64_t i = 0; i < n; ++i) hit |= static_cast<bool>(pred(load<T>(p[0] + i * s[0])));
    if (hit) found.store(true, std::memory_order_relaxed);
  });
  return found.load(std::memory_order_relaxed);
}

// A Scalar as an opmath value of storage type T (integers wrap as a cast would).
template <class T>
opmath_t<T> scalar_value(const Scalar& s) {
  return scalar_arg_value<T>(scalar_arg(s));
}

// A Scalar rounded to storage type T, then widened to opmath.
template <class T>
opmath_t<T> scalar_value_rounded(const Scalar& s) {
  return static_cast<opmath_t<T>>(convert<T>(scalar_value<T>(s)));
}

// Turns scalar operand `i` of `e` into a 0-dim tensor of the compute dtype.
inline void materialize_scalar(Elementwise& e, int i) {
  TensorOptions opt;
  opt.dtype = e.compute;
  e.inputs[i] = scalar_tensor(e.scalars[i], opt);
  e.is_scalar[i] = false;
}

// Runs binary functor `op` (on opmath of T, writing Out) over e's operands: tensor with
// tensor, tensor with scalar or scalar with tensor. `rounded`: scalars are first rounded to T.
template <class Out, class T, class Op>
void run_binary(Elementwise& e, const Op& op, bool rounded = false) {
  using M = opmath_t<T>;
  if (e.is_scalar[0] && e.is_scalar[1]) materialize_scalar(e, 0);
  auto value = [&](int i) { return rounded ? scalar_value_rounded<T>(e.scalars[i]) : scalar_value<T>(e.scalars[i]); };
  if (e.is_scalar[1]) {
    const M b = value(1);
    Map<Out, T>::apply(
        e.out, [op, b](M a) { return op(a, b); }, e.inputs[0]);
  } else if (e.is_scalar[0]) {
    const M a = value(0);
    Map<Out, T>::apply(
        e.out, [op, a](M b) { return op(a, b); }, e.inputs[1]);
  } else {
    Map<Out, T, T>::apply(e.out, op, e.inputs[0], e.inputs[1]);
  }
}

}  // namespace mixt::cpu
