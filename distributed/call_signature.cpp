#include <mixt/distributed/call_signature.h>

#include <algorithm>

#include <mixt/distributed/process_group.h>
#include <mixt/runtime/check.h>

namespace mixt::dist {

namespace {

const char* kind_name(int32_t kind) {
  switch (static_cast<CollectiveKind>(kind)) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::Barrier: return "barrier";
  }
  return "unknown collective";
}

bool has_reduce_op(int32_t kind) {
  const auto k = static_cast<CollectiveKind>(kind);
  return k == CollectiveKind::AllReduce || k == CollectiveKind::ReduceScatter;
}

}  // namespace

CallSignature CallSignature::of(CollectiveKind kind, const Tensor* t, int32_t arg) {
  CallSignature s;
  s.kind = static_cast<int32_t>(kind);
  s.arg = arg;
  if (t == nullptr) return s;
  s.dtype = static_cast<int32_t>(t->dtype());
  s.ndim = static_cast<int32_t>(t->dim());
  s.numel = t->numel();
  const Shape& sizes = t->sizes();
  std::copy(sizes.begin(), sizes.end(), s.dims);
  return s;
}

bool CallSignature::operator==(const CallSignature& o) const {
  return kind == o.kind && dtype == o.dtype && arg == o.arg && ndim == o.ndim && numel == o.numel &&
         std::equal(dims, dims + kMaxDims, o.dims);
}

std::string CallSignature::str() const {
  std::string out = kind_name(kind);
  const auto k = static_cast<CollectiveKind>(kind);
  if (has_reduce_op(kind)) out += fmt::format("({})", reduce_op_name(static_cast<ReduceOp>(arg)));
  if (k == CollectiveKind::Broadcast) out += fmt::format("(root {})", arg);
  return k == CollectiveKind::Barrier ? out : out + " " + tensor_str();
}

std::string CallSignature::tensor_str() const {
  const auto dt = static_cast<ScalarType>(dtype);
  std::string out = fmt::format("{} [", dtype >= 0 && dtype < kNumDtypes ? dtype_name(dt) : std::string_view("?"));
  for (int i = 0; i < std::clamp(ndim, 0, kMaxDims); ++i) out += fmt::format("{}{}", i ? ", " : "", dims[i]);
  return out + "]";
}

void check_signatures(const char* op, std::span<const CallSignature> ranks) {
  const bool agree = std::all_of(ranks.begin(), ranks.end(), [&](const CallSignature& s) { return s == ranks[0]; });
  if (agree) return;
  std::string calls;
  for (size_t r = 0; r < ranks.size(); ++r) calls += fmt::format("\n  rank {}: {}", r, ranks[r].str());
  MIXT_FAIL(op, "the ranks disagree on the collective:{}", calls);
}

}  // namespace mixt::dist
