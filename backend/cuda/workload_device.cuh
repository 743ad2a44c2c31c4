#pragma once
// Internal to the GPU workload's kernels (workload_kernels.cu, gpu_workload_moe_kernels.cu,
// workload_reductions.cu, attention_kernels.cu): bf16 behind uint16_t, loads
// to fp32 and rounded stores, grid-stride indices, launch sizes, a
// fixed-order block reduction and a row's RMSNorm scale.
// Compiled by nvcc only.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ragged::backend::gpu::kernel_detail {

inline constexpr int kThreads = 256;
// Enough blocks to fill any current GPU many times over; the loops stride.
inline constexpr int64_t kMaxBlocks = 65536;

inline unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

// One block per row, as many as fit (the loops stride).
inline unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(std::clamp<int64_t>(rows, 1, kMaxBlocks)); }

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

// A block-wide reduction in a fixed order: xor butterflies in each warp, then
// over the warps' results. Every thread gets the result.
template <typename V, typename Op>
__device__ V block_reduce(V value, V identity, Op op) {
  __shared__ V partial[32];
  for (int o = 16; o > 0; o >>= 1) value = op(value, __shfl_xor_sync(0xffffffffu, value, o));
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < (blockDim.x + 31) / 32 ? partial[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) value = op(value, __shfl_xor_sync(0xffffffffu, value, o));
    if (lane == 0) partial[0] = value;
  }
  __syncthreads();
  const V result = partial[0];
  __syncthreads();
  return result;
}

inline constexpr double kNormEps = 1e-5;  // the host's kNormEps (workload_internal.hpp)

struct SumOp {
  __device__ double operator()(double a, double b) const { return a + b; }
};

// 1/sqrt(mean(x^2) + eps) of one row, reduced by the whole block.
template <typename T>
__device__ double row_rstd(const T* x, int64_t cols) {
  double sum = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += static_cast<double>(load(x[c])) * load(x[c]);
  sum = block_reduce(sum, 0.0, SumOp{});
  return 1.0 / sqrt(sum / static_cast<double>(cols) + kNormEps);
}

// A row of fp32 logits, reduced by the whole block: its maximum and the sum
// of exp(logit - maximum) in double, as the host's loss computes them.
__device__ inline void row_max_and_sum(const float* row, int64_t vocab, float& max, double& sum) {
  max = -INFINITY;
  for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) max = fmaxf(max, row[v]);
  max = block_reduce(max, -INFINITY, [](float a, float b) { return fmaxf(a, b); });
  sum = 0;
  for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) sum += exp(static_cast<double>(row[v]) - max);
  sum = block_reduce(sum, 0.0, [](double a, double b) { return a + b; });
}

}  // namespace ragged::backend::gpu::kernel_detail

// An element-wise launch of `kernel` over n elements (a grid-stride kernel)
// on `stream`, checked; returns from the calling function when n <= 0. For
// the .cu files' launchers, which have blocks_for and kThreads in scope.
#define RAGGED_LAUNCH(kernel, n, ...)                            \
  do {                                                           \
    if ((n) <= 0) return;                                        \
    kernel<<<blocks_for(n), kThreads, 0, stream>>>(__VA_ARGS__); \
    CUDA_CHECK_LAUNCH();                                         \
  } while (false)

