// Block-wise 8-bit Adam. A span is cut into blocks of `block` consecutive
// elements from its first element (the last block may be shorter); m and v
// live as 8-bit codes with one fp32 scale per block. Each step dequantises a
// block, runs the AdamW update of every element in float (the same kernel as
// adamw_step, on the freshly updated fp32 states), and requantises the block
// with new scales taken from the block alone. Nothing crosses a block, so a
// rank whose shard starts on a block boundary computes bit for bit what one
// process computes on the whole tensor.
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

int64_t adam8bit_num_blocks(int64_t numel, int64_t block) {
  RAGGED_ASSERT(block > 0, "adam8bit: the block size must be positive");
  RAGGED_ASSERT(numel >= 0, "adam8bit: negative element count");
  return (numel + block - 1) / block;
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
                   std::span<float> m_scales, std::span<uint8_t> v_codes, std::span<float> v_scales, int64_t block,
                   int64_t step, const AdamWParams& p) {
  const std::size_t n = params.size();
  RAGGED_ASSERT(grads.size() == n && m_codes.size() == n && v_codes.size() == n,
                "adam8bit_step: params, grads and the m/v codes must have the same length");
  // The span is whole blocks plus at most one shorter last block: exactly
  // ceil(n / block) scales per state.
  const auto blocks = static_cast<std::size_t>(adam8bit_num_blocks(static_cast<int64_t>(n), block));
  RAGGED_ASSERT(m_scales.size() == blocks && v_scales.size() == blocks,
                "adam8bit_step: expected one m and one v scale per block (ceil(numel / block))");
  const detail::AdamWConstants c(step, p);
  const auto b = static_cast<std::size_t>(block);
  std::vector<float> m(std::min(b, n));
  std::vector<float> v(std::min(b, n));
  for (std::size_t k = 0; k < blocks; ++k) {
    const std::size_t begin = k * b;
    const std::size_t len = std::min(b, n - begin);
    const std::span<float> mb(m.data(), len);
    const std::span<float> vb(v.data(), len);
    dequantize_block_int8(m_codes.subspan(begin, len), m_scales[k], mb);
    dequantize_block_uint8(v_codes.subspan(begin, len), v_scales[k], vb);
    // v code 0 stands for any value in [0, scale / 510): read it as its upper end.
    const float v_floor = v_scales[k] / (2.0f * kUint8Max);
    for (std::size_t i = 0; i < len; ++i) vb[i] = std::max(vb[i], v_floor);
    for (std::size_t i = 0; i < len; ++i) detail::adamw_element(params[begin + i], grads[begin + i], mb[i], vb[i], c);
    m_scales[k] = quantize_block_int8(mb, m_codes.subspan(begin, len));
    v_scales[k] = quantize_block_uint8(vb, v_codes.subspan(begin, len));
  }
}

}  // namespace ragged::backend
