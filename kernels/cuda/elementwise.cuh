// The device loops of the CUDA elementwise kernels, mirroring the CPU's
// kernels/cpu/elementwise_loops.h: out[i] = f(in_0[i], ...) over broadcast, strided
// operands and scalars. Values reach `f` in opmath precision (fp_convert: exact
// widening) and are rounded once on store with the CPU's rules (convert.cuh).
// One kernel per (output type, functor, input types), three paths chosen at launch:
// - Vector: one dense run whose tensor operands are all 16-byte aligned: each thread
//   moves kVectorBytes of the widest operand per access (launch_geometry.h), the tail
//   one element at a time;
// - Dense: one dense run, unaligned: element i at i * element size;
// - Strided: any strides and broadcasts, offsets from kernels/common/layout_index.h.
// All are grid-stride loops of kBlockThreads threads (grid_for). For nvcc only.
#pragma once

#include <cstdint>
#include <utility>

#include <mixt/kernels/common/elementwise_ops.h>
#include <mixt/kernels/common/layout_index.h>
#include <mixt/kernels/cuda/convert.cuh>
#include <mixt/kernels/cuda/device_error.h>
#include <mixt/kernels/cuda/elementwise_launch.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {

// N elements of storage type T moved as one access (N * sizeof(T) is a power of two <= 16).
template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// One input of storage type T: a tensor (byte offsets from the layout) or a scalar in opmath.
template <class T>
struct Input {
  using M = opmath_t<T>;
  const char* data;
  M value;
  bool scalar;
  __device__ __forceinline__ M at(int64_t byte_offset) const {
    return scalar ? value : fp_convert<M>(*reinterpret_cast<const T*>(data + byte_offset));
  }
};

// Elements first .. first + N - 1 of a dense input, widened to opmath (one access per input).
template <class T, int N>
struct Loaded {
  opmath_t<T> v[N];
  __device__ __forceinline__ Loaded(const Input<T>& in, int64_t first) {
    if (in.scalar) {
#pragma unroll
      for (int j = 0; j < N; ++j) v[j] = in.value;
    } else {
      const Pack<T, N> p = *reinterpret_cast<const Pack<T, N>*>(in.data + first * static_cast<int64_t>(sizeof(T)));
#pragma unroll
      for (int j = 0; j < N; ++j) v[j] = fp_convert<opmath_t<T>>(p.v[j]);
    }
  }
};

enum class LoopKind : int8_t { Vector, Dense, Strided };

template <class Out, int N, class F, class... L>
__device__ __forceinline__ void apply_loaded(char* out, int64_t first, const F& f, const L&... loaded) {
  Pack<Out, N> o;
#pragma unroll
  for (int j = 0; j < N; ++j) o.v[j] = fp_convert<Out>(f(loaded.v[j]...));
  *reinterpret_cast<Pack<Out, N>*>(out + first * static_cast<int64_t>(sizeof(Out))) = o;
}

template <class Out, class F, size_t... K, class... T>
__device__ __forceinline__ void strided_element(char* out, const StridedLayout& L, int64_t i, const F& f,
                                                std::index_sequence<K...>, const Input<T>&... in) {
  int64_t off[1 + sizeof...(T)];
  element_offsets(L, i, off);
  *reinterpret_cast<Out*>(out + off[0]) = fp_convert<Out>(f(in.at(off[K + 1])...));
}

// out = f(in...) over L (operand 0 the output, operand k + 1 input k); N: the vector width.
template <class Out, int N, class F, class... T>
__global__ void __launch_bounds__(kBlockThreads)
    elementwise_kernel(StridedLayout L, LoopKind kind, char* out, F f, Input<T>... in) {
  if (kind == LoopKind::Strided) {
    for (int64_t i = grid_start(); i < L.numel; i += grid_step())
      strided_element<Out>(out, L, i, f, std::index_sequence_for<T...>{}, in...);
    return;
  }
  int64_t start = 0;
  if (kind == LoopKind::Vector) {
    const int64_t packs = L.numel / N;
    for (int64_t v = grid_start(); v < packs; v += grid_step())
      apply_loaded<Out, N>(out, v * N, f, Loaded<T, N>(in, v * N)...);
    start = packs * N;
  }
  for (int64_t i = start + grid_start(); i < L.numel; i += grid_step())
    reinterpret_cast<Out*>(out)[i] = fp_convert<Out>(f(in.at(i * static_cast<int64_t>(sizeof(T)))...));
}

template <class A>
constexpr A max_of(A a) {
  return a;
}
template <class A, class... B>
constexpr A max_of(A a, B... b) {
  const A m = max_of(b...);
  return a > m ? a : m;
}

