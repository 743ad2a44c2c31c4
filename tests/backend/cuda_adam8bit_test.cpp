// Block-wise 8-bit Adam on the GPU (backend/cuda/adam8bit_*.hpp). Without a
// GPU: the tile table of real shards (tiny Llama, tiny MoE with fused expert
// tensors, 1 to 4 ranks, square and ragged tile shapes) holds the host's
// blocks in the host's order, and stepping tile by tile through the table
// reproduces the host optimizer bit for bit. With a GPU: the device state and
// kernel step those shards as the host does, bit for bit (parameters, codes,
// scales).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backend/cuda/adam8bit_layout.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/cuda/device_units.hpp"
#include "tests/backend/cuda_test_device.hpp"
#include "backend/host_optimizer.hpp"
#include "backend/optimizer_math.hpp"
#include "backend/run_support.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"

namespace ragged::backend::gpu {
namespace {

struct Case {
  std::string scenario;
  int ranks;
  int block_rows, block_cols;
  bool fused_experts;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"tiny-llama-4xcpu", 1, 32, 32, false}, {"tiny-llama-4xcpu", 3, 32, 32, false},
      {"tiny-llama-4xcpu", 4, 32, 32, false}, {"tiny-llama-4xcpu", 3, 24, 20, false},
      {"tiny-moe-4xcpu", 3, 32, 32, true},    {"tiny-moe-4xcpu", 4, 24, 20, true},
  };
  return all;
}

std::string name_of(const Case& c) {
  return c.scenario + (c.fused_experts ? " (fused experts)" : "") + " at " + std::to_string(c.ranks) + " ranks, " +
         std::to_string(c.block_rows) + "x" + std::to_string(c.block_cols) + " tiles";
}

// The case's scenario with 8-bit Adam in its tiles (and their granularity), ragged layout.
planner::ResolvedScenario resolve(const Case& c) {
  scenarios::LoadedScenario loaded = scenarios::with_total_gpus(scenarios::load_scenario(c.scenario), c.ranks);
  scenarios::Training* training = loaded.written.mutable_training();
  training->set_strategy(scenarios::RAGGED);
  scenarios::Adam8bit* adam = training->mutable_optimizer()->mutable_adam8bit();
  adam->set_block_rows(c.block_rows);
  adam->set_block_cols(c.block_cols);
  training->mutable_granularity()->clear_default_spec();
  training->mutable_granularity()->set_partial_blocks(true);  // 24 x 20 tiles leave short ones at the edges
  if (c.fused_experts) loaded.written.mutable_model()->mutable_inline_spec()->set_experts_fused(true);
  return planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
}

struct Shards {
  planner::ResolvedScenario resolved;
  std::vector<UnitShard> shards;
  const scenarios::Optimizer& optimizer() const { return resolved.scenario().training().optimizer(); }
};

Shards shards_of(const Case& c, int rank) {
  Shards out{resolve(c), {}};
  const planner::Plan plan = plan_for_run(out.resolved, models::DType::kF32);
  out.shards = make_shards(out.resolved.model, plan, rank, 11);
  return out;
}

bool is_8bit(const UnitShard& s, const scenarios::Optimizer& o, const planner::ShardView& view) {
  return tensor_rule(o, s.spec().tensors[static_cast<size_t>(view.tensor)]) == TensorRule::kAdam8bit;
}

// The shard offsets of each block of a view, block after block: the loop of
// for_each_block (backend/optimizer_adam8bit.cpp), element by element.
// The tiles of a span, worked out from each row's place in the tensor: rows
// belong to the same band when they share their matrix and their tile row in
// it.
std::vector<std::vector<int64_t>> reference_blocks(int64_t shard_offset, int64_t numel, const Adam8bitTiles& t) {
  std::vector<std::vector<int64_t>> blocks;
  const int64_t span_rows = numel / t.row_length;
  const int64_t matrix_rows = t.matrix_rows > 0 ? t.matrix_rows : t.first_row + span_rows;
  auto band_of = [&](int64_t row) {
    const int64_t r = t.first_row + row;
    return std::pair{r / matrix_rows, r % matrix_rows / t.rows};
  };
  for (int64_t band = 0; band < span_rows;) {
    int64_t band_end = band + 1;
    while (band_end < span_rows && band_of(band_end) == band_of(band)) ++band_end;
    for (int64_t col = 0; col < t.row_length; col += t.cols) {
      blocks.emplace_back();
      for (int64_t row = band; row < band_end; ++row) {
        for (int64_t c = col; c < std::min(t.row_length, col + t.cols); ++c) {
          blocks.back().push_back(shard_offset + row * t.row_length + c);
        }
      }
    }
    band = band_end;
  }
  return blocks;
}

