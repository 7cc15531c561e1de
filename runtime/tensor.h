// Tensor: a ref-counted handle to a TensorImpl. Copying a Tensor shares the data;
// ops that return views share storage with their input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <mixt/runtime/intrusive_ptr.h>
#include <mixt/runtime/macros.h>
#include <mixt/runtime/scalar.h>
#include <mixt/runtime/tensor_impl.h>

namespace mixt {

// Options of a new tensor. Unset fields take the factory's default (float32 or
// the value's type; the CPU, or the source tensor's device for *_like).
struct TensorOptions {
  ScalarType dtype = ScalarType::Undefined;
  std::optional<Device> device = std::nullopt;
  bool requires_grad = false;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(IntrusivePtr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata ----
  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const Shape& sizes() const { return get().sizes; }
  const Shape& strides() const { return get().strides; }
  // Size of dimension `dim` (negative counts from the end).
  int64_t size(int64_t dim) const;
  // Stride (in elements) of dimension `dim`.
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return get().sizes.size(); }
  int64_t numel() const { return get().numel; }
  ScalarType dtype() const { return get().dtype; }
  Device device() const { return get().device; }
  bool is_cpu() const { return get().device.is_cpu(); }
  bool is_cuda() const { return get().device.is_cuda(); }
  bool is_meta() const { return get().device.is_meta(); }
  bool is_floating_point() const { return is_floating(get().dtype); }
  bool is_contiguous() const { return get().contiguous; }
  // True when several elements share one memory location (a stride-0 dim of size > 1: an expanded tensor).
  bool has_internal_overlap() const;
  int64_t storage_offset() const { return get().offset; }
  int64_t element_size() const { return mixt::element_size(get().dtype); }
  // numel() * element_size(); raises when that overflows (an expanded view of
  // more than 2^63 - 1 bytes).
  int64_t nbytes() const;
  // True when both handles refer to the same TensorImpl.
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  // True when this tensor has other's shape and values (mixt::equal); `==` compares elementwise.
  bool equal(const Tensor& other) const;
  // True when both views use the same storage.
  bool shares_storage(const Tensor& o) const { return get().storage == o.get().storage; }
  // Number of handles sharing this TensorImpl.
  int32_t use_count() const { return impl_.use_count(); }

  // ---- data access ----
  // Address of element 0 (device memory for CUDA tensors).
  void* data_ptr() const { return get().data(); }
  // Typed address of element 0; throws mixt::Error when T is not the dtype.
  template <class T>
  T* data_ptr() const {
    check_dtype(dtype_of<T>, "data_ptr");
    return reinterpret_cast<T*>(get().data());
  }
  // The single value of a one-element tensor (copied to the host).
  Scalar item() const;
  template <class T>
  T item() const { return item().to<T>(); }
  // All values, converted to T, in row-major order (copied to the host).
  template <class T>
  std::vector<T> to_vector() const;

  // ---- version counter (shared by all views of the storage) ----
  uint32_t version() const { return get().storage->version.load(std::memory_order_relaxed); }
  void bump_version() const { get().storage->version.fetch_add(1, std::memory_order_relaxed); }

  // ---- autograd (runtime/autograd/autograd.h has the rest of the API) ----
  bool requires_grad() const { return get().requires_grad; }
  // Marks this leaf as accumulating a gradient (floating dtypes only).
  Tensor& set_requires_grad(bool value);
  Tensor& requires_grad_(bool value = true) { return set_requires_grad(value); }
  // The accumulated gradient (undefined until one exists; a retained one for non-leaves).
  const Tensor& grad() const;
  // Sets or clears the gradient.
  void set_grad(const Tensor& g);
  // Backpropagates from this tensor (a one-element tensor unless `grad` is given).
  void backward(const Tensor& grad = Tensor(), bool retain_graph = false) const;
  // The same data without autograd history.
  Tensor detach() const;
  // True when no op produced this tensor inside a recorded graph.
  bool is_leaf() const;
  // Replaces this tensor's data (storage, geometry, dtype, device) with `other`'s,
  // keeping its identity: every handle, and its autograd leaf state, see the new data.
  // How modules move parameters between devices and dtypes in place.
  void set_data(const Tensor& other);

