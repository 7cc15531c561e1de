// Array conversions of convert.h, compiled once per instruction set (dispatch.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "mixt/kernels/cpu/vec/convert.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <mixt/kernels/cpu/vec/convert-inl.h>
#include <mixt/kernels/cpu/vec/convert.h>

HWY_BEFORE_NAMESPACE();
namespace mixt::cpu::vec::HWY_NAMESPACE {

template <class In, class Out>
void Convert(const In* in, Out* out, size_t n) {
  MapFloat(in, out, n, [](auto, auto v) { return v; });
}
void HalfToFloatArray(const Half* in, float* out, size_t n) { Convert(in, out, n); }
void BFloat16ToFloatArray(const BFloat16* in, float* out, size_t n) { Convert(in, out, n); }
void FloatToHalfArray(const float* in, Half* out, size_t n) { Convert(in, out, n); }
void FloatToBFloat16Array(const float* in, BFloat16* out, size_t n) { Convert(in, out, n); }

}  // namespace mixt::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <mixt/kernels/cpu/vec/dispatch.h>
#include <mixt/runtime/check.h>

namespace mixt::cpu::vec {
namespace {

template <class In, class Out>
using ConvertFn = void (*)(const In*, Out*, size_t);
const IsaTable<ConvertFn<Half, float>> kHalfToFloat = MIXT_VEC_TABLE(HalfToFloatArray);
const IsaTable<ConvertFn<BFloat16, float>> kBFloat16ToFloat = MIXT_VEC_TABLE(BFloat16ToFloatArray);
const IsaTable<ConvertFn<float, Half>> kFloatToHalf = MIXT_VEC_TABLE(FloatToHalfArray);
const IsaTable<ConvertFn<float, BFloat16>> kFloatToBFloat16 = MIXT_VEC_TABLE(FloatToBFloat16Array);

Isa checked(Isa isa) {
  MIXT_CHECK(isa_supported(isa), "vec::convert", "instruction set '{}' is not supported by this CPU", isa_name(isa));
  return isa;
}

}  // namespace

void to_float(const Half* in, float* out, size_t n) { kHalfToFloat.get()(in, out, n); }
void to_float(const BFloat16* in, float* out, size_t n) { kBFloat16ToFloat.get()(in, out, n); }
void from_float(const float* in, Half* out, size_t n) { kFloatToHalf.get()(in, out, n); }
void from_float(const float* in, BFloat16* out, size_t n) { kFloatToBFloat16.get()(in, out, n); }

void to_float(const Half* in, float* out, size_t n, Isa isa) { kHalfToFloat.get(checked(isa))(in, out, n); }
void to_float(const BFloat16* in, float* out, size_t n, Isa isa) { kBFloat16ToFloat.get(checked(isa))(in, out, n); }
void from_float(const float* in, Half* out, size_t n, Isa isa) { kFloatToHalf.get(checked(isa))(in, out, n); }
void from_float(const float* in, BFloat16* out, size_t n, Isa isa) { kFloatToBFloat16.get(checked(isa))(in, out, n); }

}  // namespace mixt::cpu::vec
#endif  // HWY_ONCE
