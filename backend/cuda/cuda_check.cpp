// The error reporting of the CUDA backend's checking macros, and the
// device probe that lets callers skip GPU work on machines without one.

#include "backend/cuda/cuda_check.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include "common/errors.hpp"

namespace ragged::backend::gpu {

void throw_cuda_error(const char* call, const char* file, int line, int code) {
  const auto error = static_cast<cudaError_t>(code);
  // The runtime remembers the last error until it is read: read it here, so
  // that a caller who recovers (a smaller allocation) does not meet this
  // error again at the next launch check. Sticky errors stay anyway.
  cudaGetLastError();
  throw InternalError(
      fmt::format("{}:{}: {} failed: {} ({})", file, line, call, cudaGetErrorString(error), cudaGetErrorName(error)));
}

void throw_cublas_error(const char* call, const char* file, int line, int code) {
  const auto status = static_cast<cublasStatus_t>(code);
  throw InternalError(fmt::format("{}:{}: {} failed: {} ({})", file, line, call, cublasGetStatusString(status),
                                  cublasGetStatusName(status)));
}

void throw_nccl_error(const char* call, const char* file, int line, int code) {
  const auto result = static_cast<ncclResult_t>(code);
  std::string reason = ncclGetErrorString(result);
  // NCCL keeps a more specific message of the last failure on this thread.
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') reason += fmt::format(" ({})", last);
  throw InternalError(fmt::format("{}:{}: {} failed: {}", file, line, call, reason));
}

bool cuda_device_available(std::string* why) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // leave no error pending for the caller's next call
    if (why != nullptr) {
      *why = fmt::format("cudaGetDeviceCount failed: {} ({})", cudaGetErrorString(error), cudaGetErrorName(error));
      if (error == cudaErrorInsufficientDriver) {
        *why += " - no NVIDIA driver (libcuda) was found, or it is older than this CUDA runtime";
      } else if (error == cudaErrorNoDevice) {
        *why += " - no CUDA device is visible (check CUDA_VISIBLE_DEVICES)";
      }
    }
    return false;
  }
  if (count <= 0) {
    if (why != nullptr) *why = "the CUDA runtime sees no device (cudaGetDeviceCount returned 0)";
    return false;
  }
  if (why != nullptr) why->clear();
  return true;
}

}  // namespace ragged::backend::gpu