  // ---- printing ----
  // Values and metadata, as printed by operator<<.
  std::string str() const;
  // "float32[2, 3] cpu".
  std::string describe() const;

  // ---- conversions and copies ----
  Tensor to(ScalarType dtype) const;
  Tensor to(Device device) const;
  Tensor to(Device device, ScalarType dtype) const;
  Tensor cpu() const { return to(Device::cpu()); }
  Tensor contiguous() const;
  Tensor clone() const;
  // Copies `src` (broadcast, cast, across devices) into this tensor.
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(const Scalar& value);
  Tensor& zero_();

  // ---- views ----
  Tensor view(const Shape& shape) const;
  // The same bytes read as `dtype` (a bit cast; see mixt::view(t, dtype)).
  Tensor view(ScalarType dtype) const;
  Tensor reshape(const Shape& shape) const;
  Tensor permute(const Shape& dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  // Transpose of a matrix (or a 0/1-dim tensor unchanged).
  Tensor t() const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor expand(const Shape& shape) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  // Tensor[i]: select along dim 0.
  Tensor operator[](int64_t index) const { return select(0, index); }

  // ---- arithmetic (see runtime/ops/ops.h for the full list) ----
  Tensor add(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& o) const;
  Tensor div(const Tensor& o) const;
  Tensor& add_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& add_(const Scalar& o);
  Tensor& sub_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& mul_(const Tensor& o);
  Tensor& mul_(const Scalar& o);
  Tensor& div_(const Tensor& o);
  Tensor& div_(const Scalar& o);
  Tensor matmul(const Tensor& o) const;
  // The p-norm of *this - o (broadcast): a 0-dim tensor; p may be negative (torch.dist).
  Tensor dist(const Tensor& o, double p = 2.0) const;
  Tensor sum() const;
  Tensor sum(const Shape& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const Shape& dims, bool keepdim = false) const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor neg() const;
  Tensor relu() const;

 private:
  void check_dtype(ScalarType expected, const char* op) const;
  // The impl; raises mixt::Error for an undefined tensor (a default-constructed handle).
  TensorImpl& get() const {
    if (MIXT_UNLIKELY(!impl_)) throw_undefined();
    return *impl_;
  }
  [[noreturn]] static void throw_undefined();
  IntrusivePtr<TensorImpl> impl_;
};

// Values and metadata, as Tensor::str() (fmt: <mixt/runtime/formatters.h>).
std::ostream& operator<<(std::ostream& os, const Tensor& t);
// "TensorOptions(dtype=bfloat16, device=cuda:0, requires_grad=true)"; unset fields print as "default".
std::ostream& operator<<(std::ostream& os, const TensorOptions& o);

// ---- construction from host data ----

// A CPU tensor holding a copy of `values` with shape `sizes` (default: 1-D).
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& sizes = {}, Device device = Device::cpu());
// A tensor holding a copy of `nbytes = numel*element_size` bytes at `data`.
Tensor from_data(const void* data, const Shape& sizes, ScalarType dtype, Device device = Device::cpu());
// A CPU tensor viewing caller-owned memory (no copy). `deleter(ctx, data)` is
// called when the last view dies (may be null).
Tensor from_blob(void* data, const Shape& sizes, const Shape& strides, ScalarType dtype,
                 void (*deleter)(void* ctx, void* data) = nullptr, void* ctx = nullptr,
                 Device device = Device::cpu());
// A 0-dim tensor holding `value` (dtype: the scalar's default unless given).
Tensor scalar_tensor(const Scalar& value, TensorOptions options = {});
// A 0-dim tensor marked as a wrapped number: in type promotion it counts as a
// Scalar, not as a tensor. How ops accept Scalars for Tensor operands.
Tensor wrapped_scalar(const Scalar& value);
// An uninitialized tensor (not dispatched: used by kernels to allocate outputs).
Tensor make_empty(const Shape& sizes, ScalarType dtype, Device device);
// A view of `base`'s storage with new geometry (not dispatched: used by view kernels);
// `dtype` reinterprets the bytes (Undefined: base's dtype; offset and strides count its elements).
Tensor make_view(const Tensor& base, const Shape& sizes, const Shape& strides, int64_t offset,
                 ScalarType dtype = ScalarType::Undefined);

}  // namespace mixt
