// Device kernels of copy_ and fill_: a strided cast between the floating dtypes
// (plus raw same-dtype moves of every dtype) and a raw fill.
#include <mixt/kernels/cuda/convert.cuh>
#include <mixt/kernels/cuda/launch.h>
#include <mixt/kernels/cuda/loops.cuh>

namespace mixt::cuda {
namespace {

// dst[i] = convert(src[i]) over one dense run.
template <class To, class From>
__global__ void cast_contiguous_kernel(int64_t n, To* __restrict__ dst, const From* __restrict__ src) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) dst[i] = fp_convert<To>(src[i]);
}

// dst = convert(src) over any strides (broadcast src included).
template <class To, class From>
__global__ void cast_strided_kernel(Layout L, char* dst, const char* src) {
  for (int64_t i = grid_start(); i < L.numel; i += grid_step()) {
    int64_t off[2];
    layout_offsets(L, i, off);
    *reinterpret_cast<To*>(dst + off[0]) = fp_convert<To>(*reinterpret_cast<const From*>(src + off[1]));
  }
}

// Launches the cast kernel for one (To, From) pair.
template <class To, class From>
cudaError_t launch_cast_typed(const CastArgs& a, cudaStream_t stream) {
  const Layout& L = a.layout;
  if (L.numel == 0) return cudaSuccess;
  const unsigned blocks = blocks_for(L.numel);
  if (L.contiguous) {
    cast_contiguous_kernel<To, From><<<blocks, kBlockThreads, 0, stream>>>(
        L.numel, static_cast<To*>(a.dst), static_cast<const From*>(a.src));
  } else {
    cast_strided_kernel<To, From><<<blocks, kBlockThreads, 0, stream>>>(
        L, static_cast<char*>(a.dst), static_cast<const char*>(a.src));
  }
  return cudaGetLastError();
}

// Calls f(T{}) with the storage type of floating dtype `t` (false when `t` is not floating).
template <class F>
bool visit_floating(Dt t, F&& f) {
  switch (t) {
    case Dt::Float16: f(Half{}); return true;
    case Dt::BFloat16: f(BFloat16{}); return true;
    case Dt::Float32: f(float{}); return true;
    case Dt::Float64: f(double{}); return true;
    case Dt::Float8_e4m3fn: f(Float8_e4m3fn{}); return true;
    case Dt::Float8_e5m2: f(Float8_e5m2{}); return true;
    default: return false;
  }
}

// The byte width of a dtype.
int dt_size(Dt t) {
  switch (t) {
    case Dt::Bool: case Dt::UInt8: case Dt::Int8: case Dt::Float8_e4m3fn: case Dt::Float8_e5m2: return 1;
    case Dt::Float16: case Dt::BFloat16: return 2;
    case Dt::Int32: case Dt::Float32: return 4;
    default: return 8;
  }
}

// Writes `value` to every element of operand 0 of `L`.
template <class U>
__global__ void fill_kernel(Layout L, char* dst, U value) {
  if (L.contiguous) {
    U* p = reinterpret_cast<U*>(dst);
    for (int64_t i = grid_start(); i < L.numel; i += grid_step()) p[i] = value;
  } else {
    for (int64_t i = grid_start(); i < L.numel; i += grid_step()) {
      int64_t off[1];
      layout_offsets(L, i, off);
      *reinterpret_cast<U*>(dst + off[0]) = value;
    }
  }
}

}  // namespace

cudaError_t launch_cast(const CastArgs& a, cudaStream_t stream) {
  if (a.src_dtype == a.dst_dtype) {
    // A same-dtype copy moves bits: one unsigned type per width.
    switch (dt_size(a.src_dtype)) {
      case 1: return launch_cast_typed<uint8_t, uint8_t>(a, stream);
      case 2: return launch_cast_typed<uint16_t, uint16_t>(a, stream);
      case 4: return launch_cast_typed<uint32_t, uint32_t>(a, stream);
      default: return launch_cast_typed<uint64_t, uint64_t>(a, stream);
    }
  }
  cudaError_t err = cudaErrorInvalidValue;  // a pair the host code should have refused
  visit_floating(a.dst_dtype, [&](auto to) {
    visit_floating(a.src_dtype, [&](auto from) {
      using To = decltype(to);
      using From = decltype(from);
      if constexpr (!std::is_same_v<To, From>) err = launch_cast_typed<To, From>(a, stream);
    });
  });
  return err;
}

cudaError_t launch_fill(const Layout& L, void* dst, int element_size, uint64_t bits, cudaStream_t s) {
  if (L.numel == 0) return cudaSuccess;
  char* p = static_cast<char*>(dst);
  const unsigned b = blocks_for(L.numel);
  switch (element_size) {
    case 1: fill_kernel<<<b, kBlockThreads, 0, s>>>(L, p, static_cast<uint8_t>(bits)); break;
    case 2: fill_kernel<<<b, kBlockThreads, 0, s>>>(L, p, static_cast<uint16_t>(bits)); break;
    case 4: fill_kernel<<<b, kBlockThreads, 0, s>>>(L, p, static_cast<uint32_t>(bits)); break;
    case 8: fill_kernel<<<b, kBlockThreads, 0, s>>>(L, p, bits); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace mixt::cuda
