#pragma once
// Block-wise 8-bit Adam on the GPU, bit for bit the host's adam8bit_step
// (backend/optimizer_adam8bit.cpp): one CUDA block per quantisation tile of
// the shard (adam8bit_layout.hpp) dequantises m and v, runs the AdamW element
// update of optimizer_adamw_kernel.hpp with every operation IEEE-rounded on
// its own (as kernels.hpp's adamw_step), takes the tile's new absmax scales
// and requantises (round to nearest, ties away from zero, clamped).
// Asynchronous on `stream`; pointers are device pointers.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/adam8bit_layout.hpp"
#include "backend/optimizer_adamw_kernel.hpp"
#include "backend/optimizer_math.hpp"

namespace ragged::backend::gpu {

// The shard's 8-bit state: codes indexed by shard offset, scales by tile.
struct Adam8bitState {
  int8_t* m_codes = nullptr;
  uint8_t* v_codes = nullptr;
  float* m_scales = nullptr;
  float* v_scales = nullptr;
};

// Updates the `tile_count` tiles of `tiles` (a device table) of a shard.
void adam8bit_step(float* params, const float* grads, const Adam8bitState& state, const Adam8bitTile* tiles,
                   int64_t tile_count, const detail::AdamWConstants& constants, cudaStream_t stream);
void adam8bit_step(float* params, const float* grads, const Adam8bitState& state, const Adam8bitTile* tiles,
                   int64_t tile_count, int64_t step, const AdamWParams& p, cudaStream_t stream);

}  // namespace ragged::backend::gpu
