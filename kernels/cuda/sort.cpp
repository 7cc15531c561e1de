// Sorting on CUDA: sort, argsort and topk (every line along the dim sorted stably, topk
// keeping its first k) and unique (the flattened input sorted once), with the CPU's
// checks (kernels/common/sort_checks.h) and the CPU's order (Note [Sort keys]): the same
// values and indices as the CPU kernels, ties and NaNs included. unique waits for the
// device to learn how many groups there are, as the CPU op's result size needs.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/index_checks.h>
#include <mixt/kernels/common/sort_checks.h>
#include <mixt/kernels/common/sort_keys.h>
#include <mixt/kernels/cuda/factory.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/sort_launch.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {
namespace {

// A sort of the lines of a dense copy of `t` (viewed as at least 1-D) along dim d, with
// its scratch pairs, queued on `stream`. Keeps what the gather and unique kernels read.
struct LineSort {
  Tensor input, keys, pos;  // input: dense
  SortArgs args;
};

LineSort sort_lines(const OpCall& c, const Tensor& t_in, int d, bool descending, cudaStream_t stream) {
  const char* op = op_name(c.op).data();
  LineSort s;
  const Tensor t = index_checks::at_least_1d(t_in);
  s.input = t.is_contiguous() ? t : dense_copy(t, stream, op);
  SortArgs& a = s.args;
  const Shape& sizes = t.sizes();
  for (int k = 0; k < d; ++k) a.outer *= sizes[k];
  for (int k = d + 1; k < sizes.size(); ++k) a.inner *= sizes[k];
  a.len = sizes[d];
  a.padded = sort_keys::padded_length(a.len);
  a.dtype = t.dtype();
  a.descending = descending;
  const int64_t pairs = checked_mul(checked_mul(a.outer, a.inner, op), a.padded, op);
  s.keys = make_empty({pairs}, kInt64, t.device());  // holds uint64 keys
  s.pos = make_empty({pairs}, kInt64, t.device());
  a.in = s.input.data_ptr();
  a.keys = static_cast<uint64_t*>(s.keys.data_ptr());
  a.pos = static_cast<int64_t*>(s.pos.data_ptr());
  check(launch_sort(a, stream), op);
  return s;
}

struct Selected {
  Tensor values, indices;  // values undefined unless asked for
};

// The first `keep` elements of every sorted line, t's sizes with `keep` at dim d.
Selected sort_and_keep(const OpCall& c, const Tensor& t, int d, bool descending, int64_t keep, bool with_values,
                       cudaStream_t stream) {
  Shape out_sizes = index_checks::at_least_1d(t).sizes();
  out_sizes[d] = keep;
  Selected r;
  r.indices = make_empty(out_sizes, kInt64, t.device());
  if (with_values) r.values = make_empty(out_sizes, t.dtype(), t.device());
  if (r.indices.numel() == 0) return r;
  const LineSort s = sort_lines(c, t, d, descending, stream);
  SortGatherArgs g;
  g.sort = s.args;
  g.keep = keep;
  g.indices = static_cast<int64_t*>(r.indices.data_ptr());
  g.values = with_values ? r.values.data_ptr() : nullptr;
  check(launch_sort_gather(g, stream), op_name(c.op).data());
  return r;
}

void sort_kernel(OpCall& c, DispatchKeySet) {
  const InputDevice on(c);
  const Tensor& t = c.in[0];
  const auto& a = c.attrs.get<attrs::Sort>();
  const int d = sort_checks::sort_dim(c, t, a.dim);
  const int64_t len = t.dim() == 0 ? 1 : t.sizes()[d];
  const bool argsort = c.op == OpId::argsort;
  const Selected s = sort_and_keep(c, t, d, a.descending, len, !argsort, on.stream());
  const cudaStream_t stream = on.stream();
  if (argsort) {
    write_output(c, 0, s.indices.reshape(t.sizes()), stream);
    return;
  }
  write_output(c, 0, s.values.reshape(t.sizes()), stream);
  write_output(c, 1, s.indices.reshape(t.sizes()), stream);
}

void topk_kernel(OpCall& c, DispatchKeySet) {
  const InputDevice on(c);
  const Tensor& t = c.in[0];
  const auto& a = c.attrs.get<attrs::Topk>();
  const Shape sizes = sort_checks::topk_sizes(c, t);
  const Selected s = sort_and_keep(c, t, sort_checks::sort_dim(c, t, a.dim), a.largest, a.k, true, on.stream());
  const cudaStream_t stream = on.stream();
  write_output(c, 0, s.values.reshape(sizes), stream);
  write_output(c, 1, s.indices.reshape(sizes), stream);
}

// unique: the flattened input sorted ascending; a sorted element starts a group unless it
// equals the previous one (a NaN equals nothing); groups are numbered by a prefix sum.
void unique_kernel(OpCall& c, DispatchKeySet) {
  const InputDevice on(c);
  const Tensor& t = c.in[0];
  const auto& a = c.attrs.get<attrs::Unique>();
  const char* op = op_name(c.op).data();
  const cudaStream_t stream = on.stream();
  const int64_t n = t.numel();
  UniqueWriteArgs w;
  w.n = n;
  w.dtype = t.dtype();
  Tensor inverse = make_empty({n}, kInt64, t.device()), marks, group, starts;
  LineSort s;
  if (n > 0) {
    s = sort_lines(c, t.reshape({n}), 0, false, stream);
    marks = make_empty({n}, kInt64, t.device());
    check(launch_unique_marks({s.args.keys, n, static_cast<int64_t*>(marks.data_ptr())}, stream), op);
    group = inclusive_sum(marks, op);
    w.groups = read_int64(static_cast<const int64_t*>(group.data_ptr()) + (n - 1), stream, op);
  }
  const Tensor values = make_empty({w.groups}, t.dtype(), t.device());
  const Tensor counts = make_empty({w.groups}, kInt64, t.device());
  if (n > 0) {
    starts = make_empty({w.groups}, kInt64, t.device());
    w.in = s.input.data_ptr();
    w.pos = s.args.pos;
    w.marks = static_cast<const int64_t*>(marks.data_ptr());
    w.group = static_cast<const int64_t*>(group.data_ptr());
    w.values = values.data_ptr();
    w.starts = static_cast<int64_t*>(starts.data_ptr());
    w.inverse = a.return_inverse ? static_cast<int64_t*>(inverse.data_ptr()) : nullptr;
    w.counts = a.return_counts ? static_cast<int64_t*>(counts.data_ptr()) : nullptr;
    check(launch_unique_write(w, stream), op);
  }
  write_output(c, 0, values, stream);
  if (a.return_inverse) write_output(c, 1, inverse.reshape(t.sizes()), stream);
  if (a.return_counts) write_output(c, 2, counts, stream);
}

}  // namespace

void register_sort_kernels() {
  register_kernel(OpId::sort, DispatchKey::CUDA, sort_kernel);
  register_kernel(OpId::argsort, DispatchKey::CUDA, sort_kernel);
  register_kernel(OpId::topk, DispatchKey::CUDA, topk_kernel);
  register_kernel(OpId::unique, DispatchKey::CUDA, unique_kernel);
}

}  // namespace mixt::cuda
