// TensorImpl: the shared state behind a Tensor handle (a strided view of storage).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <mixt/dispatcher/keys.h>
#include <mixt/runtime/allocator.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/shape.h>

namespace mixt {

struct AutogradMeta;  // runtime/autograd: grad, grad_fn, hooks

// The dispatch keys every tensor on `device` carries: its backend, Autograd and
// its device's autocast key. See Note [Dispatch keys].
constexpr DispatchKeySet tensor_keys_for(Device device) {
  switch (device.type()) {
    case DeviceType::CPU: return DispatchKeySet(DispatchKey::CPU) | DispatchKey::Autograd | DispatchKey::AutocastCPU;
    case DeviceType::CUDA:
      return DispatchKeySet(DispatchKey::CUDA) | DispatchKey::Autograd | DispatchKey::AutocastCUDA;
    case DeviceType::Meta:
      return DispatchKeySet(DispatchKey::Meta) | DispatchKey::Autograd | DispatchKey::AutocastMeta;
  }
  return {};
}
// The backend key of `device`.
constexpr DispatchKey backend_key_for(Device device) {
  switch (device.type()) {
    case DeviceType::CPU: return DispatchKey::CPU;
    case DeviceType::CUDA: return DispatchKey::CUDA;
    case DeviceType::Meta: return DispatchKey::Meta;
  }
  return DispatchKey::CPU;
}

struct TensorImpl {
  TensorImpl(Storage storage, int64_t offset, const Shape& sizes, const Shape& strides, ScalarType dtype);
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  // Recomputes numel and contiguity after sizes/strides change.
  void refresh();
  // Address of element 0 of this view (nullptr when the storage has no memory: an
  // empty tensor, or a meta tensor).
  char* data() const {
    char* base = static_cast<char*>(storage->data.ptr);
    return base ? base + offset * element_size(dtype) : nullptr;
  }

  std::atomic<int32_t> refcount_{0};
  Storage storage;
  int64_t offset;  // in elements
  Shape sizes;
  Shape strides;   // in elements
  int64_t numel = 0;
  ScalarType dtype;
  Device device;
  DispatchKeySet keys;
  bool contiguous = true;
  bool wrapped_number = false;  // a Scalar operand wrapped as a 0-dim tensor
  bool is_view = false;         // made by a view op (autograd refuses to record in-place ops on it)
  bool autocast_sensitive = false;  // autocast::mark_sensitive: uses read the float32 master
  bool requires_grad = false;
  std::unique_ptr<AutogradMeta> autograd;
};

// True when (sizes, strides) describe a row-major dense layout.
bool is_contiguous_layout(const Shape& sizes, const Shape& strides);

}  // namespace mixt
