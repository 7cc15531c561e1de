// Device side of the binary arithmetic ops on CUDA: every row of MIXT_ELEMENTWISE_BINARY
// (kernels/common/elementwise_ops.h) through the loops of elementwise.cuh. The functors
// are the CPU's; device code is compiled with --fmad=false, so a + alpha * b rounds
// twice on both backends (Note [FMA policy]). Integer division by zero and integer
// powers with negative exponents are reported through the device error word.
// Split by dtype part (elementwise.cuh): binary.cu (kMainPart, and launch_binary),
// binary_narrow.cu (float16 and bfloat16; float8: Note [Float8 elementwise through float32]).
#pragma once

#include <mixt/kernels/cuda/elementwise.cuh>

namespace mixt::cuda {

// The row launcher of the binary family (for MIXT_DEFINE_ELEMENTWISE_PART).
struct BinaryRows {
  template <class Maker, EwRule Rule, uint32_t Set>
  static cudaError_t launch(const BinaryArgs& a, cudaStream_t stream) {
    if constexpr (Set == 0) {
      return cudaErrorInvalidValue;
    } else {
      return visit_dtype<Set>(a.e.compute, "binary", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using M = opmath_t<T>;
        const Input<T> x = make_input<T>(a.e.in[0]), y = make_input<T>(a.e.in[1]);
        return Maker::template with<T>(a.e.params, [&](auto f) {
          if constexpr (Maker::kCheck != RhsCheck::None && functors::is_int_v<M>) {
            const CheckedRhs<decltype(f), M> checked{f, Maker::kCheck, a.e.error_word};
            return launch_elementwise<T>(a.e, checked, stream, x, y);
          } else {
            return launch_elementwise<T>(a.e, f, stream, x, y);
          }
        });
      });
    }
  }
};

constexpr uint32_t kBinaryNarrowPart = kHalfPart;

cudaError_t launch_binary_main(const BinaryArgs& a, cudaStream_t stream);    // binary.cu
cudaError_t launch_binary_narrow(const BinaryArgs& a, cudaStream_t stream);  // binary_narrow.cu

}  // namespace mixt::cuda
