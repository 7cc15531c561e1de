// Padding composites: constant_pad_nd (cat of constant blocks; a negative pad
// narrows), reflection_pad1d/2d and replication_pad1d/2d (index_select of the mirrored
// or clamped positions, so the gradient sums into the positions read).
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/composite/helpers.h>
#include <mixt/kernels/composite/spatial.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::composite {
namespace {

// The padded dim of each (before, after) pair of `pad` (pairs from the last dim on).
int64_t padded_dim(const Tensor& x, int pair) { return x.dim() - 1 - pair; }

void constant_pad_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::ConstantPad>();
  const Tensor& x = c.in[0];
  MIXT_CHECK_OP(a.pad.size() % 2 == 0 && a.pad.size() <= 2 * x.dim(), c,
                "expected (before, after) pairs for at most the input's {} dims, got {}", x.dim(), a.pad);
  Tensor y = x;
  for (int j = 0; j < a.pad.size() / 2; ++j) {
    const int64_t d = padded_dim(x, j), before = a.pad[2 * j], after = a.pad[2 * j + 1];
    const int64_t n = x.size(d);
    MIXT_CHECK_OP(n + before + after >= 0, c, "the pads {} would leave dim {} of the input of shape {} with size {}",
                  a.pad, d, x.sizes(), n + before + after);
    // Crops first (a negative pad), then the constant blocks.
    y = narrow(y, d, before < 0 ? -before : 0, n + std::min<int64_t>(before, 0) + std::min<int64_t>(after, 0));
    auto block = [&](int64_t size) {
      Shape s = y.sizes();
      s[d] = size;
      return full(s, a.value, {.dtype = x.dtype(), .device = x.device()});
    };
    std::vector<Tensor> parts;
    if (before > 0) parts.push_back(block(before));
    parts.push_back(y);
    if (after > 0) parts.push_back(block(after));
    if (parts.size() > 1) y = cat(parts, d);
  }
  c.out[0] = y.is_same(x) ? clone(x) : y;
}

// The positions read by a reflected (mirrored about the edge elements) or replicated pad of a
// dim of size n: int64 [before + n + after].
Tensor source_positions(int64_t n, int64_t before, int64_t after, bool reflect, Device device) {
  const Tensor at = arange(-before, n + after, 1, {.dtype = kInt64, .device = device});
  if (!reflect) return clamp(at, 0, n - 1);
  const Tensor mirrored = abs(at);
  return where(ge(mirrored, n), sub(2 * (n - 1), mirrored), mirrored);
}

// reflection_pad / replication_pad of the last Rank dims of a (Rank + 1)-D or (Rank + 2)-D input.
template <int Rank, bool Reflect>
void index_pad_kernel(OpCall& c, DispatchKeySet) {
  const Shape& pad = c.attrs.get<attrs::Pad>().pad;
  const Tensor& x = c.in[0];
  MIXT_CHECK_OP(x.dim() == Rank + 1 || x.dim() == Rank + 2, c,
                "expected a {}-D or {}-D input, got shape {}", Rank + 1, Rank + 2, x.sizes());
  MIXT_CHECK_OP(pad.size() == 2 * Rank, c, "expected {} pads, got {}", 2 * Rank, pad);
  Tensor y = x;
  for (int j = 0; j < Rank; ++j) {
    const int64_t d = padded_dim(x, j), n = x.size(d), before = pad[2 * j], after = pad[2 * j + 1];
    if (Reflect)
      MIXT_CHECK_OP(before < n && after < n && before > -n && after > -n, c,
                    "each pad must be smaller than the padded dim: pads {} at dim {} of the input of shape {}", pad,
                    d, x.sizes());
    else
      MIXT_CHECK_OP(n > 0, c, "cannot replicate the edge of an empty dim {} (input shape {})", d, x.sizes());
    MIXT_CHECK_OP(n + before + after > 0, c, "the pads {} would leave dim {} of the input of shape {} with size {}",
                  pad, d, x.sizes(), n + before + after);
    y = index_select(y, d, source_positions(n, before, after, Reflect, x.device()));
  }
  c.out[0] = y;
}

}  // namespace

void register_padding_kernels() {
  register_composite(OpId::constant_pad_nd, constant_pad_kernel);
  register_composite(OpId::reflection_pad1d, index_pad_kernel<1, true>);
  register_composite(OpId::reflection_pad2d, index_pad_kernel<2, true>);
  register_composite(OpId::replication_pad1d, index_pad_kernel<1, false>);
  register_composite(OpId::replication_pad2d, index_pad_kernel<2, false>);
}

}  // namespace mixt::composite
