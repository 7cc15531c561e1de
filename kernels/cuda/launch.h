// The boundary between the host code (kernels/cuda/*.cpp: OpCalls, checks, fmt)
// and the device code (kernels/cuda/*.cu): plain structs and launcher functions.
// Included by both sides, so it must stay free of mixt's host headers.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace mixt::cuda {

constexpr int kLaunchMaxDims = 8;
constexpr int kLaunchMaxOperands = 3;

// Storage-type codes, numbered as mixt::ScalarType (device.cpp checks that they agree).
enum class Dt : int8_t {
  Bool, UInt8, Int8, Int32, Int64, Float16, BFloat16, Float32, Float64, Float8_e4m3fn, Float8_e5m2
};

// An iteration space over up to three operands (operand 0 is the output): dim 0
// is the fastest; strides are in bytes (0 for a broadcast or scalar operand).
struct Layout {
  int ndim = 0;
  int noperands = 0;
  int64_t numel = 0;
  bool contiguous = false;  // one dense run: every tensor operand's stride is its element size
  int64_t sizes[kLaunchMaxDims] = {};
  int64_t strides[kLaunchMaxOperands][kLaunchMaxDims] = {};
};

// dst = convert(src): two operands; same-dtype copies of any dtype, or between floating dtypes.
struct CastArgs {
  Layout layout;
  void* dst = nullptr;
  const void* src = nullptr;
  Dt dst_dtype = Dt::Float32;
  Dt src_dtype = Dt::Float32;
};

enum class BinaryOp : int8_t { Add, Mul };

// out = op(a, b) in one floating dtype; operands 1 and 2 of the layout are a and b
// (stride 0 and a null pointer where the input is a scalar).
struct BinaryArgs {
  Layout layout;
  void* out = nullptr;
  const void* in[2] = {nullptr, nullptr};
  bool is_scalar[2] = {false, false};
  double scalar[2] = {0.0, 0.0};
  double alpha = 1.0;
  Dt dtype = Dt::Float32;
  BinaryOp op = BinaryOp::Add;
};

// True when the device cast kernel converts `from` to `to`.
constexpr bool cast_supported(Dt from, Dt to) {
  auto floating = [](Dt t) { return t >= Dt::Float16; };
  return from == to || (floating(from) && floating(to));
}

// Each launcher queues its kernel on `stream` (of the current device; the host side
// passes the current stream) and returns the launch's error (cudaSuccess when nothing
// was launched).
cudaError_t launch_cast(const CastArgs& args, cudaStream_t stream);
// Writes the `element_size`-byte pattern `bits` to every element of operand 0.
cudaError_t launch_fill(const Layout& layout, void* dst, int element_size, uint64_t bits, cudaStream_t stream);
cudaError_t launch_binary(const BinaryArgs& args, cudaStream_t stream);

}  // namespace mixt::cuda
