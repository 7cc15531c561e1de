// The CUDA GEMM kernels' entry points beyond the registered ops: linear with a cuBLASLt
// epilogue (bias, ReLU, GELU, and GELU's aux output for the backward). Host code.
#pragma once

#include <mixt/kernels/common/gemm_key.h>
#include <mixt/runtime/tensor.h>

namespace mixt::cuda::gemm {

// Activations linear_epilogue can fuse.
enum class Activation { None, Relu, Gelu };

// act(x @ w^T + bias) for CUDA x [*, in], w [out, in], bias [out] (or undefined), in one
// cuBLASLt call (float32, float16, bfloat16; the bias in the result's dtype). cuBLASLt's
// GELU is the tanh approximation. With `pre_activation` (GELU only) the value before the
// activation is also stored, as [rows, out] (GELU_AUX, what the backward's DGELU reads).
Tensor linear_epilogue(const Tensor& x, const Tensor& w, const Tensor& bias, Activation act,
                       Tensor* pre_activation = nullptr);

// The backward of z = gelu(pre) followed by a linear y = z @ w^T: dpre = (dy @ w) * gelu'(pre)
// (tanh GELU), with cuBLASLt's DGELU epilogue reading `pre` (as linear_epilogue's
// pre_activation stores it), and with `bias_grad` also its column sums (the bias gradient of
// the linear that produced pre; DGELU_BGRAD) in the same call. dy [rows, out], w [out, in],
// pre [rows, in]; float32, float16 or bfloat16.
Tensor linear_dgelu(const Tensor& dy, const Tensor& w, const Tensor& pre, Tensor* bias_grad = nullptr);

// How many GEMMs linear_backward has run with the BGRADB epilogue (the bias gradient written
// by grad_weight's GEMM) in this process: tests observe that the fused path was taken.
int64_t bias_grad_epilogue_gemms();

}  // namespace mixt::cuda::gemm
