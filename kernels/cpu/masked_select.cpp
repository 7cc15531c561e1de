// masked_select and nonzero on the CPU: ops whose result size is the count of the
// selected elements, known only after reading the data (two passes: count, then write,
// in row-major order).
#include <cstring>
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/index_checks.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cpu {
namespace {

void check_cpu(const OpCall& c) {
  for (int i = 0; i < c.n_in; ++i)
    MIXT_CHECK_OP(c.in[i].is_cpu(), c, "the CPU kernel got input {} on {}", i, c.in[i].device());
}

// Sets out[0] to `t`, or copies `t` into the caller's out[0].
void set_result(OpCall& c, const Tensor& t) {
  if (!c.out[0].defined()) {
    c.out[0] = t;
    return;
  }
  MIXT_CHECK_OP(c.out[0].sizes() == t.sizes() && c.out[0].dtype() == t.dtype(), c,
                "the output is {} but the result is {}", c.out[0].describe(), t.describe());
  host::copy_into(c.out[0], t, c);
}

// The flat positions of t's nonzero elements (NaN is nonzero, -0.0 is zero), in order.
std::vector<int64_t> nonzero_positions(const OpCall& c, const Tensor& t_in) {
  const Tensor t = host::contiguous(t_in, c);
  std::vector<int64_t> at;
  visit_dtype(t.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(t.data_ptr());
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_integral_v<T>) {
        if (p[i] != 0) at.push_back(i);
      } else if (static_cast<double>(p[i]) != 0.0) {
        at.push_back(i);
      }
    }
  });
  return at;
}

void nonzero_kernel(OpCall& c, DispatchKeySet) {
  check_cpu(c);
  const Tensor& t = c.in[0];
  const std::vector<int64_t> at = nonzero_positions(c, t);
  const int64_t n = static_cast<int64_t>(at.size()), nd = t.dim();
  std::vector<int64_t> coords(static_cast<size_t>(n * nd));
  for (int64_t r = 0; r < n; ++r) {
    int64_t rem = at[r];
    for (int64_t d = nd - 1; d >= 0; --d) {
      coords[r * nd + d] = rem % t.sizes()[static_cast<int>(d)];
      rem /= t.sizes()[static_cast<int>(d)];
    }
  }
  set_result(c, from_vector(coords, {n * nd}).reshape({n, nd}));
}

void masked_select_kernel(OpCall& c, DispatchKeySet) {
  check_cpu(c);
  const Tensor &t = c.in[0], &mask = c.in[1];
  const Shape shape = index_checks::check_masked_select(c);
  const std::vector<int64_t> at = nonzero_positions(c, expand(mask, shape));
  const Tensor src = host::contiguous(expand(t, shape), c);
  const int64_t n = static_cast<int64_t>(at.size()), es = t.element_size();
  const Tensor out = make_empty({n}, t.dtype(), Device::cpu());
  const char* s = static_cast<const char*>(src.data_ptr());
  char* o = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < n; ++i) std::memcpy(o + i * es, s + at[i] * es, static_cast<size_t>(es));
  set_result(c, out);
}

}  // namespace

void register_masked_select_kernels() {
  register_kernel(OpId::nonzero, DispatchKey::CPU, nonzero_kernel);
  register_kernel(OpId::masked_select, DispatchKey::CPU, masked_select_kernel);
}

}  // namespace mixt::cpu
