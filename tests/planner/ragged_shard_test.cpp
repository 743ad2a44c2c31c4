#include "planner/ragged_shard.hpp"

#include <functional>

#include <gtest/gtest.h>

#include "common/errors.hpp"

namespace ragged::planner {
namespace {

using Shape = std::vector<int64_t>;
using Interval = std::pair<int64_t, int64_t>;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(RaggedShard, UnevenRowUnitsAndFlatIntervals) {
  // 10 x 3, two rows per unit: units 1, 0, 3, 1 of 6 elements.
  RaggedShard s({10, 3}, 1, {1, 0, 3, 1});
  EXPECT_EQ(s.world_size(), 4);
  EXPECT_EQ(s.numel(), 30);
  EXPECT_EQ(s.units_total(), 5);
  EXPECT_EQ(s.unit_elements(), 6);
  EXPECT_EQ(s.suffix_numel(), 3);
  EXPECT_EQ(s.flat_interval(0), (Interval{0, 6}));
  EXPECT_EQ(s.flat_interval(1), (Interval{6, 6}));
  EXPECT_EQ(s.flat_interval(2), (Interval{6, 24}));
  EXPECT_EQ(s.flat_interval(3), (Interval{24, 30}));
  EXPECT_EQ(s.local_numel(2), 18);
  EXPECT_EQ(s.local_shape(2), (Shape{6, 3}));
  EXPECT_EQ(s.local_shape(1), (Shape{0, 3}));
  EXPECT_FALSE(s.is_whole_on(2));
}

TEST(RaggedShard, ElementUnitsFlattenEveryDim) {
  RaggedShard s({4, 5}, 2, {7, 13});
  EXPECT_EQ(s.unit_elements(), 1);
  EXPECT_EQ(s.local_shape(0), (Shape{7}));
  EXPECT_EQ(s.local_shape(1), (Shape{13}));
  // Three dims, the first two flattened: rows of 6 elements.
  RaggedShard t({2, 3, 6}, 2, {5, 1});
  EXPECT_EQ(t.local_shape(0), (Shape{5, 6}));
  EXPECT_EQ(t.local_shape(1), (Shape{1, 6}));
}

TEST(RaggedShard, WholeOnOneRank) {
  RaggedShard s = RaggedShard::whole_on(2, 4, {8, 16});
  EXPECT_EQ(s.prefix_dims(), 0);
  EXPECT_TRUE(s.is_whole_on(2));
  EXPECT_FALSE(s.is_whole_on(0));
  EXPECT_EQ(s.local_shape(2), (Shape{8, 16}));
  EXPECT_EQ(s.local_shape(3), (Shape{0}));
  EXPECT_EQ(s.flat_interval(3), (Interval{128, 128}));
  EXPECT_EQ(s, RaggedShard({8, 16}, 0, {0, 0, 1, 0}));
  EXPECT_NE(s, RaggedShard::whole_on(1, 4, {8, 16}));
  // The same placement in element units is equal as a placement, not as a value.
  RaggedShard elements({8, 16}, 2, {0, 0, 128, 0});
  EXPECT_NE(s, elements);
  EXPECT_TRUE(same_placement(s, elements));
  EXPECT_THROW(RaggedShard::whole_on(4, 4, {8}), InputError);
  EXPECT_THROW(RaggedShard::whole_on(-1, 4, {8}), InputError);
}

TEST(RaggedShard, RejectsBadInputWithClearMessages) {
  EXPECT_EQ(message_of([] {
              RaggedShard({10, 3}, 1, {3, 4});
            }),
            "RaggedShard: local_units sum 7 does not divide numel 30");
  EXPECT_NE(message_of([] {
              RaggedShard({10, 3}, 1, {30, 0});
            }).find("not a whole number of the 3-element slices"),
            std::string::npos);
  EXPECT_THROW(RaggedShard({10, 3}, 0, {0, 2}), InputError);  // dims=() needs one unit: the whole tensor
  EXPECT_THROW(RaggedShard({10, 3}, 3, {1}), InputError);
  EXPECT_THROW(RaggedShard({10, 3}, -1, {1}), InputError);
  EXPECT_THROW(RaggedShard({10, 3}, 1, {}), InputError);
  EXPECT_THROW(RaggedShard({10, 3}, 1, {0, 0}), InputError);
  EXPECT_THROW(RaggedShard({10, 3}, 1, {-1, 11}), InputError);
  EXPECT_THROW(RaggedShard({10, 0}, 1, {1}), InputError);
  EXPECT_THROW(RaggedShard({-2, 3}, 1, {1}), InputError);
  EXPECT_THROW(RaggedShard({int64_t{1} << 40, int64_t{1} << 40}, 1, {1}), InputError);
}

TEST(RaggedShard, ScalarIsOneElementOnOneRank) {
  RaggedShard s({}, 0, {0, 1});
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.local_shape(1), Shape{});
  EXPECT_TRUE(s.is_whole_on(1));
}

TEST(ShardFromContiguous, RowGranulesGiveRowUnits) {
  // 12 x 4 at offset 8 in 4 shards of 16: pieces 8 | 16 | 16 | 8 elements, rows of 4.
  RaggedShard s = shard_from_contiguous({12, 4}, 8, 8, 16, 4);
  EXPECT_EQ(s.prefix_dims(), 1);
  EXPECT_EQ(s.unit_elements(), 8);
  EXPECT_EQ(s.all_local_units(), (Shape{1, 2, 2, 1}));
  EXPECT_EQ(s.local_shape(1), (Shape{4, 4}));
}

TEST(ShardFromContiguous, ElementCutsGiveElementUnits) {
  // FSDP1-like: 5 x 4 at offset 3, S = 8: pieces 5 | 8 | 7.
  RaggedShard s = shard_from_contiguous({5, 4}, 1, 3, 8, 4);
  EXPECT_EQ(s.prefix_dims(), 2);
  EXPECT_EQ(s.unit_elements(), 1);
  EXPECT_EQ(s.all_local_units(), (Shape{5, 8, 7, 0}));
}

TEST(ShardFromContiguous, WholeMatrixOnOneRankIsDimsEmpty) {
  RaggedShard s = shard_from_contiguous({6, 4}, 24, 40, 32, 3);
  EXPECT_EQ(s.prefix_dims(), 0);
  EXPECT_TRUE(s.is_whole_on(1));
  EXPECT_EQ(s, RaggedShard::whole_on(1, 3, {6, 4}));
}

TEST(ShardFromContiguous, PartialLastGranule) {
  // 10 elements, granule 4, cut at 8: pieces 8 | 2, unit 2.
  RaggedShard s = shard_from_contiguous({10}, 4, 0, 8, 2);
  EXPECT_EQ(s.unit_elements(), 2);
  EXPECT_EQ(s.all_local_units(), (Shape{4, 1}));
}

TEST(ShardFromContiguous, ThreeDimsPicksTheFewestPrefixDims) {
  // 4 x 3 x 2 cut every 6 elements: units of one dim-0 slice.
  EXPECT_EQ(shard_from_contiguous({4, 3, 2}, 6, 0, 6, 4).prefix_dims(), 1);
  // Cut every 2 elements: units of one dim-1 row of the flattened (12, 2).
  RaggedShard s = shard_from_contiguous({4, 3, 2}, 2, 0, 10, 3);
  EXPECT_EQ(s.prefix_dims(), 2);
  EXPECT_EQ(s.local_shape(0), (Shape{5, 2}));
  EXPECT_EQ(s.local_shape(2), (Shape{2, 2}));
}

TEST(ShardFromContiguous, ManyRanksIsLinear) {
  // A 128256 x 4096 embedding over 16,384 ranks with row-granular cuts.
  const int64_t rows = 128256, cols = 4096, ranks = 16384;
  const int64_t shard = (rows + ranks - 1) / ranks * cols;
  RaggedShard s = shard_from_contiguous({rows, cols}, cols, 0, shard, ranks);
  EXPECT_EQ(s.world_size(), ranks);
  EXPECT_EQ(s.prefix_dims(), 1);
  EXPECT_EQ(s.units_total() * s.unit_elements(), rows * cols);
  EXPECT_EQ(s.local_numel(0), shard);
  EXPECT_EQ(s.local_numel(ranks - 1), 0);
}

TEST(ShardFromContiguous, RejectsTensorsOutsideTheBuffer) {
  EXPECT_THROW(shard_from_contiguous({10}, 1, 25, 8, 4), InputError);
  EXPECT_THROW(shard_from_contiguous({10}, 1, -1, 8, 4), InputError);
  EXPECT_THROW(shard_from_contiguous({10}, 0, 0, 8, 4), InputError);
  EXPECT_THROW(shard_from_contiguous({10}, 1, 0, 0, 4), InputError);
  EXPECT_THROW(shard_from_contiguous({10}, 1, 0, 16, 0), InputError);
}

TEST(ShardFromRankMajor, TorchChunkRows) {
  // torch.chunk(10 rows, 4) = 3, 3, 3, 1.
  RaggedShard s = shard_from_rank_major({10, 5}, ChunkRule::kDim0Rows, 4);
  EXPECT_EQ(s.all_local_units(), (Shape{3, 3, 3, 1}));
  EXPECT_EQ(s.unit_elements(), 5);
  // torch.chunk(5 rows, 4) = 2, 2, 1, and the last rank is empty.
  EXPECT_EQ(shard_from_rank_major({5, 5}, ChunkRule::kDim0Rows, 4).all_local_units(), (Shape{2, 2, 1, 0}));
  EXPECT_EQ(shard_from_rank_major({2}, ChunkRule::kDim0Rows, 4).all_local_units(), (Shape{1, 1, 0, 0}));
  EXPECT_THROW(shard_from_rank_major({}, ChunkRule::kDim0Rows, 4), InputError);
}

TEST(ShardFromRankMajor, Zero3Elements) {
  RaggedShard s = shard_from_rank_major({3, 3}, ChunkRule::kElements, 4);
  EXPECT_EQ(s.prefix_dims(), 2);
  EXPECT_EQ(s.all_local_units(), (Shape{3, 3, 3, 0}));
  EXPECT_EQ(shard_from_rank_major({10}, ChunkRule::kElements, 4).all_local_units(), (Shape{3, 3, 3, 1}));
  EXPECT_EQ(shard_from_rank_major({1}, ChunkRule::kElements, 3).all_local_units(), (Shape{1, 0, 0}));
}

}  // namespace
}  // namespace ragged::planner
