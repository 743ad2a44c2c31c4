// Block-wise 8-bit Adam. A matrix's span is cut into R x C tiles (32 x 32 by
// default; a flat span into runs of R * C elements); m and v live as 8-bit
// codes with one fp32 scale per tile. Each step gathers a tile, dequantises
// it, runs the AdamW update of every element in float (the same kernel as
// adamw_step, on the freshly updated fp32 states), and requantises it with
// new scales taken from the tile alone. Nothing crosses a tile, so a rank
// whose shard starts on a tile row computes bit for bit what one process
// computes on the whole tensor.
//
// The codes are *linear* (m = code * scale / 127, v = code * scale / 255, the
// scale being the block's absmax, codes rounded to nearest with ties away
// from zero). bitsandbytes' 8-bit optimizers use dynamic tree quantisation
// instead (an exponent-like code book that resolves small values finely); the
// linear variant is simpler, and it is the block ownership, not the code book,
// that the sharding property relies on.
//
// One correction to plain linear codes: v's code 0 stands for any value in
// [0, scale / 510), and the step reads it as scale / 510 (half a code), the
// top of that interval, instead of 0. v spans the square of m's dynamic range,
// so inside a block an element's m can keep a non-zero code while its v codes
// to 0; once its gradient vanishes, reading v as 0 would divide m by eps alone
// (steps of ~1e3 for lr = 1e-3 in OptimizerAdam8bit tests). Read as half a
// code, the step stays of order lr, at the price of under-stepping elements
// whose second moment is far below their block's. The measured gap to fp32
// AdamW grows with the dynamic range inside a block (see TracksFp32AdamW).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "backend/optimizer_adamw_kernel.hpp"
#include "backend/optimizer_math.hpp"
#include "common/errors.hpp"

