// Block-wise 8-bit Adam: the linear block quantisers, bit-for-bit equality of a
// whole span with block-aligned shards (short last block included), and that
// it optimises like fp32 AdamW.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "backend/optimizer_math.hpp"
#include "tests/backend/optimizer_test_util.hpp"
#include "common/errors.hpp"

namespace ragged::backend {
namespace {

using optimizer_test::bitwise_equal;
using optimizer_test::random_vector;

// Blocks of `block` consecutive elements: a flat span.
Adam8bitTiles flat(int64_t block) { return {1, block, 0, 0}; }

// The state of 8-bit Adam over one span; starts at m = v = 0.
struct State8 {
  std::vector<float> params;
  std::vector<int8_t> m_codes;
  std::vector<float> m_scales;
  std::vector<uint8_t> v_codes;
  std::vector<float> v_scales;
  int64_t block;

  State8(std::vector<float> p, int64_t block_size)
      : params(std::move(p)),
        m_codes(params.size(), 0),
        m_scales(static_cast<std::size_t>(adam8bit_num_blocks(int64_t(params.size()), flat(block_size))), 0.0f),
        v_codes(params.size(), 0),
        v_scales(m_scales.size(), 0.0f),
        block(block_size) {}

  void step(std::span<const float> g, int64_t t, const AdamWParams& hp) {
    adam8bit_step(params, g, m_codes, m_scales, v_codes, v_scales, flat(block), t, hp);
  }
  // Steps elements [b, b + len) (b on a block boundary) as a shard of its own.
  void step_shard(std::size_t b, std::size_t len, std::span<const float> g, int64_t t, const AdamWParams& hp) {
    const auto blk = static_cast<std::size_t>(block);
    const std::size_t first = b / blk, count = (len + blk - 1) / blk;
    adam8bit_step(std::span(params).subspan(b, len), g.subspan(b, len), std::span(m_codes).subspan(b, len),
                  std::span(m_scales).subspan(first, count), std::span(v_codes).subspan(b, len),
                  std::span(v_scales).subspan(first, count), flat(block), t, hp);
  }
};

TEST(OptimizerAdam8bit, SignedRoundTripWithinHalfACode) {
  std::mt19937 rng(3);
  for (float magnitude : {1e-6f, 1e-2f, 1.0f, 3e4f}) {
    std::vector<float> x = random_vector(257, rng, -magnitude, magnitude);
    std::vector<int8_t> codes(x.size());
    const float scale = quantize_block_int8(x, codes);
    float absmax = 0.0f;
    for (float e : x) absmax = std::max(absmax, std::fabs(e));
    EXPECT_EQ(scale, absmax);
    std::vector<float> back(x.size());
    dequantize_block_int8(codes, scale, back);
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_LE(std::fabs(back[i] - x[i]), scale / 254.0f * (1.0f + 1e-5f)) << "magnitude " << magnitude << " i " << i;
      EXPECT_GE(codes[i], -127);
    }
    // The absmax element is exact.
    const auto at = std::max_element(x.begin(), x.end(), [](float a, float b) { return std::fabs(a) < std::fabs(b); });
    EXPECT_EQ(std::fabs(back[std::size_t(at - x.begin())]), scale);
  }
}

TEST(OptimizerAdam8bit, UnsignedRoundTripWithinHalfACode) {
  std::mt19937 rng(4);
  for (float magnitude : {1e-12f, 1e-4f, 1.0f, 1e6f}) {
    std::vector<float> x = random_vector(300, rng, 0.0f, magnitude);
    std::vector<uint8_t> codes(x.size());
    const float scale = quantize_block_uint8(x, codes);
    EXPECT_EQ(scale, *std::max_element(x.begin(), x.end()));
    std::vector<float> back(x.size());
    dequantize_block_uint8(codes, scale, back);
    for (std::size_t i = 0; i < x.size(); ++i)
      EXPECT_LE(std::fabs(back[i] - x[i]), scale / 510.0f * (1.0f + 1e-5f)) << "magnitude " << magnitude;
  }
}

TEST(OptimizerAdam8bit, RoundsTiesAwayFromZero) {
  // x / scale * 127 computed in float; where it lands exactly on k + 0.5, the code is k + 1 (or -(k + 1)).
  const float scale = 127.0f;
  int ties = 0;
  for (int k = 0; k < 126; ++k) {
    const float x = float(k) + 0.5f;
    if (x / scale * 127.0f != x) continue;
    ++ties;
    std::vector<float> values{scale, x, -x};
    std::vector<int8_t> codes(3);
    ASSERT_EQ(quantize_block_int8(values, codes), scale);
    EXPECT_EQ(codes[1], k + 1);
    EXPECT_EQ(codes[2], -(k + 1));
  }
  EXPECT_GT(ties, 10);
}

TEST(OptimizerAdam8bit, ZeroBlockHasZeroScaleAndCodes) {
  const std::vector<float> zeros(10, 0.0f);
  std::vector<int8_t> m_codes(10, 5);
  std::vector<uint8_t> v_codes(10, 5);
  EXPECT_EQ(quantize_block_int8(zeros, m_codes), 0.0f);
  EXPECT_EQ(quantize_block_uint8(zeros, v_codes), 0.0f);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(m_codes[std::size_t(i)], 0);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(v_codes[std::size_t(i)], 0);
  std::vector<float> back(10, 1.0f);
  dequantize_block_int8(m_codes, 0.0f, back);
  for (float e : back) EXPECT_EQ(e, 0.0f);
  // A step with zero gradients and zero states stays at zero (no 0/0).
  State8 s(std::vector<float>(10, 1.0f), 4);
  AdamWParams hp;
  hp.weight_decay = 0.0;
  s.step(zeros, 1, hp);
  for (float p : s.params) EXPECT_EQ(p, 1.0f);
  for (float sc : s.m_scales) EXPECT_EQ(sc, 0.0f);
}

TEST(OptimizerAdam8bit, WholeEqualsBlockAlignedShardsBitwise) {
  std::mt19937 rng(5);
  const int64_t block = 64;
  const std::size_t n = 37 * 64 + 17;  // a short last block of 17
  const std::size_t blocks = 38;
  const AdamWParams hp;
  for (int trial = 0; trial < 10; ++trial) {
    const std::vector<float> p0 = random_vector(n, rng, -1.0f, 1.0f);
    State8 whole(p0, block), split(p0, block);
    for (int64_t t = 1; t <= 5; ++t) {
      std::vector<float> g = random_vector(n, rng, -1.0f, 1.0f);
      for (std::size_t i = 0; i < n; ++i) g[i] *= std::pow(10.0f, float(int(i % 4) - 2));
      whole.step(g, t, hp);
      // Random block-aligned cut points, new every step (empty shards included).
      std::uniform_int_distribution<std::size_t> dist(0, blocks);
      std::vector<std::size_t> cuts{0, blocks};
      for (int k = 0; k < 1 + trial % 5; ++k) cuts.push_back(dist(rng));
      std::sort(cuts.begin(), cuts.end());
      for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
        const std::size_t b = std::min(n, cuts[k] * std::size_t(block));
        const std::size_t e = std::min(n, cuts[k + 1] * std::size_t(block));
        split.step_shard(b, e - b, g, t, hp);
      }
    }
    EXPECT_TRUE(bitwise_equal(whole.params, split.params)) << trial;
    EXPECT_TRUE(bitwise_equal(whole.m_codes, split.m_codes)) << trial;
    EXPECT_TRUE(bitwise_equal(whole.m_scales, split.m_scales)) << trial;
    EXPECT_TRUE(bitwise_equal(whole.v_codes, split.v_codes)) << trial;
    EXPECT_TRUE(bitwise_equal(whole.v_scales, split.v_scales)) << trial;
  }
}

