// mm, bmm, addmm, baddbmm, linear and linear_backward on CUDA through the GEMM engine (engine.h):
// float32 (TF32 under set_float32_matmul_precision), float64, float16 and bfloat16 with
// float32 accumulation, float32 results from float16/bfloat16 operands (out_dtype). The
// checks and shapes are matmul_plan.h's, shared with the CPU reference. A bias is added by
// cuBLASLt's bias epilogue where it is one vector per output column in the result's dtype
// (linear, addmm with beta = 1), else copied into the output first and accumulated with
// beta (C = D in place). Results are written into a fresh contiguous tensor (or the out=
// tensor when it is one), then copied where the caller asked. linear_backward's weight
// GEMM also writes the bias gradient (BGRADB; Note [Linear backward's bias-gradient epilogue]).
#include <mixt/kernels/cuda/gemm/matmul.h>

#include <atomic>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/matmul_plan.h>
#include <mixt/kernels/cuda/gemm/engine.h>
#include <mixt/kernels/cuda/gemm/operands.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda::gemm {
namespace {

using mixt::gemm::Epilogue;

bool engine_dtype(ScalarType t) { return t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16; }

void check_inputs(const OpCall& c, const MatmulPlan& p) {
  MIXT_CHECK_OP(p.a.is_cuda() && p.b.is_cuda(), c, "expected CUDA operands, but found {} and {}", p.a.device(),
                p.b.device());
  MIXT_CHECK_OP(engine_dtype(p.in_dtype), c,
                "{} operands are not supported on CUDA (float32, float64, float16 and bfloat16 are; float8 goes "
                "through scaled_mm)",
                p.in_dtype);
}

// The 1-D bias the bias epilogue can add for `p` (undefined when it cannot): one value per
// output column, in the result's dtype, added once (beta = 1), to one matrix.
Tensor epilogue_bias(const MatmulPlan& p) {
  if (!p.bias.defined() || p.batched || p.k == 0 || p.beta.to_double() != 1.0 || p.out_dtype == kFloat64) return {};
  if (p.bias.dtype() != p.out_dtype || p.bias.numel() != p.m || p.m < 1) return {};
  for (int d = 0; d + 1 < p.bias.dim(); ++d)
    if (p.bias.size(d) != 1) return {};
  if (p.bias.dim() == 0 || p.bias.size(-1) != p.m) return {};
  return aligned_contiguous(reshape(p.bias, {p.m}));
}

// out (contiguous, p.out_shape, p.out_dtype, no input's memory) = alpha * a @ b + beta * bias, or
// act(a @ b + epi_bias) with an epilogue. Without an activation, a bias epilogue cuBLASLt has no
// algorithm for falls back to the bias copied into the output (beta = 1).
void run_product(const OpCall& c, const MatmulPlan& p, Tensor& out, Activation act = Activation::None,
                 Tensor epi_bias = Tensor(), Tensor* aux = nullptr) {
  check_inputs(c, p);
  if (out.numel() == 0) return;
  const int device = out.device().index();
  const char* op = op_name(c.op).data();
  const MatrixOperand x = matrix_operand(p.a, c), y = matrix_operand(p.b, c);
  GemmCall call;
  call.key = product_key(x, y, out, p.batch, p.n, p.k, p.m, p.in_dtype, compute_for(p.in_dtype));
  if (epi_bias.defined() && act == Activation::None && !aux && p.k > 0) {
    mixt::gemm::GemmKey with_bias = call.key;
    with_bias.epilogue = Epilogue::Bias;
    with_bias.bias = epi_bias.dtype();
    if (!has_algorithm(with_bias, device, op)) epi_bias = Tensor();  // the unfused path
  }
  const bool use_beta = !epi_bias.defined() && p.bias.defined() && p.beta.to_double() != 0.0;
  if (use_beta) copy_(out, p.bias);  // broadcast (and converted) into the output: C = D
  if (p.k == 0) {
    MIXT_CHECK_OP(act == Activation::None && !epi_bias.defined(), c, "an epilogue needs in_features > 0");
    if (use_beta) {
      if (p.beta.to_double() != 1.0) mul_(out, p.beta);
    } else {
      DeviceGuard guard(device, op);
      check(cudaMemsetAsync(out.data_ptr(), 0, static_cast<size_t>(out.nbytes()), current_native_stream(device)), op);
    }
    return;
  }
  call.a = y.ptr;
  call.b = x.ptr;
  call.c = out.data_ptr();
  call.d = out.data_ptr();
  call.alpha = p.alpha.to_double();
  call.beta = use_beta ? p.beta.to_double() : 0.0;
  Epilogue e = act == Activation::Relu ? Epilogue::Relu : act == Activation::Gelu ? Epilogue::Gelu : Epilogue::None;
  if (aux) {
    MIXT_CHECK_OP(act == Activation::Gelu, c, "the pre-activation output needs the GELU epilogue");
    // cuBLASLt wants the aux matrix's leading dimension a multiple of 8.
    const int64_t ld = (p.m + 7) / 8 * 8;
    Tensor storage = make_empty({p.n, ld}, p.out_dtype, out.device());
    *aux = make_view(storage, {p.n, p.m}, {ld, 1}, 0);
    call.aux = storage.data_ptr();
    call.ld_aux = ld;
    e = Epilogue::GeluAux;
  }
  if (epi_bias.defined()) {
    call.bias = const_cast<void*>(epi_bias.data_ptr());
    call.key.bias = epi_bias.dtype();
    e = e == Epilogue::None     ? Epilogue::Bias
        : e == Epilogue::Relu   ? Epilogue::ReluBias
        : e == Epilogue::Gelu   ? Epilogue::GeluBias
                                : Epilogue::GeluAuxBias;
  }
  call.key.epilogue = e;
  run(call, device, op);
}

// The tensor the product is computed into: the out= tensor when it is contiguous, of the
// result's shape and dtype and shares no input's memory, else a new one.
Tensor result_buffer(const OpCall& c, const MatmulPlan& p, const Shape& shape) {
  const Tensor& o = c.out[0];
  if (o.defined() && o.is_contiguous() && o.sizes() == shape && o.dtype() == p.out_dtype &&
      o.device() == p.a.device() && !o.shares_storage(p.a) && !o.shares_storage(p.b) &&
      !(p.bias.defined() && o.shares_storage(p.bias)))
    return o;
  return make_empty(p.out_shape, p.out_dtype, p.a.device());
}

// Hands `result` back: as the output, or copied into the caller's out= tensor (checked).
void finish(OpCall& c, const Tensor& result, ScalarType dtype) {
  Tensor& out = c.out[0];
  if (!out.defined()) {
    out = result;
    return;
  }
  if (out.is_same(result)) return;
  MIXT_CHECK_OP(out.sizes() == result.sizes() && out.dtype() == dtype && out.device() == result.device(), c,
                "the output is {} but the result is {}{} {}", out.describe(), dtype, result.sizes(), result.device());
  copy_(out, result);
}

void product_kernel(OpCall& c, bool batched, bool scaled) {
  const MatmulPlan p = plan_matmul(c, batched, scaled);
  Tensor out = result_buffer(c, p, p.out_shape);
  const Tensor bias = scaled ? epilogue_bias(p) : Tensor();
  run_product(c, p, out, Activation::None, bias);
  finish(c, out, p.out_dtype);
}

void mm_kernel(OpCall& c, DispatchKeySet) { product_kernel(c, false, false); }
void bmm_kernel(OpCall& c, DispatchKeySet) { product_kernel(c, true, false); }
void addmm_kernel(OpCall& c, DispatchKeySet) { product_kernel(c, false, true); }
void baddbmm_kernel(OpCall& c, DispatchKeySet) { product_kernel(c, true, true); }

// linear as one GEMM with the bias epilogue (Note [Composite and backend kernels]).
void linear_kernel(OpCall& c, DispatchKeySet) {
  const LinearPlan l = plan_linear(c);
  const MatmulPlan& p = l.product;
  Tensor out = make_empty(p.out_shape, p.out_dtype, p.a.device());
  run_product(c, p, out, Activation::None, epilogue_bias(p));
  finish(c, make_view(out, l.result_shape, contiguous_strides(l.result_shape), 0), p.out_dtype);
}

std::atomic<int64_t> g_bgrad_gemms{0};

// g2 [rows, out] as the row-major [out, rows] operand g^T: a transposed view, no copy.
Tensor transposed(const Tensor& g2) {
  return make_view(g2, {g2.size(1), g2.size(0)}, {g2.stride(1), g2.stride(0)}, g2.storage_offset());
}

// gw = g^T @ x (g2 [rows, out], x2 [rows, in]) with the bias gradient, the column sums of g,
// written by the same GEMM into a new [out] tensor (returned; undefined, gw untouched, when the
// epilogue cannot run and the caller must multiply and sum).
//
// Note [Linear backward's bias-gradient epilogue]: the row-major product gw [out, in] =
// g^T [out, rows] @ x [rows, in] runs column-major as gw^T [in, out] = x^T [in, rows] @ g
// [rows, out] (product_key: cuBLAS's A is x, its B is g^T's memory read transposed). So
// D is [in, out] (m = in, n = out), the GEMM's k is rows, and op(B) is g [rows, out] itself.
// The bias gradient is sum_r g[r, o]: a sum over k of op(B)'s column o, one value per column
// of D. That is CUBLASLT_EPILOGUE_BGRADB ("reduce B over k, one value per column of D");
// BGRADA would sum x over the rows (one value per row of D: per input feature), which is not a
// gradient of anything here. A row-major g gives cuBLAS's layout A: N, B: T (op(B) = B^T); a g
// in another layout (a transposed view, an expanded gradient) is tried as it is, then, if
// cuBLASLt has no BGRADB algorithm for that layout, copied row-major and tried again.
Tensor weight_grad_with_bias(const OpCall& c, const Tensor& g2, const Tensor& x2, ScalarType dtype, Tensor& gw) {
  if (dtype == kFloat64 || g2.size(0) == 0 || gw.numel() == 0) return {};  // no float64 BGRAD; nothing to reduce
  const int device = gw.device().index();
  const char* op = op_name(c.op).data();
  auto attempt = [&](const Tensor& g) -> Tensor {
    const MatmulPlan p = plain_product(transposed(g), x2, dtype);
    const MatrixOperand x = matrix_operand(p.a, c), y = matrix_operand(p.b, c);
    GemmCall call;
    call.key = product_key(x, y, gw, 1, p.n, p.k, p.m, dtype, compute_for(dtype));
    call.key.epilogue = Epilogue::BGradB;
    call.key.bias = dtype;
    if (!has_algorithm(call.key, device, op)) return {};
    Tensor bias = make_empty({p.n}, dtype, gw.device());  // fresh: 256-byte aligned, as the plan assumes
    call.a = y.ptr;
    call.b = x.ptr;
    call.c = gw.data_ptr();
    call.d = gw.data_ptr();
    call.bias = bias.data_ptr();
    run(call, device, op);
    g_bgrad_gemms.fetch_add(1, std::memory_order_relaxed);
    return bias;
  };
  // A g that matrix_operand would copy anyway (an expanded gradient) is copied row-major at once.
  const bool fits = mixt::gemm::operand_layout(g2.size(1), g2.size(0), g2.stride(1), g2.stride(0)).fits;
  const Tensor g = fits ? g2 : g2.contiguous();
  Tensor bias = attempt(g);
  if (!bias.defined() && !g.is_contiguous()) bias = attempt(g.contiguous());
  return bias;
}

// linear's backward (grad_output g [*, out], input x [*, in], weight w [out, in]):
// grad_input = g @ w, grad_weight = g^T @ x with the bias gradient from the same GEMM's
// BGRADB epilogue (Note [Linear backward's bias-gradient epilogue]); where that cannot run
// (float64, no algorithm, zero sizes, or no grad_weight wanted) the bias gradient is `sum`.
// Everything is queued on the current stream.
void linear_backward_kernel(OpCall& c, DispatchKeySet) {
  const LinearBackwardPlan lp = plan_linear_backward(c);
  const Tensor& w = c.in[2];
  const Tensor g2 = as_rows(c.in[0], lp.rows, lp.out);
  const MatmulPlan first = plain_product(g2, w, lp.dtype);
  check_inputs(c, first);  // CUDA operands of an engine dtype, whichever outputs are wanted
  Tensor outs[3];
  if (lp.input_grad) {
    Tensor gi = make_empty(first.out_shape, lp.dtype, g2.device());
    run_product(c, first, gi);
    outs[0] = make_view(gi, lp.input_shape, contiguous_strides(lp.input_shape), 0);
  }
  if (lp.weight_grad) {
    const Tensor x2 = as_rows(c.in[1], lp.rows, lp.in);
    Tensor gw = make_empty({lp.out, lp.in}, lp.dtype, g2.device());
    if (lp.bias_grad) outs[2] = weight_grad_with_bias(c, g2, x2, lp.dtype, gw);
    if (!outs[2].defined()) run_product(c, plain_product(transposed(g2), x2, lp.dtype), gw);
    outs[1] = gw;
  }
  if (lp.bias_grad && !outs[2].defined()) outs[2] = sum(g2, {0});
  for (int i = 0; i < 3; ++i) {
    Tensor& out = c.out[static_cast<size_t>(i)];
    if (!outs[i].defined()) continue;
    if (!out.defined()) {
      out = outs[i];
      continue;
    }
    MIXT_CHECK_OP(out.sizes() == outs[i].sizes() && out.dtype() == lp.dtype && out.device() == outs[i].device(), c,
                  "output {} is {} but the result is {}{} {}", i, out.describe(), lp.dtype, outs[i].sizes(),
                  outs[i].device());
    copy_(out, outs[i]);
  }
}

}  // namespace