namespace ragged::backend {

namespace {

constexpr float kInt8Max = 127.0f;
constexpr float kUint8Max = 255.0f;

// Round to nearest, ties away from zero (std::round), clamped to [lo, hi].
float round_code(float x, float lo, float hi) { return std::clamp(std::round(x), lo, hi); }

}  // namespace

std::vector<Adam8bitBlock> adam8bit_blocks(int64_t numel, const Adam8bitTiles& t) {
  RAGGED_ASSERT(t.rows > 0 && t.cols > 0 && t.row_length >= 0 && t.matrix_rows >= 0 && t.first_row >= 0,
                "adam8bit: tiles need positive sizes");
  RAGGED_ASSERT(numel >= 0, "adam8bit: negative element count");
  std::vector<Adam8bitBlock> blocks;
  if (t.row_length == 0) {
    const int64_t block = t.rows * t.cols;
    for (int64_t begin = 0; begin < numel; begin += block) {
      const int64_t length = std::min(numel, begin + block) - begin;
      blocks.push_back({begin, length, 1, length});
    }
    return blocks;
  }
  RAGGED_ASSERT(numel % t.row_length == 0, "adam8bit: a tiled span holds whole rows");
  const int64_t span_rows = numel / t.row_length;
  const int64_t matrix_rows = t.matrix_rows > 0 ? t.matrix_rows : t.first_row + span_rows;
  for (int64_t band = 0; band < span_rows;) {
    // Bands restart at every matrix of the tensor; the span starts on a band.
    const int64_t row = t.first_row + band;
    const int64_t matrix_end = (row / matrix_rows + 1) * matrix_rows - t.first_row;
    const int64_t band_end = std::min({span_rows, band + t.rows, matrix_end});
    for (int64_t col = 0; col < t.row_length; col += t.cols) {
      const int64_t col_end = std::min(t.row_length, col + t.cols);
      blocks.push_back({band * t.row_length + col, t.row_length, band_end - band, col_end - col});
    }
    band = band_end;
  }
  return blocks;
}

int64_t adam8bit_num_blocks(int64_t numel, const Adam8bitTiles& tiles) {
  return static_cast<int64_t>(adam8bit_blocks(numel, tiles).size());
}

float quantize_block_int8(std::span<const float> values, std::span<int8_t> codes) {
  RAGGED_ASSERT(codes.size() == values.size(), "quantize_block_int8: codes and values differ in length");
  float scale = 0.0f;
  for (const float x : values) scale = std::max(scale, std::fabs(x));
  for (std::size_t i = 0; i < values.size(); ++i) {
    codes[i] = scale == 0.0f ? int8_t{0}
                             : static_cast<int8_t>(round_code(values[i] / scale * kInt8Max, -kInt8Max, kInt8Max));
  }
  return scale;
}

void dequantize_block_int8(std::span<const int8_t> codes, float scale, std::span<float> values) {
  RAGGED_ASSERT(codes.size() == values.size(), "dequantize_block_int8: codes and values differ in length");
  for (std::size_t i = 0; i < codes.size(); ++i) values[i] = static_cast<float>(codes[i]) * scale / kInt8Max;
}

float quantize_block_uint8(std::span<const float> values, std::span<uint8_t> codes) {
  RAGGED_ASSERT(codes.size() == values.size(), "quantize_block_uint8: codes and values differ in length");
  float scale = 0.0f;
  for (const float x : values) scale = std::max(scale, x);
  for (std::size_t i = 0; i < values.size(); ++i) {
    codes[i] = scale == 0.0f ? uint8_t{0}
                             : static_cast<uint8_t>(round_code(values[i] / scale * kUint8Max, 0.0f, kUint8Max));
  }
  return scale;
}

void dequantize_block_uint8(std::span<const uint8_t> codes, float scale, std::span<float> values) {
  RAGGED_ASSERT(codes.size() == values.size(), "dequantize_block_uint8: codes and values differ in length");
  for (std::size_t i = 0; i < codes.size(); ++i) values[i] = static_cast<float>(codes[i]) * scale / kUint8Max;
}

void adam8bit_step(std::span<float> params, std::span<const float> grads, std::span<int8_t> m_codes,
                   std::span<float> m_scales, std::span<uint8_t> v_codes, std::span<float> v_scales,
                   const Adam8bitTiles& tiles, int64_t step, const AdamWParams& p) {
  const std::size_t n = params.size();
  RAGGED_ASSERT(grads.size() == n && m_codes.size() == n && v_codes.size() == n,
                "adam8bit_step: params, grads and the m/v codes must have the same length");
  // Enumerated once per step: the scale count is checked against it.
  const std::vector<Adam8bitBlock> blocks = adam8bit_blocks(static_cast<int64_t>(n), tiles);
  RAGGED_ASSERT(m_scales.size() == blocks.size() && v_scales.size() == blocks.size(),
                "adam8bit_step: expected one m and one v scale per block (adam8bit_num_blocks)");
  const detail::AdamWConstants c(step, p);
  // A block's elements, gathered: states in float, codes, and where they live.
  std::vector<float> m, v;
  std::vector<int8_t> mc;
  std::vector<uint8_t> vc;
  std::vector<std::size_t> at;
  std::size_t k = 0;
  for (const Adam8bitBlock& block : blocks) {
    at.clear();
    for (int64_t r = 0; r < block.rows; ++r) {
      const int64_t row = block.start + r * block.row_stride;
      for (int64_t col = 0; col < block.cols; ++col) at.push_back(static_cast<std::size_t>(row + col));
    }
    const std::size_t len = at.size();
    m.resize(len);
    v.resize(len);
    mc.resize(len);
    vc.resize(len);
    for (std::size_t i = 0; i < len; ++i) {
      mc[i] = m_codes[at[i]];
      vc[i] = v_codes[at[i]];
    }
    dequantize_block_int8(mc, m_scales[k], m);
    dequantize_block_uint8(vc, v_scales[k], v);
    // v code 0 stands for any value in [0, scale / 510): read it as its upper end.
    const float v_floor = v_scales[k] / (2.0f * kUint8Max);
    for (std::size_t i = 0; i < len; ++i) v[i] = std::max(v[i], v_floor);
    for (std::size_t i = 0; i < len; ++i) detail::adamw_element(params[at[i]], grads[at[i]], m[i], v[i], c);
    m_scales[k] = quantize_block_int8(m, mc);
    v_scales[k] = quantize_block_uint8(v, vc);
    for (std::size_t i = 0; i < len; ++i) {
      m_codes[at[i]] = mc[i];
      v_codes[at[i]] = vc[i];
    }
    ++k;
  }
}

}  // namespace ragged::backend
