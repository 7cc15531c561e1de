// How a vectorised kernel is written once and compiled for every instruction set.
// See docs/notes/cpu-vectorisation.md, Note [CPU instruction sets].
//
// A vector translation unit (unary_math.cpp is the worked example) has this shape:
//
//   #undef HWY_TARGET_INCLUDE
//   #define HWY_TARGET_INCLUDE "mixt/kernels/cpu/vec/my_kernels.cpp"  // this file
//   #include <hwy/foreach_target.h>   // re-includes this file once per target
//   #include <hwy/highway.h>
//   #include <mixt/kernels/cpu/vec/convert-inl.h>   // per-target helpers (optional)
//
//   HWY_BEFORE_NAMESPACE();
//   namespace mixt::cpu::vec::HWY_NAMESPACE {   // N_EMU128, N_SSE4, N_AVX2, N_AVX3
//   namespace hn = hwy::HWY_NAMESPACE;
//   void MyKernel(const float* in, float* out, size_t n) { ... hn:: ops ... }
//   }  // namespace mixt::cpu::vec::HWY_NAMESPACE
//   HWY_AFTER_NAMESPACE();
//
//   #if HWY_ONCE                         // compiled once, after every target
//   #include <mixt/kernels/cpu/vec/dispatch.h>
//   namespace mixt::cpu::vec {
//   void my_kernel(const float* in, float* out, size_t n) {
//     static const IsaTable<void (*)(const float*, float*, size_t)> table = MIXT_VEC_TABLE(MyKernel);
//     table.get()(in, out, n);         // the function of active_isa()
//   }
//   }  // namespace mixt::cpu::vec
//   #endif
//
// The public declaration (my_kernels.h) is plain C++ with no Highway in it, so the
// callers (kernels/cpu/*.cpp) compile once, without any target attribute. Each target
// multiplies the unit's compile time: keep per-target code small (one loop template
// instantiated per op), and keep dtype conversions out of the op loops (convert
// blocks with convert-inl.h instead of instantiating every op per dtype).
//
// Which targets are compiled is fixed for the whole library by hwy_dep's compile
// arguments (meson.build): HWY_DISABLED_TARGETS leaves SSSE3 and AVX3_DL out, so the
// x86-64 targets are EMU128 (portable), SSE4, AVX2 and AVX3 (AVX-512), and Highway's
// own dispatch (HWY_EXPORT / HWY_DYNAMIC_DISPATCH, which needs libhwy.so at run time)
// is not used: the choice is mixt's (isa.h).
#pragma once

#include <hwy/highway.h>

#include <mixt/kernels/cpu/vec/isa.h>

// The IsaTable initialiser of the per-target function FUNC, entries in Isa order.
#define MIXT_VEC_TABLE(FUNC) \
  {{HWY_CHOOSE_FALLBACK(FUNC), HWY_CHOOSE_SSE4(FUNC), HWY_CHOOSE_AVX2(FUNC), HWY_CHOOSE_AVX3(FUNC)}}
