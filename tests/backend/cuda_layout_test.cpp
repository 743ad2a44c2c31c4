// The GPU executor's host-side tables (backend/cuda/device_layout.hpp): the
// piece runs reproduce the DBuffer's copy-out and pack exactly, and the
// padding plus the tensors tile the gathered buffer. No GPU needed.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "backend/cuda/device_layout.hpp"
#include "backend/run_support.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"

namespace ragged::backend::gpu {
namespace {

planner::ResolvedScenario tiny_llama(scenarios::Strategy strategy, int ranks) {
  scenarios::LoadedScenario loaded = scenarios::with_total_gpus(scenarios::load_scenario("tiny-llama-4xcpu"), ranks);
  loaded.written.mutable_training()->set_strategy(strategy);
  return planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
}

void apply(const std::vector<PieceRun>& runs, const std::vector<float>& src, std::vector<float>& dst) {
  for (const PieceRun& r : runs) {
    std::copy_n(src.begin() + r.src_offset, r.elements, dst.begin() + r.dst_offset);
  }
}

TEST(DeviceLayout, PieceRunsAreTheDBuffersCopyOutAndPack) {
  for (int ranks : {3, 4}) {
    const planner::ResolvedScenario resolved = tiny_llama(scenarios::FSDP2, ranks);
    const planner::Plan plan = plan_for_run(resolved, models::DType::kF32);
    for (int rank = 0; rank < ranks; ++rank) {
      for (const UnitShard& shard : make_shards(resolved.model, plan, rank, 7)) {
        ASSERT_FALSE(shard.contiguous());
        std::vector<float> gathered(static_cast<size_t>(shard.shard_size() * shard.ranks()));
        std::iota(gathered.begin(), gathered.end(), 1.0f);
        std::vector<float> expected(static_cast<size_t>(shard.unsharded_elements()), -1.0f), got = expected;
        shard.copy_out(gathered.data(), expected.data());
        apply(copy_out_runs(shard), gathered, got);
        EXPECT_EQ(got, expected) << shard.spec().name << " at " << ranks << " ranks";

        std::vector<float> packed_expected(gathered.size(), 0.0f), packed(gathered.size(), 0.0f);
        shard.pack(expected.data(), packed_expected.data());
        apply(reversed(copy_out_runs(shard)), expected, packed);
        EXPECT_EQ(packed, packed_expected) << shard.spec().name;
      }
    }
  }
}

// Padding and the elements a layout uses partition the gathered buffer.
void expect_partition(const UnitShard& shard) {
  const int64_t total = shard.shard_size() * shard.ranks();
  std::vector<int> covered(static_cast<size_t>(total), 0);
  for (const auto& [begin, end] : gathered_padding(shard)) {
    ASSERT_LT(begin, end);
    for (int64_t i = begin; i < end; ++i) ++covered[static_cast<size_t>(i)];
  }
  if (shard.contiguous()) {
    const std::vector<int64_t> offsets = shard.tensor_offsets(false);
    for (size_t t = 0; t < offsets.size(); ++t) {
      for (int64_t i = 0; i < shard.spec().tensors[t].numel(); ++i) ++covered[static_cast<size_t>(offsets[t] + i)];
    }
  } else {
    for (const PieceRun& r : copy_out_runs(shard)) {
      for (int64_t i = 0; i < r.elements; ++i) ++covered[static_cast<size_t>(r.src_offset + i)];
    }
  }
  EXPECT_TRUE(std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; })) << shard.spec().name;
}

TEST(DeviceLayout, PaddingAndTensorsTileTheGatheredBuffer) {
  for (scenarios::Strategy strategy : {scenarios::RAGGED, scenarios::FSDP2, scenarios::FSDP1}) {
    for (int ranks : {1, 3, 4}) {
      const planner::ResolvedScenario resolved = tiny_llama(strategy, ranks);
      const planner::Plan plan = plan_for_run(resolved, models::DType::kBF16);
      for (const UnitShard& shard : make_shards(resolved.model, plan, ranks - 1, 7)) expect_partition(shard);
    }
  }
}

TEST(DeviceLayout, ContiguousLayoutsHaveNoPieces) {
  const planner::ResolvedScenario resolved = tiny_llama(scenarios::RAGGED, 4);
  const planner::Plan plan = plan_for_run(resolved, models::DType::kF32);
  for (const UnitShard& shard : make_shards(resolved.model, plan, 0, 7)) EXPECT_TRUE(copy_out_runs(shard).empty());
}

}  // namespace
}  // namespace ragged::backend::gpu