TEST(OptimizerAdam8bit, ShortLastBlockIsABlockOfItsOwn) {
  std::mt19937 rng(6);
  const int64_t block = 32;
  const std::size_t n = 2 * 32 + 5;
  const AdamWParams hp;
  const std::vector<float> p0 = random_vector(n, rng, -1.0f, 1.0f);
  State8 whole(p0, block);
  ASSERT_EQ(whole.m_scales.size(), 3u);
  // The same 5 elements as a span of one block of exactly 5.
  State8 alone(std::vector<float>(p0.end() - 5, p0.end()), 5);
  ASSERT_EQ(alone.m_scales.size(), 1u);
  for (int64_t t = 1; t <= 6; ++t) {
    std::vector<float> g = random_vector(n, rng, -1.0f, 1.0f);
    g[n - 1] = 50.0f * float(t);  // the largest gradient of the span sits in the short block
    whole.step(g, t, hp);
    alone.step(std::span<const float>(g).subspan(n - 5), t, hp);
  }
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(whole.params[n - 5 + i], alone.params[i]);
    EXPECT_EQ(whole.m_codes[n - 5 + i], alone.m_codes[i]);
    EXPECT_EQ(whole.v_codes[n - 5 + i], alone.v_codes[i]);
  }
  EXPECT_EQ(whole.m_scales[2], alone.m_scales[0]);
  EXPECT_EQ(whole.v_scales[2], alone.v_scales[0]);
  // The short block's large values do not leak into the full blocks' scales.
  EXPECT_GT(whole.v_scales[2], 100.0f * std::max(whole.v_scales[0], whole.v_scales[1]));
  // Its absmax element carries code 127 / 255.
  EXPECT_EQ(std::abs(int(whole.m_codes[n - 1])), 127);
  EXPECT_EQ(int(whole.v_codes[n - 1]), 255);
}