// Input k of `a` as storage type T (a scalar becomes T's opmath value, rounded to T when asked).
template <class T>
Input<T> make_input(const ElementwiseInput& in) {
  using M = opmath_t<T>;
  M value{};
  if (in.is_scalar) value = in.round_scalar ? scalar_arg_rounded<T>(in.value) : scalar_arg_value<T>(in.value);
  return Input<T>{static_cast<const char*>(in.data), value, in.is_scalar};
}

// Queues out = f(in...) over a's layout on `stream`.
template <class Out, class F, class... T>
cudaError_t launch_elementwise(const ElementwiseArgs& a, const F& f, cudaStream_t stream, Input<T>... in) {
  const StridedLayout& L = a.layout.layout;
  if (L.numel == 0) return cudaSuccess;
  constexpr int64_t kWidest = max_of(static_cast<int64_t>(sizeof(Out)), static_cast<int64_t>(sizeof(T))...);
  constexpr int N = static_cast<int>(kVectorBytes / kWidest);
  const uintptr_t addresses[] = {reinterpret_cast<uintptr_t>(a.out),
                                 in.scalar ? uintptr_t{0} : reinterpret_cast<uintptr_t>(in.data)...};
  const int width = elementwise_vector_width(a.layout.contiguous, kWidest, addresses, 1 + sizeof...(T));
  const LoopKind kind = !a.layout.contiguous ? LoopKind::Strided : width > 1 ? LoopKind::Vector : LoopKind::Dense;
  const unsigned blocks = grid_for(kind == LoopKind::Vector ? (L.numel + N - 1) / N : L.numel);
  launch_kernel(elementwise_kernel<Out, N, F, T...>, {blocks, kBlockThreads, 0, stream}, L, kind, static_cast<char*>(a.out), f,
                                                                            in...);
  return cudaGetLastError();
}

// The device error a violated RhsCheck reports.
constexpr DeviceError rhs_check_error(RhsCheck check) {
  return check == RhsCheck::IntegerNonzero ? DeviceError::IntegerDivisionByZero : DeviceError::NegativeIntegerPower;
}

// f(a, b), except where b violates `check`: then the error is reported (the first one
// wins) and the result is 0 (Note [Device-side errors]).
template <class F, class M>
struct CheckedRhs {
  F f;
  RhsCheck check;
  uint32_t* word;
  __device__ __forceinline__ M operator()(M a, M b) const {
    if (rhs_violates(check, b)) {
      report_device_error(word, rhs_check_error(check));
      return M(0);
    }
    return f(a, b);
  }
};


// ---- one family's rows, split into translation units by dtype ----
// A family's rows times their dtypes are too many kernels for one translation unit to
// compile quickly (the budget is about a minute per .cu), so a family's .cu files each
// define one launcher for a part of the dtypes, and the family's launcher picks the part.
constexpr uint32_t kHalfPart = dtypes::bit(kFloat16) | dtypes::bit(kBFloat16);
constexpr uint32_t kFp8Part = dtypes::kFloat8;
constexpr uint32_t kMainPart = dtypes::kAll & ~kHalfPart & ~kFp8Part;  // bool, integers, float32, float64
// The compute dtypes the elementwise families have device kernels for: all but the float8
// formats, whose ops run the float32 kernels on widened operands (Note [Float8
// elementwise through float32], kernels/cuda/binary.cpp).
constexpr uint32_t kElementwiseDevicePart = kMainPart | kHalfPart;

// Defines `cudaError_t fn(const Args&, cudaStream_t)`: the rows of LIST (an X-macro of
// elementwise_ops.h, family enum Enum) for the compute dtypes of Part, each through
// Rows::launch<Maker, Rule, Set & Part> (Rows: the family's row launcher, a struct).
#define MIXT_DEFINE_ELEMENTWISE_PART(fn, Args, Enum, LIST, Rows, Part) \
  cudaError_t fn(const Args& a, cudaStream_t stream) {                 \
    using namespace dtypes;                                            \
    using RowsT = Rows;                                                \
    using EnumT = Enum;                                                \
    constexpr uint32_t kPart = Part;                                   \
    if (!contains(kPart, a.e.compute)) return cudaErrorInvalidValue;   \
    switch (a.op) { LIST(MIXT_EW_PART_CASE) }                          \
    return cudaErrorInvalidValue;                                      \
  }
#define MIXT_EW_PART_CASE(name, inplace, Maker, Rule, Set) \
  case EnumT::name: return RowsT::template launch<Maker, EwRule::Rule, (Set) & kPart>(a, stream);

}  // namespace mixt::cuda
