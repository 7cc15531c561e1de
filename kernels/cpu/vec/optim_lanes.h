// The element loops of the fused optimizer steps and of the grad scaler's unscale +
// check in vector lanes (kernels/cpu/vec/optim_lanes.cpp), for parameters and gradients
// stored as float, Half or BFloat16 (float32 math and state). Each lane does exactly the
// operations of kernels/common/optim_math.h and amp_math.h, in their order, with no fused
// multiply-add, so every instruction set gives the bits of those scalar functions (which
// the CUDA kernels share). float64 keeps the scalar loops. Plain C++: no Highway here.
#pragma once

#include <cstddef>

#include <mixt/kernels/common/optim_math.h>
#include <mixt/runtime/float_types.h>

namespace mixt::cpu::vec {

// optim_math::adam_update<l2, amsgrad> for elements [0, n); vmax is used with amsgrad only.
template <class P>
void adam_lanes(P* p, const P* g, float* m, float* v, float* vmax, size_t n, const optim_math::AdamConsts<float>& k,
                bool l2, bool amsgrad);

// optim_math::sgd_update<l2, momentum, nesterov> for elements [0, n); buf is used with momentum only.
template <class P>
void sgd_lanes(P* p, const P* g, float* buf, size_t n, bool init, const optim_math::SgdConsts<float>& k, bool l2,
               bool momentum, bool nesterov);

// p[i] = amp_math::unscale(p[i], inv) for i < n (nothing is written when inv == 1);
// returns whether any element read was Inf or NaN (amp_math::non_finite).
template <class T>
bool unscale_check_lanes(T* p, size_t n, float inv);

}  // namespace mixt::cpu::vec
