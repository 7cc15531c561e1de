// Indexing kernels on the CPU: index_select, gather, scatter(_), scatter_add(_),
// masked_fill(_) and embedding. Index tensors (int32 or int64) are read once into
// wrapped int64 values and checked before anything is written, so a bad index
// raises mixt::Error and nothing reads or writes out of bounds. Negative indices
// in [-size, -1] count from the end. Copies move raw elements of the dtype's size.
#include <algorithm>
#include <cstring>
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/common/index_checks.h>
#include <mixt/kernels/common/index_math.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cpu {
namespace {

using index_checks::at_least_1d;
using index_checks::kIndexDtypes;

// The storage bytes of `value` converted to `dtype` (floats truncate into integers; out of
// an integer type's range raises: Note [Scalar conversions]).
uint64_t value_bits(const Scalar& value, ScalarType dtype, const char* op) {
  uint64_t bits = 0;
  visit_dtype(dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = value.to<T>();
    std::memcpy(&bits, &v, sizeof(T));
  });
  return bits;
}

// Every input is a CPU tensor.
void check_cpu(const OpCall& c) {
  for (int i = 0; i < c.n_in; ++i)
    MIXT_CHECK_OP(!c.in[i].defined() || c.in[i].is_cpu(), c, "the CPU kernel got input {} on {}", i,
                  c.in[i].device());
}

// No two elements of `t` share memory (it can be written element by element).
// Values of `index` in row-major order, wrapped into [0, size); raises on the first value outside [-size, size).
std::vector<int64_t> read_indices(const OpCall& c, const Tensor& index, int64_t size, int64_t dim) {
  index_checks::check_index_dtype(c, index);
  const Tensor src = host::contiguous(index, c);
  std::vector<int64_t> out(static_cast<size_t>(src.numel()));
  visit_dtype<kIndexDtypes>(src.dtype(), op_name(c.op).data(), [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* p = static_cast<const I*>(src.data_ptr());
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t v = p[i];
      MIXT_CHECK_OP(v >= -size && v < size, c, "index {} is out of bounds for dimension {} with size {}", v, dim, size);
      out[i] = v < 0 ? v + size : v;
    }
  });
  return out;
}

// A loop over `sizes` cut into lines along `dim`. Operands have their own element
// strides; a line's start offsets are computed from its coordinates off `dim`.
struct Lines {
  Shape sizes;
  int dim = 0;
  int nops = 0;
  Shape strides[3];
};

// Calls f(offsets, len) for every line, in parallel. Distinct lines differ in a
// coordinate off `dim`, so scatters through lines never race.
template <class F>
void for_each_line(const Lines& L, F&& f) {
  const int64_t total = L.sizes.numel();
  if (total == 0) return;
  const int64_t len = L.sizes[L.dim], lines = total / len;
  parallel_for(lines, std::max<int64_t>(1, kParallelGrain / len), [&](int64_t b, int64_t e) {
    for (int64_t line = b; line < e; ++line) {
      int64_t off[3] = {0, 0, 0}, rem = line;
      for (int d = L.sizes.size() - 1; d >= 0; --d) {
        if (d == L.dim) continue;
        const int64_t i = rem % L.sizes[d];
        rem /= L.sizes[d];
        for (int k = 0; k < L.nops; ++k) off[k] += i * L.strides[k][d];
      }
      f(off, len);
    }
  });
}

// out = self with dim `d` replaced by the rows idx (out: contiguous, self: any strides, both >= 1-D).
void select_into(const Tensor& out, const Tensor& self, int d, const std::vector<int64_t>& idx) {
  if (out.numel() == 0) return;
  const int64_t n_idx = static_cast<int64_t>(idx.size()), n_self = self.sizes()[d], es = self.element_size();
  const char* src = static_cast<const char*>(self.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  if (self.is_contiguous()) {
    // Slabs of `inner` contiguous elements move with memcpy.
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < d; ++k) outer *= self.sizes()[k];
    for (int k = d + 1; k < self.dim(); ++k) inner *= self.sizes()[k];
    const int64_t bytes = inner * es;
    parallel_for(outer * n_idx, std::max<int64_t>(1, kParallelGrain / inner), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t o = r / n_idx, j = r % n_idx;
        std::memcpy(dst + r * bytes, src + (o * n_self + idx[j]) * bytes, static_cast<size_t>(bytes));
      }
    });
    return;
  }
  Lines L{out.sizes(), d, 2, {contiguous_strides(out.sizes()), self.strides()}};
  const int64_t os = L.strides[0][d], ss = self.strides()[d];
  visit_size(es, [&](auto tag) {
    using U = typename decltype(tag)::type;
    U* o = reinterpret_cast<U*>(dst);
    const U* s = reinterpret_cast<const U*>(src);
    for_each_line(L, [&](const int64_t* off, int64_t len) {
      for (int64_t k = 0; k < len; ++k) o[off[0] + k * os] = s[off[1] + idx[k] * ss];
    });
  });
}

