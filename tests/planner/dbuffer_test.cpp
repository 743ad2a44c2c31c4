#include "planner/dbuffer.hpp"

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "layout_test_util.hpp"
#include "planner/layout_strategy.hpp"

namespace ragged::planner {
namespace {

using layout_test::matrix;

UnitProblem problem_of(std::vector<PlanTensor> tensors, int64_t ranks) {
  UnitProblem p;
  p.tensors = std::move(tensors);
  p.ranks = ranks;
  return p;
}

UnitLayout layout_of(int64_t S, int64_t ranks, Placement placement, std::vector<TensorSlot> slots) {
  UnitLayout l;
  l.shard_size = S;
  l.ranks = ranks;
  l.placement = placement;
  l.slots = std::move(slots);
  return l;
}

TEST(DBuffer, ContiguousViewsAreWindowIntersections) {
  // [0,12) [12,17) [20,28) in 3 shards of 10.
  UnitProblem p = problem_of({matrix(3, 4), matrix(5, 1), matrix(2, 4)}, 3);
  DBufferMap map(p, layout_of(10, 3, Placement::kContiguous, {{0, 12}, {12, 5}, {20, 8}}));
  EXPECT_EQ(map.shard_views(0), (std::vector<ShardView>{{0, 0, 0, 10}}));
  EXPECT_EQ(map.shard_views(1), (std::vector<ShardView>{{0, 0, 10, 2}, {1, 2, 0, 5}}));
  EXPECT_EQ(map.shard_views(2), (std::vector<ShardView>{{2, 0, 0, 8}}));
  EXPECT_EQ(map.padding_in_shard(0), 0);
  EXPECT_EQ(map.padding_in_shard(1), 3);
  EXPECT_EQ(map.padding_in_shard(2), 2);
  EXPECT_EQ(map.unsharded_offset(2), 20);
  EXPECT_THROW(map.copy_out_pieces(0), InternalError);
  EXPECT_THROW(map.shard_views(3), InternalError);
}

TEST(DBuffer, Fsdp2ChunksOfRows) {
  // 5 x 4 and 3 x 2 over 2 ranks: chunks of 3 rows (12) and 2 rows (4), S = 16.
  UnitProblem p = problem_of({matrix(5, 4), matrix(3, 2)}, 2);
  UnitLayout l = layout_of(16, 2, Placement::kRankMajor, {{0, 12}, {12, 4}});
  l.chunk_rule = ChunkRule::kDim0Rows;
  DBufferMap map(p, l);
  EXPECT_EQ(map.shard_views(0), (std::vector<ShardView>{{0, 0, 0, 12}, {1, 12, 0, 4}}));
  EXPECT_EQ(map.shard_views(1), (std::vector<ShardView>{{0, 0, 12, 8}, {1, 12, 4, 2}}));
  EXPECT_EQ(map.padding_in_shard(1), 6);
  const auto pieces = map.copy_out_pieces(0);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].src_offset, 0);
  EXPECT_EQ(pieces[0].elements, 12);
  EXPECT_EQ(pieces[1].src_offset, 16);
  EXPECT_EQ(pieces[1].dst_offset, 12);
  EXPECT_EQ(pieces[1].elements, 8);
  EXPECT_EQ(map.copy_out_pieces(1)[1].src_offset, 16 + 12);
  EXPECT_THROW(map.unsharded_offset(0), InternalError);
}

TEST(DBuffer, Zero3TrailingRanksHoldLess) {
  // 5 elements over 4 ranks: 2, 2, 1, 0.
  UnitProblem p = problem_of({matrix(5, 1)}, 4);
  DBufferMap map(p, layout_of(2, 4, Placement::kRankMajor, {{0, 2}}));
  EXPECT_EQ(map.shard_views(2), (std::vector<ShardView>{{0, 0, 4, 1}}));
  EXPECT_TRUE(map.shard_views(3).empty());
  EXPECT_EQ(map.padding_in_shard(3), 2);
  const auto pieces = map.copy_out_pieces(0);
  EXPECT_EQ(pieces[3].elements, 0);
  EXPECT_EQ(pieces[2].dst_offset, 4);
}

// Every element of every tensor appears in exactly one view, across the ranks.
void expect_views_cover(const UnitProblem& p, const UnitLayout& l) {
  DBufferMap map(p, l);
  std::vector<std::vector<char>> seen(p.tensors.size());
  for (size_t t = 0; t < p.tensors.size(); ++t) seen[t].assign(static_cast<size_t>(p.tensors[t].elements), 0);
  for (int64_t r = 0; r < l.ranks; ++r) {
    int64_t shard_end = 0;
    for (const ShardView& v : map.shard_views(r)) {
      EXPECT_GE(v.shard_offset, shard_end);
      shard_end = v.shard_offset + v.elements;
      EXPECT_LE(shard_end, l.shard_size);
      for (int64_t i = 0; i < v.elements; ++i) ++seen[v.tensor].at(v.tensor_offset + i);
    }
  }
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    for (char c : seen[t]) ASSERT_EQ(c, 1) << "tensor " << t;
  }
}

TEST(DBuffer, ViewsOfEveryStrategyCoverEveryElementOnce) {
  UnitProblem p = problem_of({matrix(7, 16, 16), matrix(1, 16), matrix(13, 8, 8), matrix(3, 24, 24), matrix(1, 5)}, 5);
  p.collective_align = 4;
  p.tensor_align = 4;
  std::vector<std::unique_ptr<LayoutStrategy>> strategies;
  strategies.push_back(make_ragged_strategy());
  strategies.push_back(make_vescale_paper_strategy());
  strategies.push_back(make_fsdp1_strategy());
  strategies.push_back(make_fsdp2_strategy());
  strategies.push_back(make_zero3_strategy());
  strategies.push_back(make_megatron_strategy());
  for (const auto& strategy : strategies) {
    SCOPED_TRACE(std::string(strategy->name()));
    expect_views_cover(p, strategy->plan_unit(p));
  }
}

TEST(DBuffer, EmptyTensorsHaveNoViews) {
  UnitProblem p = problem_of({matrix(0, 4), matrix(2, 2)}, 2);
  DBufferMap map(p, layout_of(2, 2, Placement::kContiguous, {{0, 0}, {0, 4}}));
  EXPECT_EQ(map.shard_views(1), (std::vector<ShardView>{{1, 0, 2, 2}}));
}

TEST(DBuffer, RejectsOverlappingLayouts) {
  UnitProblem p = problem_of({matrix(4, 1), matrix(4, 1)}, 2);
  EXPECT_THROW(DBufferMap(p, layout_of(4, 2, Placement::kContiguous, {{0, 4}, {2, 4}})), InternalError);
  EXPECT_THROW(DBufferMap(p, layout_of(4, 2, Placement::kContiguous, {{0, 4}, {6, 4}})), InternalError);
  EXPECT_THROW(DBufferMap(p, layout_of(4, 2, Placement::kContiguous, {{0, 4}})), InternalError);
}

TEST(DBuffer, FusedGroupOpsAreOneLaunchOverTheShard) {
  const auto ops = fused_group_ops(layout_of(96, 4, Placement::kContiguous, {}));
  ASSERT_EQ(ops.size(), 4u);
  for (const GroupOp& op : ops) {
    EXPECT_EQ(op.elements, 96);
    EXPECT_EQ(op.launches, 1);
  }
  EXPECT_EQ(ops[0].kind, "zero");
  EXPECT_EQ(fused_group_ops(layout_of(0, 4, Placement::kContiguous, {})).front().launches, 0);
}

}  // namespace
}  // namespace ragged::planner
