// The built-in policy tables, as data. They list, per device, the ops of
// PyTorch 2.11's autocast lists (aten/src/ATen/autocast_mode.*) that mixt has;
// unlisted ops pass through. See Note [Autocast tables].
#include <array>
#include <atomic>
#include <mutex>
#include <ostream>

#include <mixt/autocast/policy.h>
#include <mixt/runtime/check.h>

namespace mixt::autocast {
namespace {

struct Entry {
  OpId op;
  Policy policy;
};

// CUDA (PyTorch's AutocastCUDA lists).
constexpr Entry kCuda[] = {
    // lower_precision_fp
    {OpId::lstm_cell, Policy::Lower}, {OpId::gru_cell, Policy::Lower}, {OpId::rnn_tanh_cell, Policy::Lower},
    {OpId::rnn_relu_cell, Policy::Lower},
    {OpId::conv1d, Policy::Lower}, {OpId::conv2d, Policy::Lower}, {OpId::addmm, Policy::Lower},
    {OpId::conv3d, Policy::Lower}, {OpId::conv_transpose1d, Policy::Lower}, {OpId::conv_transpose2d, Policy::Lower},
    {OpId::conv_transpose3d, Policy::Lower},
    {OpId::matmul, Policy::Lower}, {OpId::mm, Policy::Lower}, {OpId::mv, Policy::Lower},
    {OpId::linear, Policy::Lower}, {OpId::baddbmm, Policy::Lower}, {OpId::bmm, Policy::Lower},
    {OpId::scaled_dot_product_attention, Policy::Lower},
    {OpId::prelu, Policy::Lower},
    {OpId::addmv, Policy::Lower}, {OpId::addr, Policy::Lower}, {OpId::addbmm, Policy::Lower},
    {OpId::linalg_vecdot, Policy::Lower}, {OpId::chain_matmul, Policy::Lower}, {OpId::linalg_multi_dot, Policy::Lower},
    {OpId::einsum, Policy::Lower},
    // fp32
    {OpId::erfinv, Policy::Fp32}, {OpId::exp, Policy::Fp32}, {OpId::expm1, Policy::Fp32},
    {OpId::log, Policy::Fp32}, {OpId::log10, Policy::Fp32}, {OpId::log2, Policy::Fp32},
    {OpId::log1p, Policy::Fp32}, {OpId::reciprocal, Policy::Fp32}, {OpId::rsqrt, Policy::Fp32},
    {OpId::tan, Policy::Fp32}, {OpId::pow, Policy::Fp32}, {OpId::softplus, Policy::Fp32},
    {OpId::acos, Policy::Fp32}, {OpId::asin, Policy::Fp32}, {OpId::cosh, Policy::Fp32}, {OpId::sinh, Policy::Fp32},
    {OpId::layer_norm, Policy::Fp32}, {OpId::group_norm, Policy::Fp32},
    {OpId::cosine_similarity, Policy::Fp32}, {OpId::nll_loss, Policy::Fp32}, {OpId::kl_div, Policy::Fp32},
    {OpId::l1_loss, Policy::Fp32}, {OpId::smooth_l1_loss, Policy::Fp32}, {OpId::huber_loss, Policy::Fp32},
    {OpId::mse_loss, Policy::Fp32}, {OpId::binary_cross_entropy_with_logits, Policy::Fp32},
    {OpId::logsumexp, Policy::Fp32},
    {OpId::upsample_nearest2d, Policy::Fp32}, {OpId::upsample_bilinear2d, Policy::Fp32},
    {OpId::poisson_nll_loss, Policy::Fp32}, {OpId::cosine_embedding_loss, Policy::Fp32},
    {OpId::hinge_embedding_loss, Policy::Fp32}, {OpId::margin_ranking_loss, Policy::Fp32},
    {OpId::triplet_margin_loss, Policy::Fp32}, {OpId::multilabel_margin_loss, Policy::Fp32},
    {OpId::soft_margin_loss, Policy::Fp32}, {OpId::multi_margin_loss, Policy::Fp32},
    {OpId::dist, Policy::Fp32}, {OpId::pdist, Policy::Fp32}, {OpId::cdist, Policy::Fp32}, {OpId::renorm, Policy::Fp32},
    // Not on PyTorch's list: a composite there, whose log_softmax (fp32_set_opt_dtype) and nll_loss
    // (fp32) make its loss float32, computed from float32 logits. Listing that outcome gives it on
    // every backend, the ones with a fused kernel too (Note [Decomposed ops in the tables]).
    {OpId::cross_entropy, Policy::Fp32},
    // fp32_set_opt_dtype (and norm's fp32_append_dtype, which behaves the same on mixt's norm)
    {OpId::prod, Policy::Fp32OptDtype}, {OpId::softmax, Policy::Fp32OptDtype},
    {OpId::log_softmax, Policy::Fp32OptDtype}, {OpId::cumprod, Policy::Fp32OptDtype},
    {OpId::cumsum, Policy::Fp32OptDtype}, {OpId::sum, Policy::Fp32OptDtype}, {OpId::norm, Policy::Fp32OptDtype},
    // promote
    {OpId::index_put, Policy::Promote},
    // PyTorch lists grid_sampler, the op grid_sample calls (grid_sampler_2d here).
    {OpId::grid_sampler_2d, Policy::Promote},
    {OpId::addcdiv, Policy::Promote}, {OpId::addcmul, Policy::Promote}, {OpId::atan2, Policy::Promote},
    {OpId::dot, Policy::Promote}, {OpId::scatter_add, Policy::Promote}, {OpId::cross, Policy::Promote},
    {OpId::vdot, Policy::Promote}, {OpId::tensordot, Policy::Promote}, {OpId::bilinear, Policy::Promote},
    // banned
    {OpId::binary_cross_entropy, Policy::Banned},
};

// CPU (PyTorch's AutocastCPU lists: lower, fp32 and promote only).
constexpr Entry kCpu[] = {
    // lower_precision_fp
    {OpId::conv1d, Policy::Lower}, {OpId::conv2d, Policy::Lower}, {OpId::bmm, Policy::Lower},
    {OpId::conv3d, Policy::Lower}, {OpId::conv_transpose1d, Policy::Lower}, {OpId::conv_transpose2d, Policy::Lower},
    {OpId::conv_transpose3d, Policy::Lower},
    {OpId::mm, Policy::Lower}, {OpId::baddbmm, Policy::Lower}, {OpId::addmm, Policy::Lower},
    {OpId::linear, Policy::Lower}, {OpId::matmul, Policy::Lower},
    {OpId::scaled_dot_product_attention, Policy::Lower},
    {OpId::prelu, Policy::Lower},
    {OpId::linalg_vecdot, Policy::Lower}, {OpId::addmm_activation, Policy::Lower}, {OpId::addbmm, Policy::Lower},
    // Not on the CPU list: composites there that multiply through mm or bmm, which the CPU list lowers
    // (Note [Decomposed ops in the tables]).
    {OpId::einsum, Policy::Lower}, {OpId::tensordot, Policy::Lower}, {OpId::chain_matmul, Policy::Lower},
    {OpId::linalg_multi_dot, Policy::Lower},
    // fp32
    {OpId::binary_cross_entropy, Policy::Fp32}, {OpId::prod, Policy::Fp32}, {OpId::mse_loss, Policy::Fp32},
    {OpId::avg_pool3d, Policy::Fp32}, {OpId::grid_sampler_2d, Policy::Fp32}, {OpId::reflection_pad1d, Policy::Fp32},
    {OpId::reflection_pad2d, Policy::Fp32}, {OpId::replication_pad1d, Policy::Fp32},
    {OpId::replication_pad2d, Policy::Fp32},
    {OpId::nll_loss, Policy::Fp32}, {OpId::smooth_l1_loss, Policy::Fp32}, {OpId::cross_entropy, Policy::Fp32},
    {OpId::l1_loss, Policy::Fp32}, {OpId::huber_loss, Policy::Fp32}, {OpId::kl_div, Policy::Fp32},
    {OpId::binary_cross_entropy_with_logits, Policy::Fp32}, {OpId::cdist, Policy::Fp32},
    {OpId::poisson_nll_loss, Policy::Fp32}, {OpId::cosine_embedding_loss, Policy::Fp32},
    {OpId::hinge_embedding_loss, Policy::Fp32}, {OpId::margin_ranking_loss, Policy::Fp32},
    {OpId::triplet_margin_loss, Policy::Fp32}, {OpId::multilabel_margin_loss, Policy::Fp32},
    {OpId::soft_margin_loss, Policy::Fp32}, {OpId::multi_margin_loss, Policy::Fp32},
    // promote
    {OpId::stack, Policy::Promote}, {OpId::cat, Policy::Promote},
};

struct Tables {
  std::array<std::array<Policy, kMaxOps>, kNumDeviceTypes> policy{};
};

void fill_builtin(Tables& t) {
  for (auto& row : t.policy) row.fill(Policy::PassThrough);
  for (const Entry& e : kCpu) t.policy[static_cast<int>(DeviceType::CPU)][static_cast<size_t>(e.op)] = e.policy;
  for (const Entry& e : kCuda) t.policy[static_cast<int>(DeviceType::CUDA)][static_cast<size_t>(e.op)] = e.policy;
}

Tables& tables() {
  static Tables t = [] {
    Tables x;
    fill_builtin(x);
    return x;
  }();
  return t;
}
std::mutex g_mutex;

// Note [Policies across threads]: ops on other threads read the table while
// set_policy / reset_policies write it, so each slot is read and written as a
// relaxed atomic (one byte: a plain load or store): a reader sees the old or the
// new policy of an op, never a torn value.
Policy load(Policy& slot) { return std::atomic_ref(slot).load(std::memory_order_relaxed); }
void store(Policy& slot, Policy p) { std::atomic_ref(slot).store(p, std::memory_order_relaxed); }

}  // namespace

std::string_view policy_name(Policy p) {
  switch (p) {
    case Policy::PassThrough: return "pass-through";
    case Policy::Lower: return "lower";
    case Policy::Fp32: return "fp32";
    case Policy::Fp32OptDtype: return "fp32_opt_dtype";
    case Policy::Promote: return "promote";
    case Policy::Banned: return "banned";
    case Policy::LowerF32Out: return "lower_f32_out";
    case Policy::DisabledInside: return "disabled_inside";
  }
  return "?";
}

Policy policy_of(DeviceType device, OpId op) {
  return load(tables().policy[static_cast<int>(device)][static_cast<size_t>(op)]);
}

std::ostream& operator<<(std::ostream& os, Policy p) { return os << policy_name(p); }

Policy builtin_policy(DeviceType device, OpId op) {
  static const Tables builtin = [] {
    Tables x;
    fill_builtin(x);
    return x;
  }();
  return builtin.policy[static_cast<int>(device)][static_cast<size_t>(op)];
}

void set_policy(DeviceType device, OpId op, Policy p) {
  const int i = static_cast<int>(op);
  MIXT_CHECK(i >= 0 && i < num_ops(), "autocast::set_policy", "op id {} does not exist", i);
  std::lock_guard lock(g_mutex);
  store(tables().policy[static_cast<int>(device)][static_cast<size_t>(i)], p);
}

void reset_policies() {
  Tables builtin;
  fill_builtin(builtin);
  std::lock_guard lock(g_mutex);
  for (size_t d = 0; d < builtin.policy.size(); ++d)
    for (size_t i = 0; i < builtin.policy[d].size(); ++i) store(tables().policy[d][i], builtin.policy[d][i]);
}

std::string describe_policies(DeviceType device, bool markdown) {
  constexpr Policy kOrder[] = {Policy::Lower, Policy::LowerF32Out, Policy::Fp32, Policy::Fp32OptDtype,
                               Policy::Promote, Policy::Banned, Policy::DisabledInside};
  std::string out = markdown ? "| policy | ops |\n|---|---|\n" : "";
  for (Policy p : kOrder) {
    std::string ops;
    for (int i = 0; i < num_ops(); ++i)
      if (policy_of(device, static_cast<OpId>(i)) == p)
        ops += (ops.empty() ? "" : ", ") + (markdown ? "`" + std::string(op_name(static_cast<OpId>(i))) + "`"
                                                     : std::string(op_name(static_cast<OpId>(i))));
    if (ops.empty()) continue;
    out += markdown ? "| " + std::string(policy_name(p)) + " | " + ops + " |\n"
                    : std::string(policy_name(p)) + ": " + ops + "\n";
  }
  out += markdown ? "| pass-through | every other op |\n" : "pass-through: every other op\n";
  return out;
}

std::string_view banned_message(DeviceType device, OpId op) {
  if (policy_of(device, op) != Policy::Banned) return "";
  if (op == OpId::binary_cross_entropy)
    return "binary_cross_entropy is unsafe to autocast (its log overflows in float16): use "
           "binary_cross_entropy_with_logits, which fuses the sigmoid, or compute it outside autocast";
  return "this op is banned under autocast";
}

}  // namespace mixt::autocast
