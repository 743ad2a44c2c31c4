// adam8bit_kernels.hpp. The host's operations, one for one (each product,
// sum, quotient rounded on its own, so that nvcc's FMA contraction cannot
// change a bit):
//   dequantise  m = (code * scale) / 127, v = (code * scale) / 255
//   v floor     v = max(v, v_scale / 510)       (std::max: v < floor ? floor : v)
//   AdamW       detail::adamw_element
//   scales      max |m|, max v over the tile, from +0 (std::max: s < x ? x : s)
//   requantise  clamp(roundf((x / scale) * 127), -127, 127), or 0 when scale == 0
// The maxima are order-independent (a strict comparison from +0 never keeps a
// -0 nor a NaN, like the host's loop), so the block reduction equals the
// host's sequential scan bit for bit. Each thread walks its elements twice
// with the same arithmetic: once for the maxima, once (after the reduction)
// to write the parameter and the codes, so no per-element scratch is needed.

#include <cuda_runtime.h>

#include <cmath>

#include "backend/cuda/adam8bit_kernels.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr float kInt8Max = 127.0f;
constexpr float kUint8Max = 255.0f;

__device__ inline float max_of(float kept, float x) { return kept < x ? x : kept; }
__device__ inline float clamp_to(float x, float lo, float hi) { return x < lo ? lo : (hi < x ? hi : x); }

// Both maxima of the block, returned to every thread.
__device__ void block_max(float& a, float& b) {
  __shared__ float partial_a[kWarps], partial_b[kWarps];
  for (int offset = 16; offset > 0; offset /= 2) {
    a = max_of(a, __shfl_xor_sync(0xffffffffu, a, offset));
    b = max_of(b, __shfl_xor_sync(0xffffffffu, b, offset));
  }
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (lane == 0) {
    partial_a[warp] = a;
    partial_b[warp] = b;
  }
  __syncthreads();
  a = 0.0f;
  b = 0.0f;
  for (int w = 0; w < kWarps; ++w) {
    a = max_of(a, partial_a[w]);
    b = max_of(b, partial_b[w]);
  }
}

struct Moments {
  float m;
  float v;
};

// An element's dequantised moments (v floored), updated by AdamW's moment recurrences.
__device__ inline Moments updated_moments(int8_t m_code, uint8_t v_code, float grad, float m_scale, float v_scale,
                                          float v_floor, const detail::AdamWConstants& c) {
  const float m = __fdiv_rn(__fmul_rn(static_cast<float>(m_code), m_scale), kInt8Max);
  const float v = max_of(__fdiv_rn(__fmul_rn(static_cast<float>(v_code), v_scale), kUint8Max), v_floor);
  return {__fadd_rn(__fmul_rn(c.beta1, m), __fmul_rn(c.one_minus_beta1, grad)),
          __fadd_rn(__fmul_rn(c.beta2, v), __fmul_rn(__fmul_rn(c.one_minus_beta2, grad), grad))};
}

__global__ void adam8bit_kernel(float* params, const float* grads, Adam8bitState s, const Adam8bitTile* tiles,
                                detail::AdamWConstants c) {
  const Adam8bitTile tile = tiles[blockIdx.x];
  const float m_scale = s.m_scales[blockIdx.x], v_scale = s.v_scales[blockIdx.x];
  const float v_floor = __fdiv_rn(v_scale, 2.0f * kUint8Max);
  const int64_t count = int64_t{tile.rows} * tile.cols;
  const auto at = [&](int64_t e) { return tile.start + (e / tile.cols) * tile.row_stride + e % tile.cols; };

  float m_max = 0.0f, v_max = 0.0f;
  for (int64_t e = threadIdx.x; e < count; e += kThreads) {
    const int64_t i = at(e);
    const Moments next = updated_moments(s.m_codes[i], s.v_codes[i], grads[i], m_scale, v_scale, v_floor, c);
    m_max = max_of(m_max, fabsf(next.m));
    v_max = max_of(v_max, next.v);
  }
  block_max(m_max, v_max);  // every thread has read the old scales: they may be overwritten
  if (threadIdx.x == 0) {
    s.m_scales[blockIdx.x] = m_max;
    s.v_scales[blockIdx.x] = v_max;
  }
  for (int64_t e = threadIdx.x; e < count; e += kThreads) {
    const int64_t i = at(e);
    const float grad = grads[i];
    const Moments next = updated_moments(s.m_codes[i], s.v_codes[i], grad, m_scale, v_scale, v_floor, c);
    float param = __fmul_rn(params[i], c.decay);
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(next.v), c.bc2_sqrt), c.eps);
    param = __fsub_rn(param, __fmul_rn(c.step_size, __fdiv_rn(next.m, denom)));
    params[i] = param;
    s.m_codes[i] = m_max == 0.0f ? int8_t{0}
                                 : static_cast<int8_t>(static_cast<int>(clamp_to(
                                       roundf(__fmul_rn(__fdiv_rn(next.m, m_max), kInt8Max)), -kInt8Max, kInt8Max)));
    s.v_codes[i] = v_max == 0.0f ? uint8_t{0}
                                 : static_cast<uint8_t>(static_cast<int>(clamp_to(
                                       roundf(__fmul_rn(__fdiv_rn(next.v, v_max), kUint8Max)), 0.0f, kUint8Max)));
  }
}

}  // namespace

void adam8bit_step(float* params, const float* grads, const Adam8bitState& state, const Adam8bitTile* tiles,
                   int64_t tile_count, const detail::AdamWConstants& constants, cudaStream_t stream) {
  if (tile_count <= 0) return;
  RAGGED_ASSERT(tile_count <= 0x7fffffff, "adam8bit_step: more tiles than a grid holds");
  adam8bit_kernel<<<static_cast<unsigned>(tile_count), kThreads, 0, stream>>>(params, grads, state, tiles, constants);
  CUDA_CHECK_LAUNCH();
}

void adam8bit_step(float* params, const float* grads, const Adam8bitState& state, const Adam8bitTile* tiles,
                   int64_t tile_count, int64_t step, const AdamWParams& p, cudaStream_t stream) {
  adam8bit_step(params, grads, state, tiles, tile_count, detail::AdamWConstants(step, p), stream);
}

}  // namespace ragged::backend::gpu
