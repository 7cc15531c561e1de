// copy_ on CUDA, for every copy with a CUDA side: device to device (one kernel:
// broadcast, strides, casts between any two dtypes with the CPU's rules), and
// host <-> device through a contiguous staging buffer, converting on the device. Everything is queued on the current stream of the device
// (Note [Transfers on the current stream]).
#include <cstring>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/cuda/device_error.h>
#include <mixt/kernels/cuda/factory.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/cuda_memory.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {

void move_elements(const Tensor& dst, const Tensor& src, cudaStream_t stream, const char* op) {
  if (dst.numel() == 0) return;
  const OperandGeometry geom[2] = {{&dst.sizes(), &dst.strides(), dst.element_size()},
                                   {&src.sizes(), &src.strides(), src.element_size()}};
  CastArgs a;
  a.layout = make_launch_layout(dst.sizes(), geom);
  a.dst = dst.data_ptr();
  a.src = src.data_ptr();
  a.dst_dtype = dst.dtype();
  a.src_dtype = src.dtype();
  check(launch_cast(a, stream), op);
}

namespace {

// Note [Transfers on the current stream]: copies and kernels are queued on the current
// stream of the device (runtime/cuda_stream.h), and copy_ keeps its meaning of "the
// data has been copied" as far as the host can tell:
// - host -> device returns without waiting for the transfer. Up to kPinnedStaging bytes
//   go through a pinned staging block (memcpy into it, cudaMemcpyAsync from it); the
//   block is recorded on the stream, so it is reused only once the transfer has run.
//   Larger sources are passed to cudaMemcpyAsync directly: from pageable memory it
//   returns once the driver has taken the data, and from page-locked memory (which the
//   caller may overwrite once copy_ returns) the stream is synchronized.
// - device -> host synchronizes the stream before returning: the data is on the host.
// - device -> device between two devices orders the destination's stream after the
//   source's, and the source's after the copy.
constexpr int64_t kPinnedStaging = int64_t{32} << 20;

// True when the host memory at `p` is page-locked (cudaHostAlloc or registered).
bool page_locked(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

bool overlaps_differently(const Tensor& a, const Tensor& b) {
  return a.shares_storage(b) &&
         !(a.storage_offset() == b.storage_offset() && a.strides() == b.strides() && a.dtype() == b.dtype());
}

// True when the device kernel converts `from` to `to`.
bool device_converts(ScalarType from, ScalarType to) { return cast_supported(from, to); }

// dst = src with both on one CUDA device (src broadcast to dst; dst has no internal overlap).
void device_copy(const Tensor& dst, const Tensor& src_in, const OpCall& c) {
  if (dst.numel() == 0) return;
  MIXT_CHECK_OP(device_converts(src_in.dtype(), dst.dtype()), c,
                "copying {} to {} on {} is not implemented on CUDA",
                src_in.dtype(), dst.dtype(), dst.device());
  const Tensor src = overlaps_differently(dst, src_in) ? clone(src_in) : src_in;
  if (src.shares_storage(dst) && src.storage_offset() == dst.storage_offset() && src.sizes() == dst.sizes())
    return;  // the same elements: nothing to do
  DeviceGuard guard(dst.device().index(), "copy_");
  const cudaStream_t stream = current_native_stream(dst.device().index());
  if (src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous() && src.numel() == dst.numel()) {
    check(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(dst.nbytes()),
                          cudaMemcpyDeviceToDevice, stream),
          "copy_");
    return;
  }
  move_elements(dst, src, stream, "copy_");
}

// dst (CUDA) = src (CPU).
void upload(const Tensor& dst, const Tensor& src_in, const OpCall& c) {
  Tensor src = src_in;
  if (!device_converts(src.dtype(), dst.dtype())) src = host::converted(src, dst.dtype(), c);  // convert on the host
  src = host::contiguous(src, c);
  DeviceGuard guard(dst.device().index(), "copy_");
  const Stream stream = current_stream(dst.device());
  const bool direct = src.dtype() == dst.dtype() && dst.is_contiguous() && src.sizes() == dst.sizes();
  const Tensor staged = direct ? dst : make_empty(src.sizes(), src.dtype(), dst.device());
  const size_t nbytes = static_cast<size_t>(src.nbytes());
  if (src.nbytes() <= kPinnedStaging) {
    const Tensor pinned = empty_pinned(src.sizes(), src.dtype());
    std::memcpy(pinned.data_ptr(), src.data_ptr(), nbytes);
    check(cudaMemcpyAsync(staged.data_ptr(), pinned.data_ptr(), nbytes, cudaMemcpyHostToDevice, native(stream)),
          "copy_");
    record_stream(pinned, stream);  // reused once the transfer has run
  } else {
    check(cudaMemcpyAsync(staged.data_ptr(), src.data_ptr(), nbytes, cudaMemcpyHostToDevice, native(stream)),
          "copy_");
    if (page_locked(src.data_ptr())) check(cudaStreamSynchronize(native(stream)), "copy_");
  }
  if (!direct) device_copy(dst, staged, c);
}

// dst (CPU) = src (CUDA).
void download(const Tensor& dst, const Tensor& src_in, const OpCall& c) {
  Tensor src = src_in;
  const ScalarType staged_dtype = device_converts(src.dtype(), dst.dtype()) ? dst.dtype() : src.dtype();
  if (src.dtype() != staged_dtype || !src.is_contiguous()) {  // convert and compact on the device
    Tensor t = make_empty(src.sizes(), staged_dtype, src.device());
    device_copy(t, src, c);
    src = t;
  }
  DeviceGuard guard(src.device().index(), "copy_");
  const cudaStream_t stream = current_native_stream(src.device().index());
  const bool direct = src.dtype() == dst.dtype() && dst.is_contiguous() && src.sizes() == dst.sizes();
  const Tensor on_host = direct                            ? dst
                         : src.nbytes() <= kPinnedStaging ? empty_pinned(src.sizes(), src.dtype())
                                                          : make_empty(src.sizes(), src.dtype(), Device::cpu());
  check(cudaMemcpyAsync(on_host.data_ptr(), src.data_ptr(), static_cast<size_t>(src.nbytes()),
                        cudaMemcpyDeviceToHost, stream),
        "copy_");
  check(cudaStreamSynchronize(stream), "copy_");  // the data is on the host when copy_ returns
  raise_device_error(src.device().index(), "copy_");  // Note [Device-side errors]
  if (!direct) host::copy_into(dst, on_host, c);  // broadcast, strides, any remaining conversion
}

// dst = src between two different CUDA devices: compact on the source, peer copy, finish on dst's device.
void peer_copy(const Tensor& dst, const Tensor& src_in, const OpCall& c) {
  const Tensor src = contiguous(src_in);
  const Tensor staged = make_empty(src.sizes(), src.dtype(), dst.device());
  DeviceGuard guard(dst.device().index(), "copy_");
  const Stream src_stream = current_stream(src.device()), dst_stream = current_stream(dst.device());
  Event src_ready, copied;
  src_ready.record(src_stream);
  src_ready.wait(dst_stream);
  check(cudaMemcpyPeerAsync(staged.data_ptr(), dst.device().index(), src.data_ptr(), src.device().index(),
                            static_cast<size_t>(src.nbytes()), native(dst_stream)),
        "copy_");
  record_stream(src, dst_stream);  // src's memory is read on dst's stream
  copied.record(dst_stream);
  copied.wait(src_stream);  // later writes to src on its stream wait for the copy
  device_copy(dst, staged, c);
}

void copy_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& dst = c.in[0];
  const Tensor& src = c.in[1];
  MIXT_CHECK_OP(broadcast_shapes(src.sizes(), dst.sizes(), "copy_") == dst.sizes(), c,
                "source of shape {} cannot be broadcast to the destination's {}", src.sizes(), dst.sizes());
  check_writable(c, dst, "the destination");
  c.out[0] = dst;
  if (dst.numel() == 0) return;
  if (dst.is_cuda() && src.is_cuda()) {
    if (dst.device() == src.device()) device_copy(dst, src, c);
    else peer_copy(dst, src, c);
  } else if (dst.is_cuda()) {
    upload(dst, src, c);
  } else {
    MIXT_CHECK_OP(src.is_cuda(), c, "the CUDA copy needs a CUDA tensor");
    download(dst, src, c);
  }
}

}  // namespace

void register_copy_kernels() { register_kernel(OpId::copy_, DispatchKey::CUDA, copy_kernel); }

}  // namespace mixt::cuda
