// 8-bit Adam's 2-D quantisation tiles: a matrix cut at tile rows steps bit
// for bit as the whole matrix does, a tile's scale sees its own columns only,
// and bands restart at every matrix of a fused tensor.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "backend/optimizer_math.hpp"
#include "tests/backend/optimizer_test_util.hpp"

namespace ragged::backend {
namespace {

using optimizer_test::gaussian_vector;
using optimizer_test::same_bits;

struct TiledState {
  Adam8bitTiles tiles;
  std::vector<float> params;
  std::vector<int8_t> m_codes;
  std::vector<uint8_t> v_codes;
  std::vector<float> m_scales, v_scales;

  TiledState(Adam8bitTiles t, std::vector<float> p) : tiles(t), params(std::move(p)) {
    m_codes.assign(params.size(), 0);
    v_codes.assign(params.size(), 0);
    m_scales.assign(static_cast<size_t>(adam8bit_num_blocks(static_cast<int64_t>(params.size()), tiles)), 0.0f);
    v_scales = m_scales;
  }
  void step(std::span<const float> g, int64_t t) {
    adam8bit_step(params, g, m_codes, m_scales, v_codes, v_scales, tiles, t, AdamWParams{});
  }
};

std::vector<float> random_values(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  return gaussian_vector(n, rng, scale);
}

TEST(Adam8bitTiles, ShardsCutAtTileRowsStepLikeTheWholeMatrix) {
  // 70 x 45 in 32 x 16 tiles: a short last band and a short last tile per band.
  const int64_t rows = 70, cols = 45;
  const Adam8bitTiles tiles{32, 16, cols, 0};
  TiledState whole(tiles, random_values(rows * cols, 1, 0.02f));
  std::vector<TiledState> pieces;
  const std::vector<int64_t> cuts = {0, 32, 64, 70};  // rows where ranks' pieces start
  for (size_t p = 0; p + 1 < cuts.size(); ++p) {
    pieces.emplace_back(tiles, std::vector<float>(whole.params.begin() + cuts[p] * cols,
                                                  whole.params.begin() + cuts[p + 1] * cols));
  }
  for (int64_t t = 1; t <= 4; ++t) {
    const std::vector<float> g = random_values(rows * cols, 100 + static_cast<uint32_t>(t), 1.0f);
    whole.step(g, t);
    for (size_t p = 0; p < pieces.size(); ++p) {
      pieces[p].step(std::span<const float>(g).subspan(static_cast<size_t>(cuts[p] * cols),
                                                       static_cast<size_t>((cuts[p + 1] - cuts[p]) * cols)),
                     t);
    }
  }
  size_t scale = 0;
  for (size_t p = 0; p < pieces.size(); ++p) {
    const size_t at = static_cast<size_t>(cuts[p] * cols), n = pieces[p].params.size();
    EXPECT_TRUE(same_bits(whole.params.data() + at, pieces[p].params.data(), n)) << "piece " << p;
    EXPECT_TRUE(same_bits(whole.m_codes.data() + at, pieces[p].m_codes.data(), n)) << "piece " << p;
    EXPECT_TRUE(same_bits(whole.v_codes.data() + at, pieces[p].v_codes.data(), n)) << "piece " << p;
    EXPECT_TRUE(same_bits(whole.m_scales.data() + scale, pieces[p].m_scales.data(), pieces[p].m_scales.size()));
    EXPECT_TRUE(same_bits(whole.v_scales.data() + scale, pieces[p].v_scales.data(), pieces[p].v_scales.size()));
    scale += pieces[p].m_scales.size();
  }
  EXPECT_EQ(scale, whole.m_scales.size());
  EXPECT_EQ(whole.m_scales.size(), 3u * 3u);  // 3 bands x 3 tiles
}

// A 1,024-element run of a 64-wide matrix would be 16 whole rows: one large
// gradient would set the scale of all 64 columns. A 32 x 32 tile keeps it to
// its own 32 columns.
TEST(Adam8bitTiles, ATileScaleSeesOnlyItsColumns) {
  const int64_t rows = 32, cols = 64;
  TiledState state({32, 32, cols, 0}, std::vector<float>(rows * cols, 0.0f));
  std::vector<float> g(rows * cols, 1e-3f);
  g[5] = 10.0f;  // row 0, column 5: the left tile
  state.step(g, 1);
  ASSERT_EQ(state.m_scales.size(), 2u);
  EXPECT_GT(state.m_scales[0], 100.0f * state.m_scales[1]);
  // The right tile is as if the large value were not there.
  TiledState calm({32, 32, cols, 0}, std::vector<float>(rows * cols, 0.0f));
  calm.step(std::vector<float>(rows * cols, 1e-3f), 1);
  EXPECT_EQ(state.m_scales[1], calm.m_scales[1]);
  EXPECT_EQ(state.v_scales[1], calm.v_scales[1]);
}

TEST(Adam8bitTiles, BandsRestartAtEveryMatrixOfAFusedTensor) {
  // Two 40 x 8 matrices in 32 x 8 tiles: bands of 32 and 8 rows in each.
  const int64_t cols = 8, matrix_rows = 40;
  const Adam8bitTiles fused{32, 8, cols, matrix_rows};
  TiledState both(fused, random_values(2 * matrix_rows * cols, 7, 0.1f));
  TiledState second(fused, std::vector<float>(both.params.begin() + matrix_rows * cols, both.params.end()));
  ASSERT_EQ(both.m_scales.size(), 4u);
  for (int64_t t = 1; t <= 3; ++t) {
    const std::vector<float> g = random_values(both.params.size(), 50 + static_cast<uint32_t>(t), 1.0f);
    both.step(g, t);
    second.step(std::span<const float>(g).subspan(static_cast<size_t>(matrix_rows * cols)), t);
  }
  EXPECT_TRUE(same_bits(both.params.data() + matrix_rows * cols, second.params.data(), second.params.size()));
  EXPECT_TRUE(same_bits(both.m_scales.data() + 2, second.m_scales.data(), 2));
}

// A span that starts inside a matrix of a fused tensor (on a tile row) bands
// by the tensor's matrices, not from its own first row: rows 32..79 of two
// 40-row matrices in 32-row tiles are the bands 32..39, 40..71 and 72..79.
TEST(Adam8bitTiles, ASpanStartingInsideAMatrixBandsByTheTensorsMatrices) {
  const int64_t cols = 8, matrix_rows = 40;
  const Adam8bitTiles whole_tiles{32, 8, cols, matrix_rows, 0};
  TiledState whole(whole_tiles, random_values(2 * matrix_rows * cols, 11, 0.1f));
  const int64_t first = 32;
  TiledState piece({32, 8, cols, matrix_rows, first},
                   std::vector<float>(whole.params.begin() + first * cols, whole.params.end()));
  const std::vector<Adam8bitBlock> blocks = adam8bit_blocks(static_cast<int64_t>(piece.params.size()), piece.tiles);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].rows, 8);
  EXPECT_EQ(blocks[1].rows, 32);
  EXPECT_EQ(blocks[2].rows, 8);
  for (int64_t t = 1; t <= 3; ++t) {
    const std::vector<float> g = random_values(whole.params.size(), 60 + static_cast<uint32_t>(t), 1.0f);
    whole.step(g, t);
    piece.step(std::span<const float>(g).subspan(static_cast<size_t>(first * cols)), t);
  }
  EXPECT_TRUE(same_bits(whole.params.data() + first * cols, piece.params.data(), piece.params.size()));
  EXPECT_TRUE(same_bits(whole.m_scales.data() + 1, piece.m_scales.data(), piece.m_scales.size()));
}

}  // namespace
}  // namespace ragged::backend
