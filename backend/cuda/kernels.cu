// The element-wise kernels (kernels.hpp): grid-stride loops over 64-bit
// indices, 256 threads a block. Arithmetic uses the IEEE-rounded intrinsics
// so that nvcc's default FMA contraction (-fmad=true) cannot change a result.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/kernels.hpp"

namespace ragged::backend::gpu {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU many times over; the loops stride.
constexpr int64_t kMaxBlocks = 65536;

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

__device__ inline int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__device__ inline uint16_t bf16_bits(__nv_bfloat16 value) { return __bfloat16_as_ushort(value); }
__device__ inline __nv_bfloat16 bf16_from_bits(uint16_t bits) { return __ushort_as_bfloat16(bits); }

// splitmix64: a well-mixed 64-bit hash of (seed, index).
__device__ inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// (2j + 1 - 2^24) / 2^24 for a 24-bit j: uniform in (-1, 1), odd numerator, never 0.
__device__ inline float uniform_nonzero(uint64_t seed, int64_t i) {
  const uint64_t j = mix(seed ^ mix(static_cast<uint64_t>(i))) >> 40;
  return static_cast<float>(static_cast<int64_t>(2 * j + 1) - (int64_t{1} << 24)) * (1.0f / 16777216.0f);
}

__global__ void fill_kernel(float* out, int64_t n, float value) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = value;
}

__global__ void fill_bf16_kernel(uint16_t* out, int64_t n, uint16_t bits) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = bits;
}

__global__ void fill_random_kernel(float* out, int64_t n, uint64_t seed, float scale) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = __fmul_rn(scale, uniform_nonzero(seed, i));
}

__global__ void fill_random_bf16_kernel(uint16_t* out, int64_t n, uint64_t seed, float scale) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    out[i] = bf16_bits(__float2bfloat16_rn(__fmul_rn(scale, uniform_nonzero(seed, i))));
  }
}

__global__ void copy_kernel(float* __restrict__ dst, const float* __restrict__ src, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) dst[i] = src[i];
}

// n4 float4 vectors, then the caller's scalar tail.
__global__ void copy4_kernel(float4* __restrict__ dst, const float4* __restrict__ src, int64_t n4) {
  for (int64_t i = first_index(); i < n4; i += grid_stride()) dst[i] = src[i];
}

__global__ void cast_to_bf16_kernel(uint16_t* out, const float* in, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = bf16_bits(__float2bfloat16_rn(in[i]));
}

__global__ void cast_to_f32_kernel(float* out, const uint16_t* in, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = __bfloat162float(bf16_from_bits(in[i]));
}

__global__ void axpy_kernel(float* y, float a, const float* x, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = __fadd_rn(__fmul_rn(a, x[i]), y[i]);
}

__global__ void scale_kernel(float* x, float a, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) x[i] = __fmul_rn(a, x[i]);
}

// *count += the elements of x that are NaN or infinite (one atomic a warp
// that found any, so a finite tensor costs one read and no atomics).
__global__ void count_non_finite_kernel(const float* x, int64_t n, unsigned long long* count) {
  unsigned long long found = 0;
  for (int64_t i = first_index(); i < n; i += grid_stride()) found += isfinite(x[i]) ? 0 : 1;
  for (int offset = 16; offset > 0; offset >>= 1) found += __shfl_down_sync(0xffffffffu, found, offset);
  if ((threadIdx.x & 31) == 0 && found != 0) atomicAdd(count, found);
}

// detail::adamw_element, operation for operation:
//   param = param * decay
//   m     = beta1 * m + (1 - beta1) * grad
//   v     = beta2 * v + ((1 - beta2) * grad) * grad
//   denom = sqrt(v) / sqrt(1 - beta2^step) + eps
//   param = param - step_size * (m / denom)
__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, int64_t n,
                             detail::AdamWConstants c) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float grad = grads[i];
    float param = __fmul_rn(params[i], c.decay);
    const float m_new = __fadd_rn(__fmul_rn(c.beta1, m[i]), __fmul_rn(c.one_minus_beta1, grad));
    const float v_new = __fadd_rn(__fmul_rn(c.beta2, v[i]), __fmul_rn(__fmul_rn(c.one_minus_beta2, grad), grad));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v_new), c.bc2_sqrt), c.eps);
    param = __fsub_rn(param, __fmul_rn(c.step_size, __fdiv_rn(m_new, denom)));
    params[i] = param;
    m[i] = m_new;
    v[i] = v_new;
  }
}