int64_t bias_grad_epilogue_gemms() { return g_bgrad_gemms.load(std::memory_order_relaxed); }

Tensor linear_epilogue(const Tensor& x, const Tensor& w, const Tensor& bias, Activation act, Tensor* pre_activation) {
  OpCall c(OpId::linear);
  c.push(x);
  c.push(w);
  if (bias.defined()) c.push(bias);
  const LinearPlan l = plan_linear(c);
  const MatmulPlan& p = l.product;
  Tensor epi_bias;
  if (bias.defined()) {
    epi_bias = epilogue_bias(p);
    MIXT_CHECK_OP(epi_bias.defined(), c, "the bias epilogue needs a bias of shape [{}] in {}, but got {} {}", p.m,
                  p.out_dtype, bias.dtype(), bias.sizes());
  }
  MIXT_CHECK_OP(p.in_dtype != kFloat64 || act == Activation::None, c, "cuBLASLt has no float64 activation epilogues");
  Tensor out = make_empty(p.out_shape, p.out_dtype, p.a.device());
  Tensor aux;
  run_product(c, p, out, act, epi_bias, pre_activation ? &aux : nullptr);
  if (pre_activation) *pre_activation = aux;
  return make_view(out, l.result_shape, contiguous_strides(l.result_shape), 0);
}

