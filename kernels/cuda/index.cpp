// Indexing on CUDA: index_select, embedding, gather, scatter(_), scatter_add(_) and
// masked_fill(_). The checks that need no index values are the CPU's
// (kernels/common/index_checks.h) and raise mixt::Error before anything runs; index values
// are checked by the kernels, which report a bad one through the device error word (raised
// at the next sync, Note [Device-side errors]) and leave its element alone. scatter and
// scatter_add apply each line of the index in the CPU's order (the CPU's bits, no float
// atomics; Note [Ordered scatter]: long lines shared by owners of disjoint positions) when
// is_deterministic(), for short lines and for dtypes without atomics; long lines otherwise
// go per element (atomic sums; duplicate indices of scatter race).
#include <cstring>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/index_checks.h>
#include <mixt/kernels/cuda/factory.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/index_launch.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/determinism.h>

namespace mixt::cuda {
namespace {

using index_checks::at_least_1d;

// The line length from which scatter and scatter_add go per element (unless deterministic).
constexpr int64_t kMinParallelLine = 32;

// Every defined input is on `device`, a CUDA device.
void check_device(const OpCall& c, const Device& device) {
  MIXT_CHECK_OP(device.is_cuda(), c, "the CUDA kernel got a tensor on {}", device);
  for (int i = 0; i < c.n_in; ++i)
    MIXT_CHECK_OP(!c.in[i].defined() || c.in[i].device() == device, c, "input {} is on {}, expected {}", i,
                  c.in[i].device(), device);
}

// The storage bytes of `value` converted to `dtype` (Note [Scalar conversions]).
uint64_t value_bits(const Scalar& value, ScalarType dtype, const char* op) {
  uint64_t bits = 0;
  visit_dtype(dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = value.to<T>();
    std::memcpy(&bits, &v, sizeof(T));
  });
  return bits;
}



// The layout of `geoms` over `sizes` (operand 0 first).
StridedLayout layout_of(const Shape& sizes, std::span<const OperandGeometry> geoms) {
  return make_strided_layout(sizes, geoms);
}

// `s` with entry d replaced by v.
Shape with(Shape s, int d, int64_t v) {
  s[d] = v;
  return s;
}

// A dense result of `sizes` and `dtype` for the gather-like ops: the caller's out[0] when
// dense, else a new tensor that finish() copies into out[0].
Tensor result_buffer(const OpCall& c, const Shape& sizes, ScalarType dtype, const Device& device) {
  if (c.out[0].defined()) {
    MIXT_CHECK_OP(c.out[0].sizes() == sizes && c.out[0].dtype() == dtype && c.out[0].device() == device, c,
                  "the output is {} but the result is {}{} on {}", c.out[0].describe(), dtype, sizes, device);
    check_writable(c, c.out[0], "the output");
    if (c.out[0].is_contiguous()) return c.out[0];
  }
  return make_empty(sizes, dtype, device);
}

void finish(OpCall& c, const Tensor& result, cudaStream_t stream) {
  if (c.out[0].defined() && !c.out[0].is_same(result)) move_elements(c.out[0], result, stream, op_name(c.op).data());
  else c.out[0] = result;
}

// Runs the gather kernel: out (dense, `sizes`) from src along one dim, the index read
// through `index_geom` (over `sizes`), `src_geom` with the indexed dim's stride zeroed.
void run_gather(const OpCall& c, const Tensor& out, const Shape& sizes, const Tensor& index, const Shape& index_strides,
                const Tensor& src, const Shape& src_strides, int64_t size, int64_t src_stride, DeviceError code,
                cudaStream_t stream) {
  if (out.numel() == 0) return;
  const Shape out_strides = contiguous_strides(sizes);
  const OperandGeometry geom[3] = {{&sizes, &out_strides, out.element_size()},
                                   {&sizes, &index_strides, index.element_size()},
                                   {&sizes, &src_strides, src.element_size()}};
  GatherArgs a;
  a.layout = layout_of(sizes, geom);
  a.out = out.data_ptr();
  a.index = index.data_ptr();
  a.src = src.data_ptr();
  a.size = size;
  a.src_stride = src_stride * src.element_size();
  a.element_size = static_cast<int>(src.element_size());
  a.index_dtype = index.dtype();
  a.error = device_error_word(out.device().index());
  a.code = code;
  check(launch_gather(a, stream), op_name(c.op).data());
}

void index_select_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& self = c.in[0];
  const Tensor& index = c.in[1];
  check_device(c, self.device());
  const auto [d, sizes] = index_checks::check_index_select(c, self, index);
  DeviceGuard guard(self.device().index(), "index_select");
  const cudaStream_t stream = current_native_stream(self.device().index());
  const Tensor out = result_buffer(c, sizes, self.dtype(), self.device());
  const Tensor self1 = at_least_1d(self), index1 = at_least_1d(index);
  const Shape sizes1 = self.dim() > 0 ? sizes : Shape{1};
  Shape index_strides = Shape::filled(sizes1.size(), 0);
  index_strides[d] = index1.strides()[0];
  run_gather(c, out, sizes1, index1, index_strides, self1, with(self1.strides(), d, 0), self1.sizes()[d],
             self1.strides()[d], DeviceError::IndexSelectOutOfBounds, stream);
  finish(c, out, stream);
}