TEST(OptimizerAdam8bit, RejectsMisSizedScalesAndBlocks) {
  std::vector<float> p(10), g(10), ms(3), vs(3), short_scales(2);
  std::vector<int8_t> mc(10);
  std::vector<uint8_t> vc(10);
  EXPECT_NO_THROW(adam8bit_step(p, g, mc, ms, vc, vs, flat(4), 1, AdamWParams{}));
  EXPECT_THROW(adam8bit_step(p, g, mc, short_scales, vc, vs, flat(4), 1, AdamWParams{}), InternalError);
  EXPECT_THROW(adam8bit_step(p, g, mc, ms, vc, vs, flat(0), 1, AdamWParams{}), InternalError);
  std::vector<int8_t> mc_short(9);
  EXPECT_THROW(adam8bit_step(p, g, mc_short, ms, vc, vs, flat(4), 1, AdamWParams{}), InternalError);
  EXPECT_EQ(adam8bit_num_blocks(0, flat(4)), 0);
  EXPECT_EQ(adam8bit_num_blocks(8, flat(4)), 2);
  EXPECT_EQ(adam8bit_num_blocks(9, flat(4)), 3);
  // Tiles: whole rows only; 5 rows of 10 in 2 x 4 tiles are 3 bands of 3 tiles.
  EXPECT_EQ(adam8bit_num_blocks(50, {2, 4, 10, 0}), 9);
  EXPECT_THROW(adam8bit_num_blocks(45, {2, 4, 10, 0}), InternalError);
  // Bands restart at every matrix: two matrices of 5 rows are 2 x 3 bands.
  EXPECT_EQ(adam8bit_num_blocks(100, {2, 4, 10, 5}), 18);
}

// A diagonal quadratic 0.5 * sum h_i (p_i - t_i)^2 with curvatures spread over `decades`.
struct Quadratic {
  std::vector<float> h, target;
  Quadratic(std::size_t n, std::mt19937& rng, float decades)
      : h(n), target(random_vector(n, rng, -1.0f, 1.0f)) {
    std::uniform_real_distribution<float> e(-0.5f * decades, 0.5f * decades);
    for (float& x : h) x = std::pow(10.0f, e(rng));
  }
  double loss(const std::vector<float>& p) const {
    double l = 0.0;
    for (std::size_t i = 0; i < p.size(); ++i) l += 0.5 * h[i] * double(p[i] - target[i]) * (p[i] - target[i]);
    return l;
  }
  std::vector<float> grad(const std::vector<float>& p, const std::vector<float>& noise) const {
    std::vector<float> g(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) g[i] = h[i] * (p[i] - target[i]) + noise[i];
    return g;
  }
};