// A fresh contiguous result, or the caller's out[0] (written through a contiguous temporary when needed).
Tensor result_buffer(const OpCall& c, const Shape& sizes, ScalarType dtype) {
  if (c.out[0].defined()) {
    MIXT_CHECK_OP(c.out[0].sizes() == sizes && c.out[0].dtype() == dtype, c,
                  "the output is {} but the result is {}{}", c.out[0].describe(), dtype, sizes);
    if (c.out[0].is_contiguous() && c.out[0].is_cpu()) return c.out[0];
  }
  return make_empty(sizes, dtype, Device::cpu());
}

// Sets out[0] to `result`, or copies it into the caller's out[0].
void set_result(OpCall& c, const Tensor& result) {
  if (c.out[0].defined() && !c.out[0].is_same(result)) host::copy_into(c.out[0], result, c);
  else c.out[0] = result;
}

// index_select: the slices of self at `index` along dim.
void index_select_kernel(OpCall& c, DispatchKeySet) {
  check_cpu(c);
  const Tensor& self = c.in[0];
  const Tensor& index = c.in[1];
  const auto [d, sizes] = index_checks::check_index_select(c, self, index);
  const Tensor self1 = at_least_1d(self);
  const std::vector<int64_t> idx = read_indices(c, index, self1.sizes()[d], d);
  const Tensor out = result_buffer(c, sizes, self.dtype());
  select_into(at_least_1d(out), self1, d, idx);
  set_result(c, out);
}

// embedding: rows of weight [N, D] picked by indices: shape indices.shape + [D].
void embedding_kernel(OpCall& c, DispatchKeySet) {
  check_cpu(c);
  const Tensor& weight = c.in[0];
  const Tensor& indices = c.in[1];
  const Shape sizes = index_checks::check_embedding(c, weight, indices);
  const std::vector<int64_t> idx = read_indices(c, indices, weight.sizes()[0], 0);
  const Tensor out = result_buffer(c, sizes, weight.dtype());
  const int64_t rows = static_cast<int64_t>(idx.size());
  select_into(make_view(out, {rows, weight.sizes()[1]}, contiguous_strides({rows, weight.sizes()[1]}),
                        out.storage_offset()),
              weight, 0, idx);
  set_result(c, out);
}

// gather: out[c] = self[c with c[dim] = index[c]], shaped like index.
void gather_kernel(OpCall& c, DispatchKeySet) {
  check_cpu(c);
  const Tensor self = at_least_1d(c.in[0]), index = at_least_1d(c.in[1]);
  const int d = index_checks::check_gather(c, self, index);
  const std::vector<int64_t> idx = read_indices(c, index, self.sizes()[d], d);
  const Tensor out = result_buffer(c, c.in[1].sizes(), self.dtype());
  // Operand 0 walks both the output and idx (both contiguous in the index's shape).
  Lines L{index.sizes(), d, 2, {contiguous_strides(index.sizes()), self.strides()}};
  const int64_t os = L.strides[0][d], ss = self.strides()[d];
  visit_size(self.element_size(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    U* o = static_cast<U*>(out.data_ptr());
    const U* s = static_cast<const U*>(self.data_ptr());
    for_each_line(L, [&](const int64_t* off, int64_t len) {
      for (int64_t k = 0; k < len; ++k) o[off[0] + k * os] = s[off[1] + idx[off[0] + k * os] * ss];
    });
  });
  set_result(c, out);
}