// backend::sgd_step, operation for operation:
//   grad = grad + wd * param                 (wd != 0)
//   buf  = first ? grad : mu * buf + grad    (mu != 0); grad = buf
//   param = param - lr * grad
__global__ void sgd_kernel(float* params, const float* grads, float* momentum, int64_t n, float lr, float mu, float wd,
                           bool first) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float grad = grads[i];
    if (wd != 0.0f) grad = __fadd_rn(grad, __fmul_rn(wd, params[i]));
    if (mu != 0.0f) {
      grad = first ? grad : __fadd_rn(__fmul_rn(mu, momentum[i]), grad);
      momentum[i] = grad;
    }
    params[i] = __fsub_rn(params[i], __fmul_rn(lr, grad));
  }
}

__global__ void sum_slots_kernel(float* out, const float* slots, int slot_count, int64_t count) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) {
    float sum = 0.0f;
    for (int s = 0; s < slot_count; ++s) sum = __fadd_rn(sum, slots[static_cast<int64_t>(s) * count + i]);
    out[i] = sum;
  }
}

__global__ void empty_kernel() {}

}  // namespace

void fill(float* out, int64_t n, float value, cudaStream_t stream) {
  if (n <= 0) return;
  fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, n, value);
  CUDA_CHECK_LAUNCH();
}

void fill_bf16(uint16_t* out, int64_t n, uint16_t bits, cudaStream_t stream) {
  if (n <= 0) return;
  fill_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, n, bits);
  CUDA_CHECK_LAUNCH();
}

void fill_random(float* out, int64_t n, uint64_t seed, float scale, cudaStream_t stream) {
  if (n <= 0) return;
  fill_random_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, n, seed, scale);
  CUDA_CHECK_LAUNCH();
}

void fill_random_bf16(uint16_t* out, int64_t n, uint64_t seed, float scale, cudaStream_t stream) {
  if (n <= 0) return;
  fill_random_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, n, seed, scale);
  CUDA_CHECK_LAUNCH();
}

void copy(float* dst, const float* src, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  const bool aligned = reinterpret_cast<uintptr_t>(dst) % 16 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0;
  int64_t done = 0;
  if (aligned && n >= 4) {
    const int64_t n4 = n / 4;
    copy4_kernel<<<blocks_for(n4), kThreads, 0, stream>>>(reinterpret_cast<float4*>(dst),
                                                          reinterpret_cast<const float4*>(src), n4);
    CUDA_CHECK_LAUNCH();
    done = n4 * 4;
  }
  if (done < n) {
    copy_kernel<<<blocks_for(n - done), kThreads, 0, stream>>>(dst + done, src + done, n - done);
    CUDA_CHECK_LAUNCH();
  }
}

void cast_to_bf16(uint16_t* out, const float* in, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  cast_to_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, in, n);
  CUDA_CHECK_LAUNCH();
}

void cast_to_f32(float* out, const uint16_t* in, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  cast_to_f32_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, in, n);
  CUDA_CHECK_LAUNCH();
}

void axpy(float* y, float a, const float* x, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  axpy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, a, x, n);
  CUDA_CHECK_LAUNCH();
}

void scale(float* x, float a, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, a, n);
  CUDA_CHECK_LAUNCH();
}

void count_non_finite(const float* x, int64_t n, unsigned long long* count, cudaStream_t stream) {
  if (n <= 0) return;
  count_non_finite_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, count);
  CUDA_CHECK_LAUNCH();
}

void adamw_step(float* params, const float* grads, float* m, float* v, int64_t n,
                const detail::AdamWConstants& constants, cudaStream_t stream) {
  if (n <= 0) return;
  adamw_kernel<<<blocks_for(n), kThreads, 0, stream>>>(params, grads, m, v, n, constants);
  CUDA_CHECK_LAUNCH();
}

void adamw_step(float* params, const float* grads, float* m, float* v, int64_t n, int64_t step, const AdamWParams& p,
                cudaStream_t stream) {
  adamw_step(params, grads, m, v, n, detail::AdamWConstants(step, p), stream);
}

void sgd_step(float* params, const float* grads, float* momentum, int64_t n, int64_t step, const SgdParams& p,
              cudaStream_t stream) {
  if (n <= 0) return;
  RAGGED_ASSERT(p.momentum == 0.0 || momentum != nullptr, "sgd_step: momentum without a buffer");
  sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(params, grads, momentum, n, static_cast<float>(p.lr),
                                                      static_cast<float>(p.momentum),
                                                      static_cast<float>(p.weight_decay), step == 1);
  CUDA_CHECK_LAUNCH();
}

void sum_slots_in_order(float* out, const float* slots, int slot_count, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  sum_slots_kernel<<<blocks_for(count), kThreads, 0, stream>>>(out, slots, slot_count, count);
  CUDA_CHECK_LAUNCH();
}

void launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  CUDA_CHECK_LAUNCH();
}

}  // namespace ragged::backend::gpu
