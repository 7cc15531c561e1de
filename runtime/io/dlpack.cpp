#include <mixt/runtime/io/dlpack.h>

#include <dlpack/dlpack.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <memory>

#include <mixt/runtime/check.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/cuda.h>

namespace mixt::io {
namespace {

constexpr const char* kToOp = "to_dlpack";
constexpr const char* kFromOp = "from_dlpack";

// mixt dtypes and their DLPack (code, bits); float8 has no code in DLPack 0.6.
struct DlpackType {
  ScalarType type;
  uint8_t code, bits;
};
constexpr DlpackType kDlpackTypes[] = {
    {kBool, kDLBoolCode, 8},    {kUInt8, kDLUInt, 8},     {kInt8, kDLInt, 8},
    {kInt32, kDLInt, 32},       {kInt64, kDLInt, 64},     {kFloat16, kDLFloat, 16},
    {kBFloat16, kDLBfloat, 16}, {kFloat32, kDLFloat, 32}, {kFloat64, kDLFloat, 64},
};

// What an exported tensor owns: a view keeping mixt's storage alive, and the
// shape and stride arrays the DLTensor points to.
struct Exported {
  DLManagedTensor managed{};
  Tensor view;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

void delete_exported(DLManagedTensor* self) { delete static_cast<Exported*>(self->manager_ctx); }

// Storage deleter of an imported tensor: hands the memory back to its producer.
void release_imported(void* ctx, void*) {
  auto* managed = static_cast<DLManagedTensor*>(ctx);
  if (managed->deleter) managed->deleter(managed);
}

// The device of an imported tensor, checked to be usable.
Device import_device(const DLDevice& d) {
  if (d.device_type == kDLCPU) return Device::cpu();
  MIXT_CHECK(d.device_type == kDLCUDA, kFromOp, "unsupported DLPack device type {}", static_cast<int>(d.device_type));
  MIXT_CHECK(cuda::is_available(), kFromOp, "a CUDA tensor, but CUDA is unavailable: {}", cuda::unavailable_reason());
  MIXT_CHECK(d.device_id >= 0 && d.device_id < cuda::device_count(), kFromOp, "CUDA device {} does not exist",
             d.device_id);
  return Device::cuda(d.device_id);
}

ScalarType import_dtype(const DLDataType& d) {
  MIXT_CHECK(d.lanes == 1, kFromOp, "vector dtypes are not supported (lanes = {})", d.lanes);
  for (const auto& e : kDlpackTypes)
    if (e.code == d.code && e.bits == d.bits) return e.type;
  MIXT_FAIL(kFromOp, "unsupported DLPack dtype (code {}, {} bits)", d.code, d.bits);
}

// Note [DLPack import checks]: from_dlpack trusts the producer about its memory,
// not about arithmetic. Sizes and strides must be non-negative; the element count,
// the furthest element and both their byte counts must fit in int64; and data +
// byte_offset, plus the bytes the view spans, must not run past the end of the
// address space. All are computed with the checked helpers; a failure raises
// mixt::Error and leaves the DLManagedTensor to its caller.

// Sizes and strides (element units) of `dl`, checked (Note [DLPack import
// checks]). Returns the bytes the view spans from its first element (0 when it
// is empty).
uint64_t import_geometry(const DLTensor& dl, ScalarType dtype, Shape& sizes, Shape& strides) {
  MIXT_CHECK(dl.ndim >= 0 && dl.ndim <= kMaxDims, kFromOp, "{} dimensions (mixt supports 0 to {})", dl.ndim, kMaxDims);
  MIXT_CHECK(dl.ndim == 0 || dl.shape != nullptr, kFromOp, "null shape for {} dimensions", dl.ndim);
  for (int i = 0; i < dl.ndim; ++i) {
    sizes.push_back(dl.shape[i]);
    if (dl.strides) strides.push_back(dl.strides[i]);
  }
  const bool negative = std::any_of(sizes.begin(), sizes.end(), [](int64_t v) { return v < 0; }) ||
                        std::any_of(strides.begin(), strides.end(), [](int64_t v) { return v < 0; });
  MIXT_CHECK(!negative, kFromOp, "negative sizes or strides are not supported (sizes {}, strides {})", sizes, strides);
  try {
    const int64_t numel = checked_numel(sizes, kFromOp);
    checked_nbytes(numel, element_size(dtype), kFromOp);  // nbytes() of the result is defined
    const int64_t extent = checked_extent(sizes, strides.empty() ? contiguous_strides(sizes) : strides, 0, kFromOp);
    return numel == 0 ? 0 : static_cast<uint64_t>(checked_nbytes(extent, element_size(dtype), kFromOp));
  } catch (const Error& e) {
    MIXT_FAIL(kFromOp, "sizes {} with strides {} of {} overflow int64: {}", sizes, strides, dtype, e.message());
  }
}

// The address of the first element, data + byte_offset, checked so that the
// `span` bytes from it lie inside the address space.
char* import_data(const DLTensor& dl, uint64_t span) {
  if (dl.data == nullptr) return nullptr;
  const auto base = reinterpret_cast<uintptr_t>(dl.data);
  const uintptr_t room = std::numeric_limits<uintptr_t>::max() - base;
  MIXT_CHECK(dl.byte_offset <= room && span <= room - dl.byte_offset, kFromOp,
             "data address {} + byte_offset {} + {} bytes of view run past the end of the address space", dl.data,
             dl.byte_offset, span);
  return static_cast<char*>(dl.data) + dl.byte_offset;
}

}  // namespace

DLManagedTensor* to_dlpack(const Tensor& t) {
  MIXT_CHECK(t.defined(), kToOp, "the tensor is undefined");
  const auto* type = std::find_if(std::begin(kDlpackTypes), std::end(kDlpackTypes),
                                  [&](const DlpackType& e) { return e.type == t.dtype(); });
  MIXT_CHECK(type != std::end(kDlpackTypes), kToOp, "dtype {} has no DLPack 0.6 type code", t.dtype());
  auto exported = std::make_unique<Exported>();
  exported->view = t.detach();
  for (int i = 0; i < t.dim(); ++i) {
    exported->shape[i] = t.sizes()[i];
    exported->strides[i] = t.strides()[i];
  }
  DLTensor& dl = exported->managed.dl_tensor;
  dl.data = t.data_ptr();
  dl.device = {t.is_cuda() ? kDLCUDA : kDLCPU, t.device().index()};
  dl.ndim = static_cast<int>(t.dim());
  dl.dtype = {type->code, type->bits, 1};
  dl.shape = exported->shape;
  dl.strides = exported->strides;
  dl.byte_offset = 0;
  exported->managed.manager_ctx = exported.get();
  exported->managed.deleter = delete_exported;
  return &exported.release()->managed;
}

Tensor from_dlpack(DLManagedTensor* managed) {
  MIXT_CHECK(managed != nullptr, kFromOp, "null DLManagedTensor");
  const DLTensor& dl = managed->dl_tensor;
  const ScalarType dtype = import_dtype(dl.dtype);
  Shape sizes, strides;
  const uint64_t span = import_geometry(dl, dtype, sizes, strides);
  const Device device = import_device(dl.device);
  char* data = import_data(dl, span);
  MIXT_CHECK(data != nullptr || sizes.numel() == 0, kFromOp, "null data for a {} tensor of shape {}", dtype, sizes);
  MIXT_CHECK(reinterpret_cast<uintptr_t>(data) % element_size(dtype) == 0, kFromOp,
             "data address {} (byte_offset {}) is not aligned for {}", static_cast<void*>(data), dl.byte_offset, dtype);
  return from_blob(data, sizes, strides, dtype, release_imported, managed, device);
}

}  // namespace mixt::io
