#pragma once
// Checking CUDA, cuBLAS and NCCL calls, NCCL style: every call of the CUDA
// backend goes through CUDA_CHECK, CUBLAS_CHECK or NCCL_CHECK, which turn a
// failure into an InternalError naming file:line, the call as written and the
// library's own error string. Library code never aborts or exits.
//
// The macros name the libraries' success codes (cudaSuccess,
// CUBLAS_STATUS_SUCCESS, ncclSuccess): the file that makes the call already
// includes the library's header. CUDA, cuBLAS and NCCL types never leave
// backend/.

#include <string>

namespace ragged::backend::gpu {

// Each throws InternalError("<file>:<line>: <call> failed: <error string>").
[[noreturn]] void throw_cuda_error(const char* call, const char* file, int line, int code);
[[noreturn]] void throw_cublas_error(const char* call, const char* file, int line, int code);
[[noreturn]] void throw_nccl_error(const char* call, const char* file, int line, int code);

// True when the CUDA runtime sees at least one device. False, with the reason
// in *why (when why is not null), when there is no driver, the driver is too
// old, or there are no devices (cudaGetDeviceCount failing or returning 0).
// Never throws, aborts or leaves a CUDA error pending.
bool cuda_device_available(std::string* why = nullptr);

}  // namespace ragged::backend::gpu

// Runs a CUDA runtime call; throws InternalError unless it returns cudaSuccess.
// Example: CUDA_CHECK(cudaMalloc(&pointer, bytes));
#define CUDA_CHECK(call)                                                                                        \
  do {                                                                                                          \
    const cudaError_t ragged_cuda_code_ = (call);                                                               \
    if (ragged_cuda_code_ != cudaSuccess)                                                                       \
      ::ragged::backend::gpu::throw_cuda_error(#call, __FILE__, __LINE__, static_cast<int>(ragged_cuda_code_)); \
  } while (false)

// After a kernel launch: the launch's own error (bad configuration, no
// kernel image for the device). Errors of the kernel's execution surface at
// the next synchronising call.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// Runs a cuBLAS call; throws InternalError unless it returns CUBLAS_STATUS_SUCCESS.
#define CUBLAS_CHECK(call)                                                                                          \
  do {                                                                                                              \
    const cublasStatus_t ragged_cublas_code_ = (call);                                                              \
    if (ragged_cublas_code_ != CUBLAS_STATUS_SUCCESS)                                                               \
      ::ragged::backend::gpu::throw_cublas_error(#call, __FILE__, __LINE__, static_cast<int>(ragged_cublas_code_)); \
  } while (false)

// Runs an NCCL call; throws InternalError unless it returns ncclSuccess.
#define NCCL_CHECK(call)                                                                                        \
  do {                                                                                                          \
    const ncclResult_t ragged_nccl_code_ = (call);                                                              \
    if (ragged_nccl_code_ != ncclSuccess)                                                                       \
      ::ragged::backend::gpu::throw_nccl_error(#call, __FILE__, __LINE__, static_cast<int>(ragged_nccl_code_)); \
  } while (false)