std::vector<int64_t> elements_of(const Adam8bitTile& tile) {
  std::vector<int64_t> out;
  for (int64_t r = 0; r < tile.rows; ++r) {
    for (int64_t c = 0; c < tile.cols; ++c) out.push_back(tile.start + r * tile.row_stride + c);
  }
  return out;
}

// One shard's optimizer state as HostOptimizer keeps it: moments and codes
// by shard offset, the scales of consecutive 8-bit views one after another.
struct HostState {
  std::vector<float> m, v, m_scales, v_scales;
  std::vector<int8_t> m_codes;
  std::vector<uint8_t> v_codes;

  HostState(const UnitShard& s, const scenarios::Optimizer& o) {
    const auto n = static_cast<size_t>(s.shard_size());
    m.assign(n, 0.0f);
    v.assign(n, 0.0f);
    m_codes.assign(n, 0);
    v_codes.assign(n, 0);
    int64_t scales = 0;
    for (const planner::ShardView& view : s.views()) {
      if (is_8bit(s, o, view)) scales += adam8bit_num_blocks(view.elements, adam8bit_tiles(o, tensor(s, view), view.tensor_offset));
    }
    m_scales.assign(static_cast<size_t>(scales), 0.0f);
    v_scales = m_scales;
  }

  static const models::TensorSpec& tensor(const UnitShard& s, const planner::ShardView& view) {
    return s.spec().tensors[static_cast<size_t>(view.tensor)];
  }

  // HostOptimizer::update, view by view.
  void step_by_views(const UnitShard& s, const scenarios::Optimizer& o, std::span<float> params,
                     std::span<const float> grads, int64_t step) {
    const AdamWParams p = adamw_params(o);
    size_t scale = 0;
    for (const planner::ShardView& view : s.views()) {
      const auto at = static_cast<size_t>(view.shard_offset), n = static_cast<size_t>(view.elements);
      if (!is_8bit(s, o, view)) {
        adamw_step(params.subspan(at, n), grads.subspan(at, n), std::span(m).subspan(at, n),
                   std::span(v).subspan(at, n), step, p);
        continue;
      }
      const Adam8bitTiles tiles = adam8bit_tiles(o, tensor(s, view), view.tensor_offset);
      const auto blocks = static_cast<size_t>(adam8bit_num_blocks(view.elements, tiles));
      adam8bit_step(params.subspan(at, n), grads.subspan(at, n), std::span(m_codes).subspan(at, n),
                    std::span(m_scales).subspan(scale, blocks), std::span(v_codes).subspan(at, n),
                    std::span(v_scales).subspan(scale, blocks), tiles, step, p);
      scale += blocks;
    }
  }