// scatter, scatter_, scatter_add, scatter_add_: out = self (cloned unless in place), then
// out[... idx ...] = src (or value), or += src.
void scatter_common(OpCall& c, bool add) {
  check_cpu(c);
  index_checks::ScatterCall sa = index_checks::check_scatter(c, add);
  const bool has_src = sa.has_src;
  const Scalar value = sa.value;
  const Tensor& self_in = c.in[0];
  const Tensor index = sa.index;
  const int nd = index.dim();
  const int d = sa.dim;
  Tensor src = sa.src;
  const Tensor self1 = at_least_1d(self_in);
  const std::vector<int64_t> idx = read_indices(c, index, self1.sizes()[d], d);
  Tensor out =
      index_checks::scatter_output(c, [&] { return make_empty(self_in.sizes(), self_in.dtype(), Device::cpu()); });
  if (has_src && src.shares_storage(out)) src = host::copied(src, src.dtype(), c);
  if (!out.is_same(self_in)) host::copy_into(out, self_in, c);
  c.out[0] = out;
  const Tensor out1 = at_least_1d(out);
  const Shape src_strides = has_src ? src.strides() : Shape::filled(nd, 0);
  Lines L{index.sizes(), d, 3, {out1.strides(), src_strides, contiguous_strides(index.sizes())}};
  const int64_t os = out1.strides()[d];
  if (add) {
    visit_dtype(out.dtype(), op_name(c.op).data(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = static_cast<T*>(out.data_ptr());
      const T* s = static_cast<const T*>(src.data_ptr());
      const int64_t ss = src.strides()[d];
      for_each_line(L, [&](const int64_t* off, int64_t len) {
        for (int64_t k = 0; k < len; ++k) {
          T& dst = o[off[0] + idx[off[2] + k * L.strides[2][d]] * os];
          const T v = s[off[1] + k * ss];
          dst = index_math::scatter_add_value(dst, v);
        }
      });
    });
    return;
  }
  const uint64_t bits = has_src ? 0 : value_bits(value, out.dtype(), op_name(c.op).data());
  visit_size(out.element_size(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    U* o = static_cast<U*>(out.data_ptr());
    const U* s = has_src ? static_cast<const U*>(src.data_ptr()) : nullptr;
    U value;
    std::memcpy(&value, &bits, sizeof(U));
    const int64_t ss = has_src ? src.strides()[d] : 0, is = L.strides[2][d];
    for_each_line(L, [&](const int64_t* off, int64_t len) {
      for (int64_t k = 0; k < len; ++k) o[off[0] + idx[off[2] + k * is] * os] = s ? s[off[1] + k * ss] : value;
    });
  });
}

void scatter_kernel(OpCall& c, DispatchKeySet) { scatter_common(c, false); }
void scatter_add_kernel(OpCall& c, DispatchKeySet) {
  MIXT_CHECK_OP(c.n_in > 2 && c.in[2].defined(), c, "expects a src tensor");
  scatter_common(c, true);
}

// masked_fill(_): value where the (broadcast) bool mask is true.
void masked_fill_kernel(OpCall& c, DispatchKeySet) {
  check_cpu(c);
  const Tensor& self = c.in[0];
  Tensor mask = c.in[1];
  const Scalar& value = c.attrs.get<attrs::Value>().value;
  const Shape shape = index_checks::check_masked_fill(c);
  Tensor out =
      index_checks::masked_fill_output(c, shape, [&] { return make_empty(shape, self.dtype(), Device::cpu()); });
  if (mask.shares_storage(out)) mask = host::copied(mask, mask.dtype(), c);
  if (!out.is_same(self)) host::copy_into(out, self, c);
  c.out[0] = out;
  const uint64_t bits = value_bits(value, out.dtype(), op_name(c.op).data());
  const OperandGeometry geom[2] = {{&out.sizes(), &out.strides(), out.element_size()},
                                   {&mask.sizes(), &mask.strides(), mask.element_size()}};
  const StridedLayout layout = make_strided_layout(out.sizes(), geom);
  char* base[2] = {static_cast<char*>(out.data_ptr()), static_cast<char*>(mask.data_ptr())};
  visit_size(out.element_size(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    U value;
    std::memcpy(&value, &bits, sizeof(U));
    for_each(layout, base, [&](char** p, const int64_t* s, int64_t n) {
      // Mask bytes are read as uint8 so a stray byte value cannot be an invalid bool.
      if (s[0] == sizeof(U) && s[1] == 1) {
        U* o = reinterpret_cast<U*>(p[0]);
        const uint8_t* m = reinterpret_cast<const uint8_t*>(p[1]);
        for (int64_t i = 0; i < n; ++i) o[i] = select_bits(m[i], value, o[i]);
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        U cur;
        std::memcpy(&cur, p[0] + i * s[0], sizeof(U));
        cur = select_bits(*reinterpret_cast<const uint8_t*>(p[1] + i * s[1]), value, cur);
        std::memcpy(p[0] + i * s[0], &cur, sizeof(U));
      }
    });
  });
}

}  // namespace

void register_index_kernels() {
  register_kernel(OpId::index_select, DispatchKey::CPU, index_select_kernel);
  register_kernel(OpId::embedding, DispatchKey::CPU, embedding_kernel);
  register_kernel(OpId::gather, DispatchKey::CPU, gather_kernel);
  register_kernel(OpId::scatter, DispatchKey::CPU, scatter_kernel);
  register_kernel(OpId::scatter_, DispatchKey::CPU, scatter_kernel);
  register_kernel(OpId::scatter_add, DispatchKey::CPU, scatter_add_kernel);
  register_kernel(OpId::scatter_add_, DispatchKey::CPU, scatter_add_kernel);
  register_kernel(OpId::masked_fill, DispatchKey::CPU, masked_fill_kernel);
  register_kernel(OpId::masked_fill_, DispatchKey::CPU, masked_fill_kernel);
}

}  // namespace mixt::cpu
