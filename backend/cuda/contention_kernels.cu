// The contention measurements' kernels (contention_kernels.hpp).

#include <cuda_runtime.h>

#include "backend/cuda/contention_kernels.hpp"
#include "backend/cuda/cuda_check.hpp"

namespace ragged::backend::gpu {
namespace {

// The GPU's global timer in nanoseconds (PTX %globaltimer).
__device__ inline uint64_t global_nanoseconds() {
  uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void sm_occupant_kernel(uint64_t nanoseconds, int* started) {
  if (threadIdx.x == 0) atomicAdd(started, 1);
  const uint64_t begin = global_nanoseconds();
  while (global_nanoseconds() - begin < nanoseconds) __nanosleep(1000);
}

__global__ void wait_for_count_kernel(const int* counter, int expected, uint64_t timeout_ns, int* timed_out) {
  const uint64_t begin = global_nanoseconds();
  while (*static_cast<const volatile int*>(counter) < expected) {
    if (global_nanoseconds() - begin > timeout_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(200);
  }
}

}  // namespace

std::size_t prepare_sm_occupant(int device_ordinal) {
  int optin = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_ordinal));
  CUDA_CHECK(cudaFuncSetAttribute(sm_occupant_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  return static_cast<std::size_t>(optin);
}

void launch_sm_occupant(int ctas, std::size_t shared_bytes, uint64_t nanoseconds, int* started, cudaStream_t stream) {
  if (ctas <= 0) return;
  sm_occupant_kernel<<<ctas, 32, shared_bytes, stream>>>(nanoseconds, started);
  CUDA_CHECK_LAUNCH();
}

void launch_wait_for_count(const int* counter, int expected, uint64_t timeout_ns, int* timed_out, cudaStream_t stream) {
  wait_for_count_kernel<<<1, 1, 0, stream>>>(counter, expected, timeout_ns, timed_out);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ragged::backend::gpu