  // The same step driven by the GPU's table: each tile gathered and stepped
  // as one flat block with scale k, the AdamW ranges as they are.
  void step_by_table(const Adam8bitLayout& layout, const scenarios::Optimizer& o, std::span<float> params,
                     std::span<const float> grads, int64_t step) {
    const AdamWParams p = adamw_params(o);
    for (const AdamWRange& r : layout.adamw) {
      const auto at = static_cast<size_t>(r.shard_offset), n = static_cast<size_t>(r.elements);
      adamw_step(params.subspan(at, n), grads.subspan(at, n), std::span(m).subspan(at, n),
                 std::span(v).subspan(at, n), step, p);
    }
    for (size_t k = 0; k < layout.tiles.size(); ++k) {
      const std::vector<int64_t> at = elements_of(layout.tiles[k]);
      std::vector<float> tp, tg;
      std::vector<int8_t> tm;
      std::vector<uint8_t> tv;
      for (int64_t i : at) {
        tp.push_back(params[static_cast<size_t>(i)]);
        tg.push_back(grads[static_cast<size_t>(i)]);
        tm.push_back(m_codes[static_cast<size_t>(i)]);
        tv.push_back(v_codes[static_cast<size_t>(i)]);
      }
      const Adam8bitTiles one_block{1, static_cast<int64_t>(at.size()), 0, 0};
      adam8bit_step(tp, tg, tm, std::span(m_scales).subspan(k, 1), tv, std::span(v_scales).subspan(k, 1), one_block,
                    step, p);
      for (size_t j = 0; j < at.size(); ++j) {
        params[static_cast<size_t>(at[j])] = tp[j];
        m_codes[static_cast<size_t>(at[j])] = tm[j];
        v_codes[static_cast<size_t>(at[j])] = tv[j];
      }
    }
  }
};

// Gradients of mixed magnitudes, some zero (v's floor) and some large (clamping).
std::vector<float> random_grads(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1e-2f);
  std::uniform_int_distribution<int> pick(0, 19);
  std::vector<float> g(n);
  for (float& x : g) {
    const int kind = pick(rng);
    x = kind == 0 ? 0.0f : kind == 1 ? 30.0f * normal(rng) : normal(rng);
  }
  return g;
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

TEST(Adam8bitLayout, TilesAreTheHostsBlocksInTheHostsOrder) {
  int mid_tensor_pieces = 0, fused_pieces = 0;
  for (const Case& c : cases()) {
    for (int rank = 0; rank < c.ranks; ++rank) {
      const Shards setup = shards_of(c, rank);
      const scenarios::Optimizer& o = setup.optimizer();
      for (const UnitShard& s : setup.shards) {
        const Adam8bitLayout layout = adam8bit_layout(s, o);
        std::vector<std::vector<int64_t>> expected;
        std::vector<AdamWRange> expected_adamw;
        int64_t packed = 0;
        std::vector<int> covered(static_cast<size_t>(s.shard_size()), 0);
        for (const planner::ShardView& view : s.views()) {
          const models::TensorSpec& t = HostState::tensor(s, view);
          if (!is_8bit(s, o, view)) {
            expected_adamw.push_back({view.shard_offset, packed, view.elements});
            packed += view.elements;
            continue;
          }
          mid_tensor_pieces += view.tensor_offset > 0;
          fused_pieces += t.matrices() > 1;
          const Adam8bitTiles tiles = adam8bit_tiles(o, t, view.tensor_offset);
          const auto blocks = reference_blocks(view.shard_offset, view.elements, tiles);
          EXPECT_EQ(static_cast<int64_t>(blocks.size()), adam8bit_num_blocks(view.elements, tiles)) << t.name;
          expected.insert(expected.end(), blocks.begin(), blocks.end());
        }
        const std::string where = name_of(c) + ", rank " + std::to_string(rank) + ", " + s.spec().name;
        ASSERT_EQ(layout.tiles.size(), expected.size()) << where;
        for (size_t k = 0; k < expected.size(); ++k) {
          const std::vector<int64_t> got = elements_of(layout.tiles[k]);
          EXPECT_EQ(got, expected[k]) << where << ", tile " << k;
          for (int64_t i : got) ++covered[static_cast<size_t>(i)];
        }
        EXPECT_EQ(layout.adamw, expected_adamw) << where;
        EXPECT_EQ(layout.adamw_elements, packed) << where;
        for (const AdamWRange& r : layout.adamw) {
          for (int64_t i = 0; i < r.elements; ++i) ++covered[static_cast<size_t>(r.shard_offset + i)];
        }
        // Every element of a view exactly once; padding never.
        std::vector<int> in_views(covered.size(), 0);
        for (const planner::ShardView& view : s.views()) {
          for (int64_t i = 0; i < view.elements; ++i) in_views[static_cast<size_t>(view.shard_offset + i)] = 1;
        }
        EXPECT_EQ(covered, in_views) << where;
      }
    }
  }
  EXPECT_GT(mid_tensor_pieces, 0);  // some shard pieces start inside their matrix
  EXPECT_GT(fused_pieces, 0);       // and some are fused-expert tensors
}

