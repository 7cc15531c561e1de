// TensorImpl, the Tensor handle's non-op methods, and tensors from host data.
#include <cstring>

#include <mixt/runtime/autograd_meta.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {

namespace detail {
void throw_unsupported_dtype(const char* op, ScalarType t) {
  MIXT_FAIL(op, "not implemented for dtype {}", t);
}
}  // namespace detail

// ---- TensorImpl --------------------------------------------------------------

TensorImpl::TensorImpl(Storage storage_, int64_t offset_, const Shape& sizes_, const Shape& strides_,
                       ScalarType dtype_)
    : storage(std::move(storage_)), offset(offset_), sizes(sizes_), strides(strides_), dtype(dtype_) {
  device = storage->device;
  keys = tensor_keys_for(device);
  refresh();
}

TensorImpl::~TensorImpl() = default;

// Note [Storage covers the view]: every TensorImpl's sizes, strides and offset
// are non-negative, its element count and the furthest element it reaches fit in
// int64, and that element lies inside its storage. Checked here, where every
// tensor is made and every geometry change lands, so no kernel can be handed a
// view that reads or writes outside its memory, whatever built it.
void TensorImpl::refresh() {
  numel = checked_numel(sizes, "tensor");
  const int64_t end = checked_extent(sizes, strides, offset, "tensor");
  if (numel > 0) {
    const int64_t capacity = static_cast<int64_t>(storage->nbytes / static_cast<size_t>(element_size(dtype)));
    MIXT_CHECK(end <= capacity, "tensor",
               "a view with sizes {}, strides {} and offset {} reaches element {}, beyond its storage of {} elements",
               sizes, strides, offset, end - 1, capacity);
  }
  contiguous = is_contiguous_layout(sizes, strides);
}

bool is_contiguous_layout(const Shape& sizes, const Shape& strides) {
  int64_t expected = 1;
  for (int i = sizes.size() - 1; i >= 0; --i) {
    if (sizes[i] == 0) return true;
    if (sizes[i] != 1 && strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

AutogradMeta& autograd_meta(const Tensor& t) {
  auto& m = t.impl()->autograd;
  if (!m) m = std::make_unique<AutogradMeta>();
  return *m;
}

// ---- Tensor ------------------------------------------------------------------

int64_t Tensor::size(int64_t d) const { return sizes()[static_cast<int>(wrap_dim(d, dim(), "size"))]; }
int64_t Tensor::stride(int64_t d) const { return strides()[static_cast<int>(wrap_dim(d, dim(), "stride"))]; }

void Tensor::check_dtype(ScalarType expected, const char* op) const {
  MIXT_CHECK(defined(), op, "the tensor is undefined");
  MIXT_CHECK(dtype() == expected, op, "the tensor holds {}, not {}", dtype(), expected);
}

Scalar Tensor::item() const {
  MIXT_CHECK(defined(), "item", "the tensor is undefined");
  MIXT_CHECK(numel() == 1, "item", "a tensor of {} elements (shape {}) has no single value", numel(), sizes());
  const Tensor host = is_cpu() ? *this : to(Device::cpu());
  return visit_dtype(host.dtype(), "item", [&](auto tag) -> Scalar {
    using T = typename decltype(tag)::type;
    return Scalar(*reinterpret_cast<const T*>(host.data_ptr()));
  });
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  MIXT_CHECK(defined(), "to_vector", "the tensor is undefined");
  const Tensor host = to(Device::cpu()).contiguous();
  std::vector<T> out(static_cast<size_t>(host.numel()));
  if (out.empty()) return out;
  visit_dtype(host.dtype(), "to_vector", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* p = reinterpret_cast<const S*>(host.data_ptr());
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<S, T>) out[i] = p[i];
      else if constexpr (std::is_arithmetic_v<S> && std::is_arithmetic_v<T>) out[i] = static_cast<T>(p[i]);
      else if constexpr (std::is_arithmetic_v<T>) out[i] = static_cast<T>(static_cast<float>(p[i]));
      else out[i] = T(static_cast<float>(p[i]));
    }
  });
  return out;
}

#define MIXT_INSTANTIATE_TO_VECTOR(e, cpp, n, c, a) template std::vector<cpp> Tensor::to_vector<cpp>() const;
MIXT_FORALL_DTYPES(MIXT_INSTANTIATE_TO_VECTOR)
#undef MIXT_INSTANTIATE_TO_VECTOR

void Tensor::throw_undefined() {
  MIXT_FAIL("Tensor", "the tensor is undefined (a default-constructed handle holds no data)");
}

int64_t Tensor::nbytes() const { return checked_nbytes(numel(), element_size(), "nbytes"); }

bool Tensor::has_internal_overlap() const {
  for (int d = 0; d < dim(); ++d)
    if (sizes()[d] > 1 && strides()[d] == 0) return true;
  return false;
}

Tensor& Tensor::set_requires_grad(bool value) {
  MIXT_CHECK(!value || is_floating_point(), "requires_grad",
             "only floating-point tensors can require gradients (this one is {})", dtype());
  MIXT_CHECK(is_leaf(), "requires_grad",
             "requires_grad can only be changed on leaf tensors (use detach() for a leaf copy of this result)");
  // Made now, before threads share the leaf: Note [Autograd across threads].
  if (value) autograd_meta(*this);
  get().requires_grad = value;
  return *this;
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  if (!get().autograd) return undefined;
  const AutogradMeta& m = *impl_->autograd;
  if (!m.grad.defined() && m.retained_grad) return *m.retained_grad;
  return m.grad;
}

bool Tensor::is_leaf() const { return !get().autograd || !impl_->autograd->grad_fn; }

