// cuBLASLt and cuBLAS handles and the GEMM workspace (Note [GEMM handles]). Host code.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace mixt::cuda::gemm {

// Throws mixt::Error(op, "<what>: <cuBLAS status name>") unless `s` is CUBLAS_STATUS_SUCCESS.
void check_blas(cublasStatus_t s, const char* op, const char* what);

// The cuBLASLt handle of device `device` (made on first use, shared by every thread: the
// handle only holds the context; cuBLASLt calls with one handle are thread-safe).
cublasLtHandle_t lt_handle(int device);
// This thread's cuBLAS handle of device `device`, bound to `stream` and to the stream's
// workspace (cuBLAS handles must not be shared between threads that change their stream).
cublasHandle_t blas_handle(int device, cudaStream_t stream);
// The 32 MiB workspace of `stream` on `device`, from the caching allocator (made on first use
// and kept: cuBLAS kernels queued on the stream may still use it when the op returns).
void* workspace(int device, cudaStream_t stream);
// The name of device `device` ("none" when CUDA is unavailable).
const char* device_name(int device);

}  // namespace mixt::cuda::gemm
