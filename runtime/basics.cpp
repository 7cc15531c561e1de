// Out-of-line parts of the small value types: Shape, Device, Scalar, dtype names.
#include <cmath>

#include <mixt/runtime/check.h>
#include <mixt/runtime/checked.h>

namespace mixt {

// ---- checked size arithmetic -------------------------------------------------

namespace detail {
void throw_size_overflow(const char* op, const char* what, long double a, long double b) {
  MIXT_FAIL(op, "size arithmetic overflows: {} {} {} does not fit in a 64-bit integer", a, what, b);
}
}  // namespace detail

size_t checked_size(int64_t v, const char* op) {
  MIXT_CHECK(v >= 0, op, "size {} is negative", v);
  return static_cast<size_t>(v);
}

int64_t checked_int64(uint64_t v, const char* op) {
  MIXT_CHECK(v <= static_cast<uint64_t>(INT64_MAX), op, "size {} does not fit in a 64-bit signed integer", v);
  return static_cast<int64_t>(v);
}

int64_t checked_numel(const Shape& sizes, const char* op) {
  int64_t n = 1;
  bool empty = false;
  for (int64_t s : sizes) {
    MIXT_CHECK(s >= 0, op, "negative size in shape {}", sizes);
    if (s == 0) {
      empty = true;
      continue;
    }
    MIXT_CHECK(!__builtin_mul_overflow(n, s, &n), op,
               "shape {} has more elements than a 64-bit integer counts (2^63 - 1)", sizes);
  }
  return empty ? 0 : n;
}

int64_t checked_nbytes(int64_t numel, int64_t element_size, const char* op) {
  int64_t bytes;
  MIXT_CHECK(numel >= 0 && !__builtin_mul_overflow(numel, element_size, &bytes), op,
             "{} elements of {} bytes overflow a 64-bit byte count", numel, element_size);
  return bytes;
}

int64_t checked_extent(const Shape& sizes, const Shape& strides, int64_t offset, const char* op) {
  MIXT_CHECK(sizes.size() == strides.size(), op, "sizes {} and strides {} differ in length", sizes, strides);
  MIXT_CHECK(offset >= 0, op, "negative storage offset {}", offset);
  int64_t last = offset;
  bool empty = false;
  for (int i = 0; i < sizes.size(); ++i) {
    MIXT_CHECK(sizes[i] >= 0 && strides[i] >= 0, op, "negative size or stride (sizes {}, strides {})", sizes,
               strides);
    if (sizes[i] == 0) empty = true;
    int64_t step;
    MIXT_CHECK(!__builtin_mul_overflow(sizes[i] == 0 ? 0 : sizes[i] - 1, strides[i], &step) &&
                   !__builtin_add_overflow(last, step, &last),
               op, "sizes {} with strides {} at offset {} reach past 2^63 - 1 elements", sizes, strides, offset);
  }
  if (empty) return offset;
  int64_t end;
  MIXT_CHECK(!__builtin_add_overflow(last, int64_t{1}, &end), op,
             "sizes {} with strides {} at offset {} reach past 2^63 - 1 elements", sizes, strides, offset);
  return end;
}

// ---- Shape -----------------------------------------------------------------

Shape Shape::filled(int n, int64_t value) {
  Shape s;
  s.resize(n, value);
  return s;
}

void Shape::assign(const int64_t* p, int64_t n) {
  MIXT_CHECK(n <= kMaxDims, "shape", "{} dimensions requested; mixt tensors have at most {}", n, kMaxDims);
  for (int64_t i = 0; i < n; ++i) d_[i] = p[i];
  n_ = static_cast<int8_t>(n);
}

void Shape::push_back(int64_t v) {
  MIXT_CHECK(n_ < kMaxDims, "shape", "more than {} dimensions", kMaxDims);
  d_[n_++] = v;
}

void Shape::insert(int i, int64_t v) {
  MIXT_CHECK(n_ < kMaxDims, "shape", "more than {} dimensions", kMaxDims);
  for (int k = n_; k > i; --k) d_[k] = d_[k - 1];
  d_[i] = v;
  ++n_;
}

void Shape::erase(int i) {
  for (int k = i; k + 1 < n_; ++k) d_[k] = d_[k + 1];
  --n_;
}

void Shape::resize(int n, int64_t fill) {
  MIXT_CHECK(n >= 0 && n <= kMaxDims, "shape", "{} dimensions requested; mixt tensors have at most {}", n, kMaxDims);
  for (int k = n_; k < n; ++k) d_[k] = fill;
  n_ = static_cast<int8_t>(n);
}

int64_t Shape::numel() const { return checked_numel(*this, "numel"); }

std::string Shape::str() const { return fmt::format("[{}]", fmt::join(begin(), end(), ", ")); }

bool Shape::operator==(const Shape& o) const {
  if (n_ != o.n_) return false;
  for (int i = 0; i < n_; ++i)
    if (d_[i] != o.d_[i]) return false;
  return true;
}

Shape contiguous_strides(const Shape& sizes) {
  Shape st;
  st.resize(sizes.size());
  int64_t s = 1;
  for (int i = sizes.size() - 1; i >= 0; --i) {
    st[i] = s;
    if (sizes[i] > 1) s = checked_mul(s, sizes[i], "contiguous_strides");
  }
  return st;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const int n = a.size() > b.size() ? a.size() : b.size();
  Shape out;
  out.resize(n);
  for (int i = 0; i < n; ++i) {
    const int ia = i - (n - a.size()), ib = i - (n - b.size());
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    MIXT_CHECK(da == db || da == 1 || db == 1, op,
               "shapes {} and {} cannot be broadcast together (dimension {}: {} vs {})", a, b, i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t n = ndim > 0 ? ndim : 1;  // a 0-dim tensor accepts dim 0 and -1
  MIXT_CHECK(dim >= -n && dim < n, op, "dimension {} is out of range for a tensor of {} (expected [{}, {}])",
             dim, detail::counted(ndim, "dimension"), -n, n - 1);
  return dim < 0 ? dim + n : dim;
}

Shape infer_size(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      MIXT_CHECK(infer < 0, op, "only one dimension of {} can be -1", shape);
      infer = i;
    } else {
      MIXT_CHECK(shape[i] >= 0, op, "invalid size {} in shape {}", shape[i], shape);
      known = checked_mul(known, shape[i], op);
    }
  }
  if (infer >= 0) {
    MIXT_CHECK(known != 0 && numel % known == 0, op, "shape {} is invalid for {} elements", shape, numel);
    out[infer] = numel / known;
  }
  MIXT_CHECK(out.numel() == numel, op, "shape {} is invalid for {} elements", shape, numel);
  return out;
}

std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& new_sizes) {
  Shape out;
  out.resize(new_sizes.size());
  if (sizes.numel() == 0 || sizes.empty()) return contiguous_strides(new_sizes);
  // Walk chunks of old dims that are contiguous with each other; each chunk must
  // be produced exactly by a run of new dims.
  int view_d = new_sizes.size() - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  // Element counts are at most the tensor's numel (checked when it was made);
  // a stride times a count may still overflow where the memory is not
  // contiguous: such a product never equals a stride, and a size-1 dim's stride
  // is free.
  for (int d = sizes.size() - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    int64_t chunk_stride;
    const bool chunk_ends = d == 0 || (sizes[d - 1] != 1 &&
                                       (__builtin_mul_overflow(tensor_numel, chunk_base_stride, &chunk_stride) ||
                                        strides[d - 1] != chunk_stride));
    if (chunk_ends) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        if (__builtin_mul_overflow(view_numel, chunk_base_stride, &out[view_d])) out[view_d] = chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

// ---- Device ----------------------------------------------------------------

std::string_view device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::CUDA: return "cuda";
    case DeviceType::Meta: return "meta";
  }
  return "?";
}