void Tensor::set_data(const Tensor& other) {
  MIXT_CHECK(defined() && other.defined(), "set_data", "both tensors must be defined");
  MIXT_CHECK(!requires_grad() || is_floating(other.dtype()), "set_data",
             "a tensor that requires grad cannot hold {} data", other.dtype());
  TensorImpl& me = *impl_;
  const TensorImpl& src = *other.impl();
  const bool moved = me.dtype != src.dtype || me.device != src.device;
  const uint32_t old_version = version();
  me.storage = src.storage;
  // The version only moves forward: caches keyed on (tensor, version) see the change.
  if (me.storage->version.load() <= old_version) me.storage->version.store(old_version + 1);
  me.offset = src.offset;
  me.sizes = src.sizes;
  me.strides = src.strides;
  me.dtype = src.dtype;
  me.device = src.device;
  me.keys = src.keys;
  me.is_view = false;
  me.refresh();
  // A gradient of another dtype or device no longer matches the data.
  if (moved && me.autograd) me.autograd->grad = Tensor();
}

void Tensor::set_grad(const Tensor& g) {
  if (g.defined()) {
    MIXT_CHECK(g.sizes() == sizes(), "set_grad", "gradient shape {} does not match the tensor's {}", g.sizes(),
               sizes());
    MIXT_CHECK(g.device() == device(), "set_grad", "gradient on {} for a tensor on {}", g.device(), device());
  }
  autograd_meta(*this).grad = g;
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined";
  return fmt::format("{}{} {}", dtype(), sizes(), device());
}

// ---- construction --------------------------------------------------------------

Tensor make_empty(const Shape& sizes, ScalarType dtype, Device device) {
  MIXT_CHECK(dtype != ScalarType::Undefined, "empty", "a tensor needs a dtype");
  const int64_t bytes = checked_nbytes(checked_numel(sizes, "empty"), element_size(dtype), "empty");
  Storage st = make_storage(static_cast<size_t>(bytes), device);
  return Tensor(IntrusivePtr<TensorImpl>::make(std::move(st), 0, sizes, contiguous_strides(sizes), dtype));
}

Tensor make_view(const Tensor& base, const Shape& sizes, const Shape& strides, int64_t offset, ScalarType dtype) {
  auto impl = IntrusivePtr<TensorImpl>::make(base.impl()->storage, offset, sizes, strides,
                                             dtype == ScalarType::Undefined ? base.dtype() : dtype);
  impl->requires_grad = false;
  return Tensor(std::move(impl));
}

Tensor from_data(const void* data, const Shape& sizes, ScalarType dtype, Device device) {
  Tensor t = make_empty(sizes, dtype, Device::cpu());
  if (t.nbytes() > 0) {
    MIXT_CHECK(data != nullptr, "from_data", "null data for {} bytes", t.nbytes());
    std::memcpy(t.data_ptr(), data, static_cast<size_t>(t.nbytes()));
  }
  return device.is_cpu() ? t : t.to(device);
}

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& sizes, Device device) {
  Shape s = sizes;
  if (s.empty()) s = Shape{static_cast<int64_t>(values.size())};
  MIXT_CHECK(s.numel() == static_cast<int64_t>(values.size()), "from_vector",
             "{} values do not fill shape {} ({} elements)", values.size(), s, s.numel());
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return from_data(bytes.data(), s, kBool, device);
  } else {
    return from_data(values.data(), s, dtype_of<T>, device);
  }
}

#define MIXT_INSTANTIATE_FROM_VECTOR(e, cpp, n, c, a) \
  template Tensor from_vector<cpp>(const std::vector<cpp>&, const Shape&, Device);
MIXT_FORALL_DTYPES(MIXT_INSTANTIATE_FROM_VECTOR)
#undef MIXT_INSTANTIATE_FROM_VECTOR

Tensor from_blob(void* data, const Shape& sizes, const Shape& strides, ScalarType dtype,
                 void (*deleter)(void*, void*), void* ctx, Device device) {
  MIXT_CHECK(strides.empty() || strides.size() == sizes.size(), "from_blob",
             "{} strides given for {} dimensions", strides.size(), sizes.size());
  checked_numel(sizes, "from_blob");
  const Shape st = strides.empty() ? contiguous_strides(sizes) : strides;
  const int64_t extent = checked_extent(sizes, st, 0, "from_blob");
  const int64_t bytes = checked_nbytes(extent, element_size(dtype), "from_blob");
  Storage storage = Storage::make(DataPtr{data, ctx, deleter}, static_cast<size_t>(bytes), device);
  return Tensor(IntrusivePtr<TensorImpl>::make(std::move(storage), 0, sizes, st, dtype));
}

Tensor scalar_tensor(const Scalar& value, TensorOptions options) {
  MIXT_CHECK(value.has_value(), "scalar_tensor", "no value given");
  const ScalarType dt = options.dtype == ScalarType::Undefined ? value.default_dtype() : options.dtype;
  Tensor t = make_empty({}, dt, Device::cpu());
  visit_dtype(dt, "scalar_tensor", [&](auto tag) {
    using T = typename decltype(tag)::type;
    *reinterpret_cast<T*>(t.data_ptr()) = value.to<T>();
  });
  if (const Device dev = options.device.value_or(default_device()); !dev.is_cpu()) t = t.to(dev);
  if (options.requires_grad) t.set_requires_grad(true);
  return t;
}

Tensor wrapped_scalar(const Scalar& value) {
  MIXT_CHECK(value.has_value(), "wrapped_scalar", "no value given");
  // A CPU scalar on every device (whatever the default device): ops take it as a Scalar.
  Tensor t = scalar_tensor(value, {.dtype = value.is_floating() ? kFloat64 : value.default_dtype(),
                                   .device = Device::cpu()});
  t.impl()->wrapped_number = true;
  return t;
}

}  // namespace mixt