void embedding_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& weight = c.in[0];
  const Tensor& indices = c.in[1];
  check_device(c, weight.device());
  const Shape sizes = index_checks::check_embedding(c, weight, indices);
  DeviceGuard guard(weight.device().index(), "embedding");
  const cudaStream_t stream = current_native_stream(weight.device().index());
  const Tensor out = result_buffer(c, sizes, weight.dtype(), weight.device());
  Shape index_strides = indices.strides(), weight_strides = Shape::filled(indices.dim(), 0);
  index_strides.push_back(0);
  weight_strides.push_back(weight.strides()[1]);
  run_gather(c, out, sizes, indices, index_strides, weight, weight_strides, weight.sizes()[0], weight.strides()[0],
             DeviceError::EmbeddingOutOfBounds, stream);
  finish(c, out, stream);
}

void gather_kernel(OpCall& c, DispatchKeySet) {
  check_device(c, c.in[0].device());
  const Tensor self = at_least_1d(c.in[0]), index = at_least_1d(c.in[1]);
  const int d = index_checks::check_gather(c, self, index);
  DeviceGuard guard(self.device().index(), "gather");
  const cudaStream_t stream = current_native_stream(self.device().index());
  const Tensor out = result_buffer(c, c.in[1].sizes(), self.dtype(), self.device());
  run_gather(c, out, index.sizes(), index, index.strides(), self, with(self.strides(), d, 0), self.sizes()[d],
             self.strides()[d], DeviceError::GatherOutOfBounds, stream);
  finish(c, out, stream);
}

// scatter, scatter_, scatter_add, scatter_add_.
void scatter_common(OpCall& c, bool add) {
  check_device(c, c.in[0].device());
  const index_checks::ScatterCall sa = index_checks::check_scatter(c, add);
  const Tensor& self_in = c.in[0];
  const Device device = self_in.device();
  const char* op = op_name(c.op).data();
  Tensor out = index_checks::scatter_output(c, [&] { return make_empty(self_in.sizes(), self_in.dtype(), device); });
  MIXT_CHECK_OP(out.device() == device, c, "the output is on {}, self on {}", out.device(), device);
  const uint64_t bits = sa.has_src ? 0 : value_bits(sa.value, out.dtype(), op);
  DeviceGuard guard(device.index(), op);
  const cudaStream_t stream = current_native_stream(device.index());
  Tensor src = sa.src;
  if (sa.has_src && src.shares_storage(out)) src = dense_copy(src, stream, op);
  // The CPU reads every index before writing; here they are read while writing.
  const Tensor index = sa.index.shares_storage(out) ? dense_copy(sa.index, stream, op) : sa.index;
  if (!out.is_same(self_in)) move_elements(out, self_in, stream, op);
  c.out[0] = out;
  const int d = sa.dim;
  if (index.numel() == 0) return;
  const Tensor out1 = at_least_1d(out);
  const ScalarType dtype = out.dtype();
  // The ordered path applies each line in the CPU's order (Note [Ordered scatter]): the
  // CPU's result, deterministic. Long lines go per element instead when timing may decide
  // the result (atomic sums, racing duplicate assignments), unless set_deterministic(true).
  const bool per_element = !is_deterministic() && index.sizes()[d] >= kMinParallelLine &&
                           (!add || scatter_add_has_atomics(dtype));
  const Shape space = per_element ? index.sizes() : with(index.sizes(), d, 1);
  const Shape out_strides = with(out1.strides(), d, 0);
  const Shape src_strides = sa.has_src ? src.strides() : Shape::filled(index.dim(), 0);
  const OperandGeometry geom[3] = {{&space, &out_strides, out1.element_size()},
                                   {&space, &index.strides(), index.element_size()},
                                   {&space, &src_strides, out1.element_size()}};
  ScatterArgs a;
  a.layout = layout_of(space, geom);
  a.plan = make_scatter_plan(a.layout.numel, per_element ? 1 : index.sizes()[d], out1.sizes()[d]);
  // A bucketed plan's workspace: freed after queuing, which the stream-ordered allocator
  // makes safe (reused only by later work on this stream).
  Tensor workspace;
  if (const int64_t ints = scatter_workspace_ints(a.plan); ints > 0) {
    workspace = make_empty({ints}, kInt32, device);
    a.workspace = static_cast<int32_t*>(workspace.data_ptr());
  }
  a.index_step = index.strides()[d] * index.element_size();
  a.src_step = src_strides[d] * out1.element_size();
  a.out = out1.data_ptr();
  a.index = index.data_ptr();
  a.src = sa.has_src ? src.data_ptr() : nullptr;
  a.value_bits = bits;
  a.size = out1.sizes()[d];
  a.out_stride = out1.strides()[d] * out1.element_size();
  a.dtype = dtype;
  a.index_dtype = index.dtype();
  a.mode = add ? ScatterMode::Add : ScatterMode::Assign;
  a.atomic = add && per_element;
  a.error = device_error_word(device.index());
  check(launch_scatter(a, stream), op);
}