Device::Device(std::string_view spec) {
  if (spec == "cpu") {
    *this = cpu();
    return;
  }
  if (spec == "meta") {
    *this = meta();
    return;
  }
  if (spec.substr(0, 4) == "cuda") {
    if (spec.size() == 4) {
      *this = cuda(0);
      return;
    }
    if (spec[4] == ':' && spec.size() > 5 && spec.size() <= 8) {
      int idx = 0;
      bool ok = true;
      for (char c : spec.substr(5)) {
        ok = ok && c >= '0' && c <= '9';
        idx = idx * 10 + (c - '0');
      }
      if (ok && idx <= kMaxCudaIndex) {
        *this = cuda(idx);
        return;
      }
    }
  }
  MIXT_FAIL("Device", "cannot parse device '{}' (expected cpu, meta, cuda or cuda:N with 0 <= N <= {})", spec,
            kMaxCudaIndex);
}

void Device::throw_bad_index(DeviceType type, int index) {
  if (type == DeviceType::CPU) MIXT_FAIL("Device", "invalid CPU device index {} (the CPU is device 0)", index);
  if (type == DeviceType::Meta) MIXT_FAIL("Device", "invalid meta device index {} (there is one meta device, 0)", index);
  if (type == DeviceType::CUDA)
    MIXT_FAIL("Device", "invalid CUDA device index {} (must be in [0, {}])", index, kMaxCudaIndex);
  MIXT_FAIL("Device", "invalid device type {}", static_cast<int>(type));
}

std::string Device::str() const {
  return is_cuda() ? fmt::format("cuda:{}", static_cast<int>(index_)) : std::string(device_type_name(type_));
}

// ---- Scalar ----------------------------------------------------------------

ScalarType Scalar::default_dtype(ScalarType default_float) const {
  switch (kind_) {
    case Kind::Bool: return kBool;
    case Kind::Int: return kInt64;
    case Kind::Float: return default_float;
    case Kind::None: break;
  }
  return ScalarType::Undefined;
}

std::string Scalar::str() const {
  switch (kind_) {
    case Kind::Bool: return i_ ? "true" : "false";
    case Kind::Int: return fmt::format("{}", i_);
    case Kind::Float: return fmt::format("{}", d_);
    case Kind::None: break;
  }
  return "none";
}

void Scalar::throw_overflow(const char* type) const {
  MIXT_FAIL("Scalar", "value cannot be converted to type {} without overflow (value {})", type, str());
}

// ---- dtype names -----------------------------------------------------------

ScalarType dtype_from_name(std::string_view name) {
  for (const DtypeInfo& info : detail::kDtypeInfo)
    if (info.name == name) return info.type;
  struct Alias {
    std::string_view name;
    ScalarType type;
  };
  static constexpr Alias aliases[] = {
      {"f16", kFloat16},  {"half", kFloat16},  {"fp16", kFloat16}, {"bf16", kBFloat16}, {"f32", kFloat32},
      {"float", kFloat32}, {"fp32", kFloat32}, {"f64", kFloat64},   {"double", kFloat64}, {"i64", kInt64},
      {"long", kInt64},   {"i32", kInt32},     {"int", kInt32},     {"u8", kUInt8},       {"i8", kInt8},
      {"e4m3", kFloat8_e4m3fn}, {"fp8_e4m3", kFloat8_e4m3fn}, {"e5m2", kFloat8_e5m2}, {"fp8_e5m2", kFloat8_e5m2},
  };
  for (const Alias& a : aliases)
    if (a.name == name) return a.type;
  return ScalarType::Undefined;
}

}  // namespace mixt
