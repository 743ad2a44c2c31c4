#pragma once
// Internal to the GPU workload's kernels (workload_kernels.cu,
// workload_reductions.cu): bf16 behind uint16_t, loads to fp32 and rounded
// stores, grid-stride indices, launch sizes. Compiled by nvcc only.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace ragged::backend::gpu::kernel_detail {

inline constexpr int kThreads = 256;
// Enough blocks to fill any current GPU many times over; the loops stride.
inline constexpr int64_t kMaxBlocks = 65536;

inline unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

// uint16_t at the interface is bf16 on the device.
template <typename S>
struct Device {
  using type = S;
};
template <>
struct Device<uint16_t> {
  using type = __nv_bfloat16;
};
template <typename S>
inline auto* dev(S* p) {
  return reinterpret_cast<typename Device<S>::type*>(p);
}
template <typename S>
inline const auto* dev(const S* p) {
  return reinterpret_cast<const typename Device<S>::type*>(p);
}

__device__ inline float load(float x) { return x; }
__device__ inline float load(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline void store(float& out, float v) { out = v; }
__device__ inline void store(__nv_bfloat16& out, float v) { out = __float2bfloat16_rn(v); }

__device__ inline int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace ragged::backend::gpu::kernel_detail
