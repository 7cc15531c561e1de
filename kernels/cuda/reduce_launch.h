// The boundary between the host side (.cpp) and the device side (.cu) of the CUDA
// reductions, scans, softmax and normalizations: plain structs and launchers, as
// launch.h is for the elementwise kernels (no fmt, no tensor headers).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/kernels/common/reduce_geometry.h>
#include <mixt/kernels/common/scan_plan.h>
#include <mixt/runtime/dtype.h>

namespace mixt::cuda {

enum class ReduceOp : int8_t {
  Sum, Prod, Mean, Amax, Amin, Max, Min, Var, Std, Norm, LogSumExp, All, Any,
};

// out[o] = reduce(in over the reduced positions of output o), for the geometry `geom`.
// - Sum, Prod: floating inputs give their own dtype; integer and bool inputs give
//   `out_dtype` (int64, or the input's own type when that was requested).
// - Mean, Var, Std, Norm: floating in, same dtype out. LogSumExp: any input, float32
//   out for integer and bool ones (they are read as float32). All, Any: bool out.
// - Max, Min (Arg reducers): `out` gets the values (in's dtype; may be null for
//   argmax/argmin) and `indices` the int64 positions.
struct ReduceArgs {
  ReduceGeometry geom;
  ReduceLaunch launch;
  const void* in = nullptr;
  void* out = nullptr;
  int64_t* indices = nullptr;
  void* workspace = nullptr;  // launch.splits > 1: out_numel * splits * kReduceMaxAccBytes bytes
  ScalarType in_dtype = ScalarType::Float32;
  ScalarType out_dtype = ScalarType::Float32;
  ReduceOp op = ReduceOp::Sum;
  double n = 0;           // Mean: the divisor
  double correction = 1;  // Var, Std
  double p = 2;           // Norm
};

constexpr int64_t kScanAccBytes = 8;  // a scan's accumulator: double or int64

// cumsum (prod = false) / cumprod of plan.lines lines of plan.n elements, scanned under
// `plan` (Note [Chunked scans], kernels/common/scan_plan.h): one thread per line in order,
// or chunks of long lines over many threads. `lines` iterates over the non-scanned dims:
// operand 0 is out, operand 1 is in (byte strides); a line then steps by out_stride /
// in_stride bytes.
struct ScanArgs {
  StridedLayout lines;
  ScanPlan plan;
  int64_t in_stride = 0, out_stride = 0;  // bytes
  const void* in = nullptr;
  void* out = nullptr;
  void* workspace = nullptr;  // plan.chunks > 1: scan_workspace_slots(plan) * kScanAccBytes bytes
  ScalarType in_dtype = ScalarType::Float32;
  ScalarType out_dtype = ScalarType::Float32;
  bool prod = false;
};

// softmax / log_softmax of a contiguous tensor seen as [outer, n, inner] (in and out
// share the dtype, floating).
struct SoftmaxArgs {
  int64_t outer = 1, n = 1, inner = 1;
  const void* in = nullptr;    // the backward kernels: the forward's output y
  const void* grad = nullptr;  // the backward kernels: the gradient of y (y's shape and dtype)
  void* out = nullptr;
  ScalarType dtype = ScalarType::Float32;
  bool log = false;
};

// layer_norm (rms = false) / rms_norm over the rows of a contiguous [rows, cols] x;
// weight and bias are contiguous float64 [cols] or null; mean (layer_norm only) and
// rstd are [rows] in stat_dtype (float32, or float64 for float64 inputs).
struct NormArgs {
  int64_t rows = 0, cols = 0;
  const void* x = nullptr;
  void* y = nullptr;
  const double* weight = nullptr;
  const double* bias = nullptr;
  void* mean = nullptr;
  void* rstd = nullptr;
  double eps = 0;
  ScalarType dtype = ScalarType::Float32;
  ScalarType stat_dtype = ScalarType::Float32;
  bool rms = false;
};

// Each launcher queues its kernels on `stream` and returns the launch's error.
cudaError_t launch_reduce(const ReduceArgs& args, cudaStream_t stream);
cudaError_t launch_scan(const ScanArgs& args, cudaStream_t stream);
cudaError_t launch_softmax(const SoftmaxArgs& args, cudaStream_t stream);
cudaError_t launch_norm(const NormArgs& args, cudaStream_t stream);

// layer_norm_backward (layer = true) / rms_norm_backward over contiguous [rows, cols] g
// and x (Note [Fused backward ops]): mean (layer only) and rstd [rows] in stat_dtype;
// weight contiguous float64 [cols] or null. Writes gx ([rows, cols] in dtype) when not
// null, and the column sums gw and gb ([cols] in stat_dtype) when not null through
// `partials` (2 * column_chunks(rows).chunks * cols doubles, needed when gw or gb is set).
struct NormBackwardArgs {
  int64_t rows = 0, cols = 0;
  const void* g = nullptr;
  const void* x = nullptr;
  const void* mean = nullptr;
  const void* rstd = nullptr;
  const double* weight = nullptr;
  void* gx = nullptr;
  void* gw = nullptr;
  void* gb = nullptr;
  double* partials = nullptr;
  ScalarType dtype = ScalarType::Float32;
  ScalarType stat_dtype = ScalarType::Float32;
  bool layer = true;
};

// softmax_backward / log_softmax_backward (args.log): out = the gradient of the input.
cudaError_t launch_softmax_backward(const SoftmaxArgs& args, cudaStream_t stream);
cudaError_t launch_norm_backward(const NormBackwardArgs& args, cudaStream_t stream);

}  // namespace mixt::cuda
