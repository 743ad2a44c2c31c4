// The cut of a model into pipeline chunks: consecutive blocks, the
// embedding on the first and the head on the last, a block's routed experts
// with it, the balanced cut's costliest chunk no costlier than any other cut
// of the same blocks into the same number of chunks tried here.

#include <algorithm>
#include <cstdio>
#include <numeric>

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "models/catalog.hpp"
#include "planner/pipeline_stages.hpp"

namespace ragged::planner {
namespace {

double chunk_cost(const models::ModelSpec& model, const std::vector<int>& units) {
  double cost = 0;
  for (int u : units) {
    const models::UnitCompute& c = model.units[static_cast<size_t>(u)].compute;
    cost += c.forward_flops_per_token(8192) + c.backward_flops_per_token(8192);
  }
  return cost;
}

TEST(PipelineStages, BalancedCutCountsTheEmbeddingAndTheHead) {
  const models::ModelSpec model = models::catalog_model("llama3-8b");
  const PipelineStages stages = plan_pipeline_stages(model, 4, 1, {}, 8192);
  const std::vector<int64_t> blocks = stages.blocks_per_chunk(model);
  std::printf("llama3-8b on 4 stages: %lld, %lld, %lld, %lld blocks\n", static_cast<long long>(blocks[0]),
              static_cast<long long>(blocks[1]), static_cast<long long>(blocks[2]), static_cast<long long>(blocks[3]));
  EXPECT_EQ(std::accumulate(blocks.begin(), blocks.end(), int64_t{0}), 32);
  EXPECT_EQ(stages.chunks.front().front(), 0);                                  // the embedding
  EXPECT_EQ(stages.chunks.back().back(), static_cast<int>(model.units.size()) - 1);  // the head
  EXPECT_LT(blocks.back(), blocks.front()) << "the head's vocabulary-wide GEMM weighs on the last stage";
  // No cut moving one block between neighbours lowers the costliest chunk.
  double worst = 0;
  for (const auto& chunk : stages.chunks) worst = std::max(worst, chunk_cost(model, chunk));
  for (size_t c = 0; c + 1 < blocks.size(); ++c) {
    for (int shift : {-1, 1}) {
      std::vector<int64_t> other = blocks;
      other[c] += shift;
      other[c + 1] -= shift;
      if (other[c] < 1 || other[c + 1] < 1) continue;
      const PipelineStages moved = plan_pipeline_stages(model, 4, 1, other, 8192);
      double moved_worst = 0;
      for (const auto& chunk : moved.chunks) moved_worst = std::max(moved_worst, chunk_cost(model, chunk));
      EXPECT_GE(moved_worst, worst * (1 - 1e-12));
    }
  }
}

TEST(PipelineStages, InterleavedStagesRunEveryPpthChunk) {
  const models::ModelSpec model = models::catalog_model("llama3-8b");
  const PipelineStages stages = plan_pipeline_stages(model, 4, 2, {}, 8192);
  EXPECT_EQ(stages.chunks.size(), 8u);
  EXPECT_EQ(stages.chunks_of(1), (std::vector<int>{1, 5}));
  size_t units = 0;
  for (int s = 0; s < 4; ++s) units += stages.units_of(s).size();
  EXPECT_EQ(units, model.units.size());
}

TEST(PipelineStages, ExplicitSplitAndItsErrors) {
  const models::ModelSpec model = models::catalog_model("llama3-8b");
  const PipelineStages stages = plan_pipeline_stages(model, 2, 1, {20, 12}, 8192);
  EXPECT_EQ(stages.blocks_per_chunk(model), (std::vector<int64_t>{20, 12}));
  try {
    plan_pipeline_stages(model, 2, 1, {20, 10}, 8192);
    ADD_FAILURE() << "a split of 30 blocks for a 32-block model";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.path(), "training.pipeline.layers_per_stage");
    EXPECT_NE(std::string(e.what()).find("sums to 32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(plan_pipeline_stages(model, 16, 4, {}, 8192), FieldError);  // 64 chunks for 32 blocks
}

// Llama 3's 405B split, balanced: 126 blocks in 16 x 8 chunks leave the
// embedding and the head a chunk each; one chunk more than blocks, the head.
TEST(PipelineStages, ChunksBeyondTheBlocksHoldTheHeadThenTheEmbeddingAlone) {
  const models::ModelSpec model = models::catalog_model("llama3.1-405b");
  const PipelineStages stages = plan_pipeline_stages(model, 16, 8, {}, 8192);
  std::vector<int64_t> expected(128, 1);
  expected.front() = expected.back() = 0;
  EXPECT_EQ(stages.blocks_per_chunk(model), expected);
  ASSERT_EQ(stages.chunks.front().size(), 1u);
  EXPECT_EQ(model.units[static_cast<size_t>(stages.chunks.front()[0])].kind, models::UnitKind::kEmbedding);
  ASSERT_EQ(stages.chunks.back().size(), 1u);
  EXPECT_EQ(model.units[static_cast<size_t>(stages.chunks.back()[0])].kind, models::UnitKind::kHead);

  const models::ModelSpec small = models::catalog_model("llama3-8b");  // 32 blocks
  const std::vector<int64_t> head_alone = plan_pipeline_stages(small, 11, 3, {}, 8192).blocks_per_chunk(small);
  EXPECT_EQ(head_alone.back(), 0);
  EXPECT_EQ(head_alone.front(), 1);
  EXPECT_EQ(std::count(head_alone.begin(), head_alone.end(), 1), 32);
  EXPECT_THROW(plan_pipeline_stages(small, 5, 7, {}, 8192), FieldError);  // 35 chunks: 32 blocks, the embedding and the head make 34
}

TEST(PipelineStages, RoutedExpertsStayWithTheirBlock) {
  const models::ModelSpec whole = models::catalog_model("mixtral-8x7b");
  const models::ModelSpec model = models::build_model(whole.arch, whole.kernels, models::ModelSplit{1, 8, true});
  const PipelineStages stages = plan_pipeline_stages(model, 4, 1, {}, 4096);
  for (const auto& chunk : stages.chunks) {
    EXPECT_NE(model.units[static_cast<size_t>(chunk.front())].kind, models::UnitKind::kExperts);
    EXPECT_NE(model.units[static_cast<size_t>(chunk.back())].kind, models::UnitKind::kBlock)
        << "a chunk ends with its last block's experts (or the head)";
  }
}

}  // namespace
}  // namespace ragged::planner