Tensor linear_dgelu(const Tensor& dy, const Tensor& w, const Tensor& pre, Tensor* bias_grad) {
  OpCall c(OpId::mm);
  c.push(dy);
  c.push(w);
  const MatmulPlan p = plan_matmul(c, false, false);  // [rows, out] @ [out, in]
  check_inputs(c, p);
  MIXT_CHECK_OP(p.k > 0 && p.in_dtype != kFloat64, c, "the DGELU epilogue needs out_features > 0 and a float32, "
                "float16 or bfloat16 product, but got {} with k = {}", p.in_dtype, p.k);
  MIXT_CHECK_OP(pre.sizes() == p.out_shape && pre.dtype() == p.out_dtype && pre.device() == p.a.device(), c,
                "expected the pre-activation as {}{} on {}, but got {}", p.out_dtype, p.out_shape, p.a.device(),
                pre.describe());
  const Device dev = p.a.device();
  // cuBLASLt reads the aux matrix row-major with a leading dimension that is a multiple of 8.
  Tensor aux = pre;
  if (!(pre.stride(1) == 1 && pre.stride(0) >= p.m && pre.stride(0) % 8 == 0 &&
        mixt::gemm::pointer_alignment(pre.data_ptr()) >= mixt::gemm::kMaxAlignment)) {
    const int64_t ld = (p.m + 7) / 8 * 8;
    aux = make_view(make_empty({p.n, ld}, p.out_dtype, dev), {p.n, p.m}, {ld, 1}, 0);
    copy_(aux, pre);
  }
  Tensor out = make_empty(p.out_shape, p.out_dtype, dev);
  if (out.numel() == 0) return out;
  const MatrixOperand x = matrix_operand(p.a, c), y = matrix_operand(p.b, c);
  GemmCall call;
  call.key = product_key(x, y, out, 1, p.n, p.k, p.m, p.in_dtype, compute_for(p.in_dtype));
  call.a = y.ptr;
  call.b = x.ptr;
  call.c = out.data_ptr();
  call.d = out.data_ptr();
  call.aux = const_cast<void*>(aux.data_ptr());
  call.ld_aux = aux.stride(0);
  call.key.epilogue = Epilogue::DGelu;
  if (bias_grad) {
    *bias_grad = make_empty({p.m}, p.out_dtype, dev);
    call.bias = bias_grad->data_ptr();
    call.key.bias = p.out_dtype;
    call.key.epilogue = Epilogue::DGeluBGrad;
  }
  run(call, dev.index(), "linear_dgelu");
  return out;
}

}  // namespace mixt::cuda::gemm

namespace mixt::cuda {

void register_gemm_kernels() {
  gemm::register_engine();
  register_kernel(OpId::mm, DispatchKey::CUDA, gemm::mm_kernel);
  register_kernel(OpId::bmm, DispatchKey::CUDA, gemm::bmm_kernel);
  register_kernel(OpId::addmm, DispatchKey::CUDA, gemm::addmm_kernel);
  register_kernel(OpId::baddbmm, DispatchKey::CUDA, gemm::baddbmm_kernel);
  register_kernel(OpId::linear, DispatchKey::CUDA, gemm::linear_kernel);
  register_kernel(OpId::linear_backward, DispatchKey::CUDA, gemm::linear_backward_kernel);
  register_scaled_mm_kernel();
}

}  // namespace mixt::cuda
