// Device-side conversions between the storage types, bit-identical to
// the CPU's (runtime/float_types.h, kernels/common/convert.h):
// - widening (narrow -> float, float -> double) is exact and uses the storage
//   structs' own decoders, so even NaN payloads match the CPU;
// - narrowing rounds to nearest even with the hardware instructions
//   (__float2half_rn, __float2bfloat16, cvt.rn.satfinite for fp8), then applies
//   the CPU's overflow and NaN rules: e4m3fn saturates to +-448, e5m2 overflows
//   to +-Inf from 61440 up, and NaN becomes the CPU's canonical pattern;
// - double narrows through float, as the CPU does; every other step (integers, bool)
//   is the shared convert (kernels/common/convert.h).
// For nvcc only. The functions are __host__ __device__: on the host the CUDA headers
// emulate the same instructions, which lets tests check these rules without a GPU.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <mixt/kernels/common/convert.h>
#include <mixt/runtime/dtype.h>

namespace mixt::cuda {

// Rounds a float to narrow type To.
template <class To>
MIXT_HD __forceinline__ To narrow_from_float(float f) {
  const bool nan = f != f;
  if constexpr (std::is_same_v<To, Half>) {
    return Half::from_bits(nan ? uint16_t{0x7e00} : __half_as_ushort(__float2half_rn(f)));
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return BFloat16::from_bits(nan ? uint16_t{0x7fc0} : __bfloat16_as_ushort(__float2bfloat16(f)));
  } else if constexpr (std::is_same_v<To, Float8_e4m3fn>) {
    if (nan) return Float8_e4m3fn::from_bits(0x7f);
    return Float8_e4m3fn::from_bits(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3));
  } else {
    static_assert(std::is_same_v<To, Float8_e5m2>);
    if (nan) return Float8_e5m2::from_bits(0x7f);
    // SATFINITE clamps to +-57344; the CPU rule is IEEE overflow: +-Inf from 61440 (the tie) up.
    if (f >= 61440.0f || f <= -61440.0f) return Float8_e5m2::from_bits(f < 0.0f ? 0xfc : 0x7c);
    return Float8_e5m2::from_bits(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E5M2));
  }
}

// Narrowing with the hardware rounding above (the Narrow policy of convert).
struct CudaNarrow {
  template <class To>
  MIXT_HD __forceinline__ static To narrow(float f) {
    return narrow_from_float<To>(f);
  }
};

// Converts between any storage and opmath types with the CPU's rules (kernels/common/convert.h),
// narrowing to float16, bfloat16 and float8 with the instructions above.
template <class To, class From>
MIXT_HD __forceinline__ To fp_convert(From v) {
  return convert<To, CudaNarrow>(v);
}

}  // namespace mixt::cuda