TEST(OptimizerAdam8bit, ConvergesOnAQuadratic) {
  std::mt19937 rng(8);
  const std::size_t n = 2048;
  const Quadratic q(n, rng, 3.0f);  // curvatures 0.03 .. 30
  AdamWParams hp;
  hp.lr = 1e-2;
  hp.weight_decay = 0.0;
  State8 s(std::vector<float>(n, 0.0f), 256);
  const std::vector<float> no_noise(n, 0.0f);
  const double initial = q.loss(s.params);
  double previous_checkpoint = initial;
  for (int64_t t = 1; t <= 500; ++t) {
    s.step(q.grad(s.params, no_noise), t, hp);
    if (t % 100 == 0) {
      const double l = q.loss(s.params);
      std::printf("8-bit Adam on a quadratic: step %3ld loss %.4g (initial %.4g)\n", long(t), l, initial);
      EXPECT_LT(l, previous_checkpoint) << "step " << t;
      previous_checkpoint = l;
    }
  }
  EXPECT_LT(q.loss(s.params), 1e-2 * initial);
}

TEST(OptimizerAdam8bit, TracksFp32AdamW) {
  // Noisy gradients of a quadratic whose curvatures span one decade, 32x32
  // blocks (measured 0.061). The gap grows with the dynamic range inside a
  // block (linear codes): on this kind of problem |p8 - p32| / |p32 - p0| was
  // ~0.003 / 0.05 / 0.1 / 0.3 for curvatures over 0 / 1 / 2 / 3 decades.
  std::mt19937 rng(9);
  const std::size_t n = 4096;
  const Quadratic q(n, rng, 1.0f);
  AdamWParams hp;
  hp.lr = 3e-3;
  hp.weight_decay = 0.1;
  const std::vector<float> p0 = random_vector(n, rng, -0.5f, 0.5f);
  State8 s8(p0, 1024);
  std::vector<float> p32 = p0, m(n, 0.0f), v(n, 0.0f);
  std::normal_distribution<float> noise_dist(0.0f, 0.3f);
  for (int64_t t = 1; t <= 300; ++t) {
    std::vector<float> noise(n);
    for (float& x : noise) x = noise_dist(rng);
    s8.step(q.grad(s8.params, noise), t, hp);
    adamw_step(p32, q.grad(p32, noise), m, v, t, hp);
  }
  double diff = 0.0, moved = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    diff += double(s8.params[i] - p32[i]) * (s8.params[i] - p32[i]);
    moved += double(p32[i] - p0[i]) * (p32[i] - p0[i]);
  }
  const double l8 = q.loss(s8.params), l32 = q.loss(p32);
  const double relative = std::sqrt(diff / moved);
  std::printf("8-bit vs fp32 AdamW after 300 steps: |p8 - p32| / |p32 - p0| = %.4f, loss %.4g vs %.4g (initial %.4g)\n",
              relative, l8, l32, q.loss(p0));
  EXPECT_LT(relative, 0.1);
  EXPECT_LT(l8, 1.2 * l32);
}

TEST(OptimizerAdam8bit, ZeroCodedSecondMomentDoesNotExplodeTheStep) {
  // Element 1's moments are 1/50 of element 0's: its m keeps a non-zero code
  // while its v (~1/2500 of the block's scale) codes to 0. When its gradient
  // then vanishes, reading v as 0 would divide m by eps; v code 0 is read as
  // half a code, and the step stays about lr, as in fp32 AdamW.
  AdamWParams hp;
  hp.lr = 1e-3;
  hp.weight_decay = 0.0;
  State8 s({0.0f, 0.0f}, 2);
  std::vector<float> p32{0.0f, 0.0f}, m(2, 0.0f), v(2, 0.0f);
  for (int64_t t = 1; t <= 30; ++t) {
    const std::vector<float> g{1.0f, t <= 5 ? 0.02f : 0.0f};
    const float before = s.params[1];
    s.step(g, t, hp);
    adamw_step(p32, g, m, v, t, hp);
    EXPECT_LE(std::fabs(s.params[1] - before), 2.0 * hp.lr) << "step " << t;
    if (t == 5) {
      EXPECT_NE(s.m_codes[1], 0);
      EXPECT_EQ(s.v_codes[1], 0);
    }
  }
  std::printf("8-bit vs fp32 AdamW on a vanished gradient after 30 steps: %.5f vs %.5f\n", s.params[1], p32[1]);
}

}  // namespace
}  // namespace ragged::backend
