// The vector path of the unary elementwise kernels (kernels/cpu/unary.cpp): which ops
// have one (vec_unary_op), and the loop that runs it over a strided layout; and the
// binary loop of pow's (kernels/cpu/binary.cpp). Every
// layout goes through the same vector function (contiguous float32 runs directly,
// other runs in blocks gathered to float32), so a tensor's values do not depend on
// its strides.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>

#include <mixt/dispatcher/op.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/elementwise.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/common/strided_layout.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/vec/convert.h>
#include <mixt/kernels/cpu/vec/unary_math.h>
#include <mixt/runtime/float_types.h>
#include <mixt/runtime/tensor.h>

namespace mixt::cpu {

// The vector function of unary op `op` as an int (a vec::UnaryMath), or -1 for none.
// gelu is GeluErf here; its kernel picks GeluTanh for approximate="tanh". round is Round,
// which its kernel takes only without decimals.
constexpr int vec_unary_op(OpId op) {
  using vec::UnaryMath;
  switch (op) {
    case OpId::exp: return static_cast<int>(UnaryMath::Exp);
    case OpId::expm1: return static_cast<int>(UnaryMath::Expm1);
    case OpId::log: return static_cast<int>(UnaryMath::Log);
    case OpId::log1p: return static_cast<int>(UnaryMath::Log1p);
    case OpId::log2: return static_cast<int>(UnaryMath::Log2);
    case OpId::log10: return static_cast<int>(UnaryMath::Log10);
    case OpId::sin: return static_cast<int>(UnaryMath::Sin);
    case OpId::cos: return static_cast<int>(UnaryMath::Cos);
    case OpId::tanh: return static_cast<int>(UnaryMath::Tanh);
    case OpId::sigmoid: return static_cast<int>(UnaryMath::Sigmoid);
    case OpId::silu: return static_cast<int>(UnaryMath::Silu);
    case OpId::softplus: return static_cast<int>(UnaryMath::Softplus);
    case OpId::erf: return static_cast<int>(UnaryMath::Erf);
    case OpId::gelu: return static_cast<int>(UnaryMath::GeluErf);
    case OpId::sqrt: return static_cast<int>(UnaryMath::Sqrt);
    case OpId::rsqrt: return static_cast<int>(UnaryMath::Rsqrt);
    case OpId::reciprocal: return static_cast<int>(UnaryMath::Reciprocal);
    case OpId::mish: return static_cast<int>(UnaryMath::Mish);
    case OpId::floor: return static_cast<int>(UnaryMath::Floor);
    case OpId::ceil: return static_cast<int>(UnaryMath::Ceil);
    case OpId::trunc: return static_cast<int>(UnaryMath::Trunc);
    case OpId::round: return static_cast<int>(UnaryMath::Round);  // without decimals (the kernel checks)
    case OpId::frac: return static_cast<int>(UnaryMath::Frac);
    case OpId::leaky_relu: return static_cast<int>(UnaryMath::LeakyRelu);
    case OpId::elu: return static_cast<int>(UnaryMath::Elu);
    case OpId::selu: return static_cast<int>(UnaryMath::Elu);  // the kernel reads the constants from selu's functor
    default: return -1;
  }
}

// True for the storage types the vector path takes.
template <class T>
inline constexpr bool kVecUnaryType =
    std::is_same_v<T, float> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// out = op(in) elementwise, both of storage type T (float, Half or BFloat16); `in`
// broadcasts to out's shape.
template <class T>
void map_unary_vec(const Tensor& out, const Tensor& in, vec::UnaryMath op, const vec::UnaryMathParams& p) {
  const OperandGeometry geom[2] = {{&out.sizes(), &out.strides(), out.element_size()},
                                   {&in.sizes(), &in.strides(), in.element_size()}};
  const StridedLayout L = make_strided_layout(out.sizes(), geom);
  char* base[2] = {static_cast<char*>(out.data_ptr()), static_cast<char*>(in.data_ptr())};
  for_each(L, base, [&](char** ptr, const int64_t* s, int64_t n) {
    const bool dense = s[0] == sizeof(T) && s[1] == sizeof(T);
    if constexpr (std::is_same_v<T, float>) {
      if (dense) return vec::unary_math(op, p, reinterpret_cast<const float*>(ptr[1]), reinterpret_cast<float*>(ptr[0]), n);
    }
    constexpr int64_t kBlock = 512;
    alignas(64) float buf[kBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      const int64_t m = n - i0 < kBlock ? n - i0 : kBlock;
      const char* src = ptr[1] + i0 * s[1];
      char* dst = ptr[0] + i0 * s[0];
      if constexpr (!std::is_same_v<T, float>) {
        if (s[1] == sizeof(T)) vec::to_float(reinterpret_cast<const T*>(src), buf, m);
      }
      if (s[1] != sizeof(T) || std::is_same_v<T, float>)
        for (int64_t i = 0; i < m; ++i) buf[i] = static_cast<float>(*reinterpret_cast<const T*>(src + i * s[1]));
      vec::unary_math(op, p, buf, buf, m);
      if constexpr (!std::is_same_v<T, float>) {
        if (s[0] == sizeof(T)) {
          vec::from_float(buf, reinterpret_cast<T*>(dst), m);
          continue;
        }
      }
      for (int64_t i = 0; i < m; ++i) *reinterpret_cast<T*>(dst + i * s[0]) = convert<T>(buf[i]);
    }
  });
}

// out = fn(a, b) elementwise for storage type T (float, Half or BFloat16), where fn maps
// float32 arrays (fn(a, b, out, m)). Each operand is a tensor of T broadcast to out's
// shape or, where e.is_scalar, a scalar value. As map_unary_vec: every layout goes
// through fn in float32 blocks, so values do not depend on strides.
template <class T, class Fn>
void map_binary_vec(const Elementwise& e, Fn&& fn) {
  OperandGeometry geom[3] = {{&e.out.sizes(), &e.out.strides(), e.out.element_size()}, {}, {}};
  char* base[3] = {static_cast<char*>(e.out.data_ptr()), nullptr, nullptr};
  int slot[2] = {-1, -1};  // operand index of input j in the layout; -1: a scalar
  float scalar[2] = {0, 0};
  int k = 1;
  for (int j = 0; j < 2; ++j) {
    if (e.is_scalar[j]) {
      scalar[j] = static_cast<float>(scalar_value<T>(e.scalars[j]));
      continue;
    }
    const Tensor& t = e.inputs[j];
    geom[k] = {&t.sizes(), &t.strides(), t.element_size()};
    base[k] = static_cast<char*>(t.data_ptr());
    slot[j] = k++;
  }
  const StridedLayout L = make_strided_layout(e.out.sizes(), std::span<const OperandGeometry>(geom, static_cast<size_t>(k)));
  for_each(L, base, [&](char** ptr, const int64_t* s, int64_t n) {
    constexpr int64_t kBlock = 512;
    alignas(64) float in[2][kBlock], res[kBlock];
    for (int j = 0; j < 2; ++j)  // a scalar fills only what this run reads (runs may be short)
      if (slot[j] < 0) std::fill(in[j], in[j] + std::min(n, kBlock), scalar[j]);
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      const int64_t m = n - i0 < kBlock ? n - i0 : kBlock;
      for (int j = 0; j < 2; ++j) {
        if (slot[j] < 0) continue;
        const int64_t st = s[slot[j]];
        const char* src = ptr[slot[j]] + i0 * st;
        if constexpr (!std::is_same_v<T, float>) {
          if (st == static_cast<int64_t>(sizeof(T))) {
            vec::to_float(reinterpret_cast<const T*>(src), in[j], static_cast<size_t>(m));
            continue;
          }
        }
        for (int64_t i = 0; i < m; ++i) in[j][i] = static_cast<float>(*reinterpret_cast<const T*>(src + i * st));
      }
      fn(in[0], in[1], res, static_cast<size_t>(m));
      char* dst = ptr[0] + i0 * s[0];
      if constexpr (!std::is_same_v<T, float>) {
        if (s[0] == static_cast<int64_t>(sizeof(T))) {
          vec::from_float(res, reinterpret_cast<T*>(dst), static_cast<size_t>(m));
          continue;
        }
      }
      for (int64_t i = 0; i < m; ++i) *reinterpret_cast<T*>(dst + i * s[0]) = convert<T>(res[i]);
    }
  });
}

}  // namespace mixt::cpu