// The table's tiles, each stepped alone with its own scale index, compute
// what the host optimizer computes view by view, and HostOptimizer agrees.
TEST(Adam8bitLayout, SteppingTheTableIsTheHostOptimizer) {
  std::mt19937_64 rng(5);
  for (const Case& c : cases()) {
    const int rank = c.ranks / 2;
    Shards setup = shards_of(c, rank);
    const scenarios::Optimizer& o = setup.optimizer();
    HostOptimizer host(o, &setup.shards, {}, nullptr);
    for (size_t u = 0; u < setup.shards.size(); ++u) {
      UnitShard& s = setup.shards[u];
      const Adam8bitLayout layout = adam8bit_layout(s, o);
      HostState by_views(s, o), by_table(s, o);
      std::vector<float> params_views = s.master(), params_table = s.master();
      for (int64_t step = 1; step <= 3; ++step) {
        s.grad() = random_grads(static_cast<size_t>(s.shard_size()), rng);
        by_views.step_by_views(s, o, params_views, s.grad(), step);
        by_table.step_by_table(layout, o, params_table, s.grad(), step);
        host.update(static_cast<int>(u), step);
      }
      const std::string where = name_of(c) + ", " + s.spec().name;
      EXPECT_TRUE(same_bits(params_table, params_views)) << where;
      EXPECT_TRUE(same_bits(s.master(), params_views)) << where;
      EXPECT_TRUE(same_bits(by_table.m_codes, by_views.m_codes)) << where;
      EXPECT_TRUE(same_bits(by_table.v_codes, by_views.v_codes)) << where;
      EXPECT_TRUE(same_bits(by_table.m_scales, by_views.m_scales)) << where;
      EXPECT_TRUE(same_bits(by_table.v_scales, by_views.v_scales)) << where;
    }
  }
}

using CudaAdam8bitTest = test::CudaDeviceTest;

TEST_F(CudaAdam8bitTest, StepsMatchTheHostBitForBit) {
  std::mt19937_64 rng(17);
  for (const Case& c : cases()) {
    const int rank = c.ranks - 1;
    Shards setup = shards_of(c, rank);
    const scenarios::Optimizer& o = setup.optimizer();
    const AdamWParams p = adamw_params(o);
    device_->arena().reset();
    ASSERT_LE(device_units_bytes(setup.shards, o), 200 << 20);
    std::vector<DeviceUnit> units = make_device_units(setup.shards, o, device_->arena(), stream_);
    for (size_t u = 0; u < units.size(); ++u) {
      const UnitShard& s = setup.shards[u];
      const DeviceUnit& d = units[u];
      ASSERT_TRUE(d.adam8bit);
      HostState host(s, o);
      std::vector<float> params = s.master();
      for (int64_t step = 1; step <= 4; ++step) {
        const std::vector<float> grads = random_grads(params.size(), rng);
        CUDA_CHECK(cudaMemcpyAsync(d.grad, grads.data(), grads.size() * sizeof(float), cudaMemcpyHostToDevice,
                                   stream_));
        adam8bit_update(d, step, p, stream_);
        host.step_by_views(s, o, params, grads, step);
      }
      const Adam8bitState& st = d.adam8bit_state;
      const std::string where = name_of(c) + ", rank " + std::to_string(rank) + ", " + s.spec().name;
      EXPECT_TRUE(same_bits(to_host(d.master, s.shard_size()), params)) << where;
      EXPECT_TRUE(same_bits(to_host(st.m_codes, s.shard_size()), host.m_codes)) << where;
      EXPECT_TRUE(same_bits(to_host(st.v_codes, s.shard_size()), host.v_codes)) << where;
      EXPECT_TRUE(same_bits(to_host(st.m_scales, d.tile_count), host.m_scales)) << where;
      EXPECT_TRUE(same_bits(to_host(st.v_scales, d.tile_count), host.v_scales)) << where;
    }
  }
}

}  // namespace
}  // namespace ragged::backend::gpu