void scatter_kernel(OpCall& c, DispatchKeySet) { scatter_common(c, false); }
void scatter_add_kernel(OpCall& c, DispatchKeySet) {
  MIXT_CHECK_OP(c.n_in > 2 && c.in[2].defined(), c, "expects a src tensor");
  scatter_common(c, true);
}

void masked_fill_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& self = c.in[0];
  check_device(c, self.device());
  const Device device = self.device();
  const char* op = op_name(c.op).data();
  const Shape shape = index_checks::check_masked_fill(c);
  Tensor out = index_checks::masked_fill_output(c, shape, [&] { return make_empty(shape, self.dtype(), device); });
  MIXT_CHECK_OP(out.device() == device, c, "the output is on {}, self on {}", out.device(), device);
  const uint64_t bits = value_bits(c.attrs.get<attrs::Value>().value, out.dtype(), op);
  DeviceGuard guard(device.index(), op);
  const cudaStream_t stream = current_native_stream(device.index());
  Tensor mask = c.in[1];
  if (mask.shares_storage(out)) mask = dense_copy(mask, stream, op);
  if (!out.is_same(self)) move_elements(out, self, stream, op);
  c.out[0] = out;
  if (out.numel() == 0) return;
  const OperandGeometry geom[2] = {{&out.sizes(), &out.strides(), out.element_size()},
                                   {&mask.sizes(), &mask.strides(), mask.element_size()}};
  MaskedFillArgs a;
  a.layout = layout_of(out.sizes(), geom);
  a.out = out.data_ptr();
  a.mask = mask.data_ptr();
  a.element_size = static_cast<int>(out.element_size());
  a.value_bits = bits;
  check(launch_masked_fill(a, stream), op);
}

}  // namespace

void register_index_kernels() {
  register_kernel(OpId::index_select, DispatchKey::CUDA, index_select_kernel);
  register_kernel(OpId::embedding, DispatchKey::CUDA, embedding_kernel);
  register_kernel(OpId::gather, DispatchKey::CUDA, gather_kernel);
  register_kernel(OpId::scatter, DispatchKey::CUDA, scatter_kernel);
  register_kernel(OpId::scatter_, DispatchKey::CUDA, scatter_kernel);
  register_kernel(OpId::scatter_add, DispatchKey::CUDA, scatter_add_kernel);
  register_kernel(OpId::scatter_add_, DispatchKey::CUDA, scatter_add_kernel);
  register_kernel(OpId::masked_fill, DispatchKey::CUDA, masked_fill_kernel);
  register_kernel(OpId::masked_fill_, DispatchKey::CUDA, masked_fill_kernel);
}

}  // namespace mixt::cuda
