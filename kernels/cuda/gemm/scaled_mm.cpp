// scaled_mm on CUDA (Note [Scaled mm]): float8_e4m3fn / float8_e5m2 operands (not both e5m2)
// through cuBLASLt with per-tensor or row-wise (OUTER_VEC_32F) float32 scales, bfloat16,
// float16, float32 or float8 results (float8 with per-tensor scales only: plan_scaled_mm
// refuses the rest), a bias epilogue, scale_result and amax for float8 results, and the
// fast-accumulation flag. Hopper runs float8 GEMMs only as "TN" (both
// operands K-major): a must be row-major [M, K] and b column-major [K, N] (b = w.t() of a
// row-major [N, K] weight); other layouts get a transposed copy here. cuBLASLt needs K and
// N multiples of 16 and 16-byte aligned operands: misaligned views are copied, other shapes
// refused. The CPU kernel (kernels/cpu/matmul.cpp) is the reference.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/matmul_plan.h>
#include <mixt/kernels/cuda/gemm/engine.h>
#include <mixt/kernels/cuda/gemm/operands.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {
namespace {

using mixt::gemm::pointer_alignment;

// `t` [rows, cols] with unit stride along `unit_dim` (0 or 1), the other stride a multiple of 16
// elements and a 16-byte aligned start: `t` itself, or a copy laid out so.
Tensor k_major(const Tensor& t, int unit_dim) {
  const int other = 1 - unit_dim;
  const bool fits = (t.size(unit_dim) <= 1 || t.stride(unit_dim) == 1) && t.stride(other) >= t.size(unit_dim) &&
                    t.stride(other) % 16 == 0 && pointer_alignment(t.data_ptr()) >= 16;
  if (fits) return t;
  // A fresh allocation is aligned; make the unit dimension the innermost one.
  return unit_dim == 1 ? contiguous(t) : contiguous(t.t()).t();
}

void scaled_mm_kernel(OpCall& c, DispatchKeySet) {
  const ScaledMmPlan p = plan_scaled_mm(c);
  MIXT_CHECK_OP(p.a.is_cuda(), c, "expected CUDA operands, but found {}", p.a.device());
  MIXT_CHECK_OP(p.k % 16 == 0 && p.n % 16 == 0 && p.k > 0, c,
                "cuBLASLt's float8 GEMM needs K and N to be positive multiples of 16, but a is {} and b is {}",
                p.a.sizes(), p.b.sizes());
  const int device = p.a.device().index();
  const char* op = "scaled_mm";
  Tensor out = make_empty(p.out_shape, p.out_dtype, p.a.device());
  Tensor amax;
  if (p.float8_out) amax = make_empty({}, kFloat32, p.a.device());
  DeviceGuard guard(device, op);
  const cudaStream_t stream = current_native_stream(device);
  if (amax.defined()) check(cudaMemsetAsync(amax.data_ptr(), 0, sizeof(float), stream), op);
  if (out.numel() > 0) {
    const Tensor a = k_major(p.a, 1);  // [M, K], K contiguous
    const Tensor b = k_major(p.b, 0);  // [K, N], K contiguous
    const Tensor sa = contiguous(p.scale_a), sb = contiguous(p.scale_b);
    const Tensor bias = p.bias.defined() ? gemm::aligned_contiguous(p.bias) : Tensor();
    const Tensor sr = p.scale_result.defined() ? contiguous(p.scale_result) : Tensor();
    // Column-major: out^T [N, M] = b^T [N, K] @ a^T [K, M]; cuBLAS's A is b (op T), its B is a (op N).
    gemm::GemmCall call;
    mixt::gemm::GemmKey& k = call.key;
    k.m = p.n;
    k.n = p.m;
    k.k = p.k;
    k.a = p.b.dtype();
    k.b = p.a.dtype();
    k.d = p.out_dtype;
    k.c = p.float8_out ? (bias.defined() ? bias.dtype() : kBFloat16) : p.out_dtype;
    k.trans_a = true;
    k.trans_b = false;
    k.lda = b.stride(1);
    k.ldb = a.stride(0);
    k.ldc = k.ldd = p.n;
    k.align_a = pointer_alignment(b.data_ptr());
    k.align_b = pointer_alignment(a.data_ptr());
    k.align_d = pointer_alignment(out.data_ptr());
    k.align_c = pointer_alignment(a.data_ptr());
    k.scale_mode = p.rowwise ? mixt::gemm::ScaleMode::Rowwise : mixt::gemm::ScaleMode::Tensorwise;
    k.fast_accum = c.attrs.get<attrs::ScaledMm>().use_fast_accum;
    if (bias.defined()) {
      k.epilogue = mixt::gemm::Epilogue::Bias;
      k.bias = bias.dtype();
      call.bias = const_cast<void*>(bias.data_ptr());
    }
    call.a = b.data_ptr();
    call.b = a.data_ptr();
    // cuBLASLt's float8 GEMMs refuse C = D and a null C; beta = 0 never reads it (PyTorch passes a too).
    call.c = a.data_ptr();
    call.d = out.data_ptr();
    call.scale_a = static_cast<const float*>(sb.data_ptr());  // cuBLAS's A is b: its scales go with A
    call.scale_b = static_cast<const float*>(sa.data_ptr());
    if (sr.defined()) call.scale_d = static_cast<const float*>(sr.data_ptr());
    if (amax.defined()) call.amax_d = static_cast<float*>(amax.data_ptr());
    gemm::run(call, device, op);
  }
  Tensor& o = c.out[0];
  if (o.defined()) {
    MIXT_CHECK_OP(o.sizes() == out.sizes() && o.dtype() == p.out_dtype, c, "output 0 is {} but the result is {}{}",
                  o.describe(), p.out_dtype, out.sizes());
    copy_(o, out);
  } else {
    o = out;
  }
  if (amax.defined()) {
    if (c.out[1].defined()) copy_(c.out[1], amax);
    else c.out[1] = amax;
  }
}

}  // namespace

void register_scaled_mm_kernel() { register_kernel(OpId::scaled_mm, DispatchKey::CUDA, scaled_mm_kernel); }

}  // namespace mixt::cuda
