// PyTorch 2.11's autocast lists, written out from aten/src/ATen/autocast_mode.{h,cpp}
// (rms_norm joins CUDA's fp32 list only in 2.12, so it is not here).
#include "pytorch_autocast_lists.h"

namespace mixt::testing {

namespace {

using P = AtenPolicy;

// Reasons shared by several entries.
constexpr const char* kConvEntry =
    "internal entry point that `conv1d/2d/3d` and `conv_transpose1d/2d/3d` reach; those ops carry the policy";
constexpr const char* kComplex = "complex dtypes: mixt's dtypes are real, so it has no FFTs or complex ops";
constexpr const char* kSolver = "a matrix decomposition or solver: mixt has no dense linear-algebra solvers yet";
constexpr const char* kVolumetric =
    "not implemented yet: mixt's 3-D spatial ops are `conv3d`, `conv_transpose3d` and `avg_pool3d`";
constexpr const char* kNearestExact = "not implemented yet: `interpolate` has no `nearest-exact` mode";
constexpr const char* kBicubicAa = "not implemented yet: `interpolate` has no bicubic or antialiased modes";

const std::vector<ListedOp> kCuda = {
    // lower_precision_fp
    {"_convolution", P::LowerPrecisionFp, nullptr, kConvEntry},
    {"conv1d", P::LowerPrecisionFp, "conv1d", nullptr},
    {"conv2d", P::LowerPrecisionFp, "conv2d", nullptr},
    {"conv3d", P::LowerPrecisionFp, "conv3d", nullptr},
    {"conv_tbc", P::LowerPrecisionFp, nullptr,
     "not implemented: a convolution of (time, batch, channel) input, `conv1d` of the permuted input"},
    {"conv_transpose1d", P::LowerPrecisionFp, "conv_transpose1d", nullptr},
    {"conv_transpose2d", P::LowerPrecisionFp, "conv_transpose2d", nullptr},
    {"conv_transpose3d", P::LowerPrecisionFp, "conv_transpose3d", nullptr},
    {"convolution", P::LowerPrecisionFp, nullptr, kConvEntry},
    {"prelu", P::LowerPrecisionFp, "prelu", nullptr},
    {"addmm", P::LowerPrecisionFp, "addmm", nullptr},
    {"addmv", P::LowerPrecisionFp, "addmv", nullptr},
    {"addr", P::LowerPrecisionFp, "addr", nullptr},
    {"matmul", P::LowerPrecisionFp, "matmul", nullptr},
    {"einsum", P::LowerPrecisionFp, "einsum", nullptr},
    {"mm", P::LowerPrecisionFp, "mm", nullptr},
    {"mv", P::LowerPrecisionFp, "mv", nullptr},
    {"linalg_vecdot", P::LowerPrecisionFp, "linalg_vecdot", nullptr},
    {"linear", P::LowerPrecisionFp, "linear", nullptr},
    {"addbmm", P::LowerPrecisionFp, "addbmm", nullptr},
    {"baddbmm", P::LowerPrecisionFp, "baddbmm", nullptr},
    {"bmm", P::LowerPrecisionFp, "bmm", nullptr},
    {"chain_matmul", P::LowerPrecisionFp, "chain_matmul", nullptr},
    {"linalg_multi_dot", P::LowerPrecisionFp, "linalg_multi_dot", nullptr},
    {"_thnn_fused_lstm_cell", P::LowerPrecisionFp, nullptr, "CUDA's fused kernel inside `lstm_cell`, which carries the policy"},
    {"_thnn_fused_gru_cell", P::LowerPrecisionFp, nullptr, "CUDA's fused kernel inside `gru_cell`, which carries the policy"},
    {"lstm_cell", P::LowerPrecisionFp, "lstm_cell", nullptr},
    {"gru_cell", P::LowerPrecisionFp, "gru_cell", nullptr},
    {"rnn_tanh_cell", P::LowerPrecisionFp, "rnn_tanh_cell", nullptr},
    {"rnn_relu_cell", P::LowerPrecisionFp, "rnn_relu_cell", nullptr},
    {"_scaled_dot_product_flash_attention", P::LowerPrecisionFp, nullptr,
     "a backend of `scaled_dot_product_attention`, which carries the policy"},
    {"scaled_dot_product_attention", P::LowerPrecisionFp, "scaled_dot_product_attention", nullptr},
    {"cudnn_convolution", P::LowerPrecisionFp, nullptr, "cuDNN's kernel behind the `conv` ops, which carry the policy"},
    {"cudnn_convolution_transpose", P::LowerPrecisionFp, nullptr,
     "cuDNN's kernel behind the `conv_transpose` ops, which carry the policy"},
    // fp32
    {"acos", P::Fp32, "acos", nullptr},
    {"asin", P::Fp32, "asin", nullptr},
    {"cosh", P::Fp32, "cosh", nullptr},
    {"erfinv", P::Fp32, "erfinv", nullptr},
    {"exp", P::Fp32, "exp", nullptr},
    {"expm1", P::Fp32, "expm1", nullptr},
    {"log", P::Fp32, "log", nullptr},
    {"log10", P::Fp32, "log10", nullptr},
    {"log2", P::Fp32, "log2", nullptr},
    {"log1p", P::Fp32, "log1p", nullptr},
    {"reciprocal", P::Fp32, "reciprocal", nullptr},
    {"rsqrt", P::Fp32, "rsqrt", nullptr},
    {"sinh", P::Fp32, "sinh", nullptr},
    {"tan", P::Fp32, "tan", nullptr},
    {"pow", P::Fp32, "pow", nullptr},
    {"softplus", P::Fp32, "softplus", nullptr},
    {"layer_norm", P::Fp32, "layer_norm", nullptr},
    {"native_layer_norm", P::Fp32, nullptr, "`layer_norm`'s internal form returning (y, mean, rstd), as mixt's `layer_norm` does"},
    {"group_norm", P::Fp32, "group_norm", nullptr},
    {"frobenius_norm", P::Fp32, nullptr, "a deprecated spelling of `norm` with p = 2 over the dims, which mixt's `norm` computes"},
    {"nuclear_norm", P::Fp32, nullptr, "needs an SVD: mixt has no matrix decompositions yet"},
    {"cosine_similarity", P::Fp32, "cosine_similarity", nullptr},
    {"poisson_nll_loss", P::Fp32, "poisson_nll_loss", nullptr},
    {"cosine_embedding_loss", P::Fp32, "cosine_embedding_loss", nullptr},
    {"nll_loss", P::Fp32, "nll_loss", nullptr},
    {"nll_loss2d", P::Fp32, nullptr,
     "not implemented: `nll_loss` of [N, C, H, W] log-probabilities (mixt's takes [N, C]; `cross_entropy` takes both)"},
    {"hinge_embedding_loss", P::Fp32, "hinge_embedding_loss", nullptr},
    {"kl_div", P::Fp32, "kl_div", nullptr},
    {"l1_loss", P::Fp32, "l1_loss", nullptr},
    {"smooth_l1_loss", P::Fp32, "smooth_l1_loss", nullptr},
    {"huber_loss", P::Fp32, "huber_loss", nullptr},
    {"mse_loss", P::Fp32, "mse_loss", nullptr},
    {"margin_ranking_loss", P::Fp32, "margin_ranking_loss", nullptr},
    {"multilabel_margin_loss", P::Fp32, "multilabel_margin_loss", nullptr},
    {"soft_margin_loss", P::Fp32, "soft_margin_loss", nullptr},
    {"triplet_margin_loss", P::Fp32, "triplet_margin_loss", nullptr},
    {"multi_margin_loss", P::Fp32, "multi_margin_loss", nullptr},
    {"binary_cross_entropy_with_logits", P::Fp32, "binary_cross_entropy_with_logits", nullptr},
    {"dist", P::Fp32, "dist", nullptr},
    {"pdist", P::Fp32, "pdist", nullptr},
    {"cdist", P::Fp32, "cdist", nullptr},
    {"renorm", P::Fp32, "renorm", nullptr},
    {"logsumexp", P::Fp32, "logsumexp", nullptr},
    {"upsample_nearest1d", P::Fp32, nullptr,
     "no op of its own: `interpolate` runs 1-D input as `upsample_nearest2d` of height 1 (float32 too)"},
    {"_upsample_nearest_exact1d", P::Fp32, nullptr, kNearestExact},
    {"upsample_nearest2d", P::Fp32, "upsample_nearest2d", nullptr},
    {"_upsample_nearest_exact2d", P::Fp32, nullptr, kNearestExact},
    {"upsample_nearest3d", P::Fp32, nullptr, kVolumetric},
    {"_upsample_nearest_exact3d", P::Fp32, nullptr, kNearestExact},
    {"upsample_linear1d", P::Fp32, nullptr,
     "no op of its own: `interpolate` runs `linear` as `upsample_bilinear2d` of height 1 (float32 too)"},
    {"upsample_bilinear2d", P::Fp32, "upsample_bilinear2d", nullptr},
    {"_upsample_bilinear2d_aa", P::Fp32, nullptr, kBicubicAa},
    {"upsample_trilinear3d", P::Fp32, nullptr, kVolumetric},
    {"upsample_bicubic2d", P::Fp32, nullptr, kBicubicAa},
    {"_upsample_bicubic2d_aa", P::Fp32, nullptr, kBicubicAa},
    // fp32_set_opt_dtype
    {"prod", P::Fp32SetOptDtype, "prod", nullptr},
    {"softmax", P::Fp32SetOptDtype, "softmax", nullptr},
    {"log_softmax", P::Fp32SetOptDtype, "log_softmax", nullptr},
    {"cumprod", P::Fp32SetOptDtype, "cumprod", nullptr},
    {"cumsum", P::Fp32SetOptDtype, "cumsum", nullptr},
    {"linalg_vector_norm", P::Fp32SetOptDtype, nullptr,
     "no op of its own: mixt's `norm` is the vector p-norm over dims, with the same policy"},
    {"linalg_matrix_norm", P::Fp32SetOptDtype, nullptr,
     "not implemented: Frobenius is `norm` over two dims; the spectral and nuclear norms need an SVD"},
    {"sum", P::Fp32SetOptDtype, "sum", nullptr},
    // fp32_append_dtype
    {"norm", P::Fp32AppendDtype, "norm", nullptr},
    // promote
    {"addcdiv", P::Promote, "addcdiv", nullptr},
    {"addcmul", P::Promote, "addcmul", nullptr},
    {"atan2", P::Promote, "atan2", nullptr},
    {"bilinear", P::Promote, "bilinear", nullptr},
    {"cross", P::Promote, "cross", nullptr},
    {"dot", P::Promote, "dot", nullptr},
    {"vdot", P::Promote, "vdot", nullptr},
    {"grid_sampler", P::Promote, "grid_sampler_2d", nullptr},  // the 2-D form: mixt's grid_sample
    {"index_put", P::Promote, "index_put", nullptr},
    {"tensordot", P::Promote, "tensordot", nullptr},
    {"scatter_add", P::Promote, "scatter_add", nullptr},
    // banned
    {"binary_cross_entropy", P::Banned, "binary_cross_entropy", nullptr},
};

const std::vector<ListedOp> kCpu = {
    // lower_precision_fp
    {"conv1d", P::LowerPrecisionFp, "conv1d", nullptr},
    {"conv2d", P::LowerPrecisionFp, "conv2d", nullptr},
    {"conv3d", P::LowerPrecisionFp, "conv3d", nullptr},
    {"bmm", P::LowerPrecisionFp, "bmm", nullptr},
    {"mm", P::LowerPrecisionFp, "mm", nullptr},
    {"linalg_vecdot", P::LowerPrecisionFp, "linalg_vecdot", nullptr},
    {"baddbmm", P::LowerPrecisionFp, "baddbmm", nullptr},
    {"addmm", P::LowerPrecisionFp, "addmm", nullptr},
    {"_addmm_activation", P::LowerPrecisionFp, "addmm_activation", nullptr},
    {"addbmm", P::LowerPrecisionFp, "addbmm", nullptr},
    {"linear", P::LowerPrecisionFp, "linear", nullptr},
    {"_convolution", P::LowerPrecisionFp, nullptr, kConvEntry},
    {"matmul", P::LowerPrecisionFp, "matmul", nullptr},
    {"conv_tbc", P::LowerPrecisionFp, nullptr,
     "not implemented: a convolution of (time, batch, channel) input, `conv1d` of the permuted input"},
    {"mkldnn_rnn_layer", P::LowerPrecisionFp, nullptr,
     "oneDNN's LSTM layer inside `nn.LSTM`: mixt's `nn::LSTM` runs `lstm_cell`, which this list leaves unlisted"},
    {"conv_transpose1d", P::LowerPrecisionFp, "conv_transpose1d", nullptr},
    {"conv_transpose2d", P::LowerPrecisionFp, "conv_transpose2d", nullptr},
    {"conv_transpose3d", P::LowerPrecisionFp, "conv_transpose3d", nullptr},
    {"prelu", P::LowerPrecisionFp, "prelu", nullptr},
    {"scaled_dot_product_attention", P::LowerPrecisionFp, "scaled_dot_product_attention", nullptr},
    {"_native_multi_head_attention", P::LowerPrecisionFp, nullptr,
     "the fused kernel of `nn.MultiheadAttention`: mixt's module calls `linear` and `scaled_dot_product_attention`"},
    // fp32
    {"avg_pool3d", P::Fp32, "avg_pool3d", nullptr},
    {"binary_cross_entropy", P::Fp32, "binary_cross_entropy", nullptr},
    {"grid_sampler", P::Fp32, "grid_sampler_2d", nullptr},  // the 2-D form: mixt's grid_sample
    {"polar", P::Fp32, nullptr, kComplex},
    {"prod", P::Fp32, "prod", nullptr},
    {"quantile", P::Fp32, nullptr, "not implemented yet"},
    {"nanquantile", P::Fp32, nullptr, "not implemented yet"},
    {"stft", P::Fp32, nullptr, kComplex},
    {"cdist", P::Fp32, "cdist", nullptr},
    {"grid_sampler_2d", P::Fp32, "grid_sampler_2d", nullptr},
    {"_grid_sampler_2d_cpu_fallback", P::Fp32, nullptr, "an internal CPU kernel of `grid_sampler_2d`, which carries the policy"},
    {"grid_sampler_3d", P::Fp32, nullptr, kVolumetric},
    {"trace", P::Fp32, nullptr, "not implemented: `einsum(\"ii\", {x})` computes it"},
    {"view_as_complex", P::Fp32, nullptr, kComplex},
    {"cholesky", P::Fp32, nullptr, kSolver},
    {"cholesky_inverse", P::Fp32, nullptr, kSolver},
    {"cholesky_solve", P::Fp32, nullptr, kSolver},
    {"inverse", P::Fp32, nullptr, kSolver},
    {"lu_solve", P::Fp32, nullptr, kSolver},
    {"orgqr", P::Fp32, nullptr, kSolver},
    {"ormqr", P::Fp32, nullptr, kSolver},
    {"pinverse", P::Fp32, nullptr, kSolver},
    {"max_pool3d", P::Fp32, nullptr, kVolumetric},
    {"max_unpool2d", P::Fp32, nullptr, "not implemented yet"},
    {"max_unpool3d", P::Fp32, nullptr, kVolumetric},
    {"adaptive_avg_pool3d", P::Fp32, nullptr, kVolumetric},
    {"reflection_pad1d", P::Fp32, "reflection_pad1d", nullptr},
    {"reflection_pad2d", P::Fp32, "reflection_pad2d", nullptr},
    {"replication_pad1d", P::Fp32, "replication_pad1d", nullptr},
    {"replication_pad2d", P::Fp32, "replication_pad2d", nullptr},
    {"replication_pad3d", P::Fp32, nullptr, kVolumetric},
    {"mse_loss", P::Fp32, "mse_loss", nullptr},
    {"cosine_embedding_loss", P::Fp32, "cosine_embedding_loss", nullptr},
    {"nll_loss", P::Fp32, "nll_loss", nullptr},
    {"nll_loss2d", P::Fp32, nullptr,
     "not implemented: `nll_loss` of [N, C, H, W] log-probabilities (mixt's takes [N, C]; `cross_entropy` takes both)"},
    {"hinge_embedding_loss", P::Fp32, "hinge_embedding_loss", nullptr},
    {"poisson_nll_loss", P::Fp32, "poisson_nll_loss", nullptr},
    {"smooth_l1_loss", P::Fp32, "smooth_l1_loss", nullptr},
    {"cross_entropy_loss", P::Fp32, "cross_entropy", nullptr},
    {"l1_loss", P::Fp32, "l1_loss", nullptr},
    {"huber_loss", P::Fp32, "huber_loss", nullptr},
    {"margin_ranking_loss", P::Fp32, "margin_ranking_loss", nullptr},
    {"soft_margin_loss", P::Fp32, "soft_margin_loss", nullptr},
    {"triplet_margin_loss", P::Fp32, "triplet_margin_loss", nullptr},
    {"multi_margin_loss", P::Fp32, "multi_margin_loss", nullptr},
    {"ctc_loss", P::Fp32, nullptr, "not implemented yet"},
    {"kl_div", P::Fp32, "kl_div", nullptr},
    {"multilabel_margin_loss", P::Fp32, "multilabel_margin_loss", nullptr},
    {"binary_cross_entropy_with_logits", P::Fp32, "binary_cross_entropy_with_logits", nullptr},
    {"fft_fft", P::Fp32, nullptr, kComplex},
    {"fft_ifft", P::Fp32, nullptr, kComplex},
    {"fft_fft2", P::Fp32, nullptr, kComplex},
    {"fft_ifft2", P::Fp32, nullptr, kComplex},
    {"fft_fftn", P::Fp32, nullptr, kComplex},
    {"fft_ifftn", P::Fp32, nullptr, kComplex},
    {"fft_rfft", P::Fp32, nullptr, kComplex},
    {"fft_irfft", P::Fp32, nullptr, kComplex},
    {"fft_rfft2", P::Fp32, nullptr, kComplex},
    {"fft_irfft2", P::Fp32, nullptr, kComplex},
    {"fft_rfftn", P::Fp32, nullptr, kComplex},
    {"fft_irfftn", P::Fp32, nullptr, kComplex},
    {"fft_hfft", P::Fp32, nullptr, kComplex},
    {"fft_ihfft", P::Fp32, nullptr, kComplex},
    {"linalg_cond", P::Fp32, nullptr, kSolver},
    {"linalg_matrix_rank", P::Fp32, nullptr, kSolver},
    {"linalg_solve", P::Fp32, nullptr, kSolver},
    {"linalg_cholesky", P::Fp32, nullptr, kSolver},
    {"linalg_svdvals", P::Fp32, nullptr, kSolver},
    {"linalg_eigvals", P::Fp32, nullptr, kSolver},
    {"linalg_eigvalsh", P::Fp32, nullptr, kSolver},
    {"linalg_inv", P::Fp32, nullptr, kSolver},
    {"linalg_householder_product", P::Fp32, nullptr, kSolver},
    {"linalg_tensorinv", P::Fp32, nullptr, kSolver},
    {"linalg_tensorsolve", P::Fp32, nullptr, kSolver},
    {"fake_quantize_per_tensor_affine", P::Fp32, nullptr, "quantization: mixt has no quantized tensors"},
    {"geqrf", P::Fp32, nullptr, kSolver},
    {"_lu_with_info", P::Fp32, nullptr, kSolver},
    {"qr", P::Fp32, nullptr, kSolver},
    {"svd", P::Fp32, nullptr, kSolver},
    {"triangular_solve", P::Fp32, nullptr, kSolver},
    {"fractional_max_pool2d", P::Fp32, nullptr, "not implemented yet"},
    {"fractional_max_pool3d", P::Fp32, nullptr, kVolumetric},
    {"adaptive_max_pool3d", P::Fp32, nullptr, kVolumetric},
    {"multilabel_margin_loss_forward", P::Fp32, nullptr,
     "the internal forward of `multilabel_margin_loss`, which carries the policy"},
    {"linalg_qr", P::Fp32, nullptr, kSolver},
    {"linalg_cholesky_ex", P::Fp32, nullptr, kSolver},
    {"linalg_svd", P::Fp32, nullptr, kSolver},
    {"linalg_eig", P::Fp32, nullptr, kSolver},
    {"linalg_eigh", P::Fp32, nullptr, kSolver},
    {"linalg_lstsq", P::Fp32, nullptr, kSolver},
    {"linalg_inv_ex", P::Fp32, nullptr, kSolver},
    // promote
    {"stack", P::Promote, "stack", nullptr},
    {"cat", P::Promote, "cat", nullptr},
    {"index_copy", P::Promote, nullptr, "not implemented yet (`index_put` and `scatter` write by index)"},
};

}  // namespace

std::string_view aten_policy_name(AtenPolicy p) {
  switch (p) {
    case P::LowerPrecisionFp: return "lower_precision_fp";
    case P::Fp32: return "fp32";
    case P::Fp32SetOptDtype: return "fp32_set_opt_dtype";
    case P::Fp32AppendDtype: return "fp32_append_dtype";
    case P::Promote: return "promote";
    case P::Banned: return "banned";
  }
  return "?";
}

autocast::Policy mixt_policy(AtenPolicy p) {
  switch (p) {
    case P::LowerPrecisionFp: return autocast::Policy::Lower;
    case P::Fp32: return autocast::Policy::Fp32;
    case P::Fp32SetOptDtype:
    case P::Fp32AppendDtype: return autocast::Policy::Fp32OptDtype;
    case P::Promote: return autocast::Policy::Promote;
    case P::Banned: return autocast::Policy::Banned;
  }
  return autocast::Policy::PassThrough;
}

const std::vector<ListedOp>& pytorch_autocast_list(DeviceType device) {
  MIXT_CHECK(device == DeviceType::CUDA || device == DeviceType::CPU, "pytorch_autocast_list",
             "PyTorch's lists here are CUDA's and the CPU's, not {}'s", device_type_name(device));
  return device == DeviceType::CUDA ? kCuda : kCpu;
}

std::map<std::string, autocast::Policy> policies_from_pytorch_list(DeviceType device) {
  std::map<std::string, autocast::Policy> out;
  for (const ListedOp& e : pytorch_autocast_list(device)) {
    if (e.mixt_op == nullptr) continue;
    const auto [it, added] = out.emplace(e.mixt_op, mixt_policy(e.policy));
    MIXT_CHECK(added || it->second == mixt_policy(e.policy), "policies_from_pytorch_list",
               "{}'s list maps {} to {} with policy {}, and another entry maps it with policy {}",
               device_type_name(device), e.aten, e.mixt_op, aten_policy_name(e.policy), autocast::policy_name(it->second));
  }
  return out;
}

}  // namespace mixt::testing
