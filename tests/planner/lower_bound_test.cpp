#include "planner/lower_bound.hpp"

#include <gtest/gtest.h>

#include "models/catalog.hpp"
#include "planner/placement.hpp"
#include "planner/plan.hpp"

namespace ragged::planner {
namespace {

UnitProblem problem(std::vector<PlanTensor> tensors, int64_t ranks, int64_t align = 1) {
  UnitProblem p;
  p.tensors = std::move(tensors);
  p.ranks = ranks;
  p.collective_align = align;
  p.tensor_align = align;
  return p;
}

PlanTensor t(int64_t elements, int64_t granule = 1) { return {elements, granule, 1, elements}; }

TEST(LowerBound, BalancedShareRoundedToAlignment) {
  EXPECT_EQ(lower_bound_shard_size(problem({t(100)}, 8)), 13);
  EXPECT_EQ(lower_bound_shard_size(problem({t(100)}, 8, 8)), 16);
}

TEST(LowerBound, GranuleMustFitInAShard) {
  // 4 ranks, balanced 25, but a tensor of granule 40 longer than a shard
  // cannot be cut: S >= 40.
  EXPECT_EQ(lower_bound_shard_size(problem({t(80, 40), t(20)}, 4)), 40);
  // A single-granule tensor must fit whole: S >= e.
  EXPECT_EQ(lower_bound_shard_size(problem({t(30, 30), t(10)}, 4)), 30);
}

TEST(LowerBound, WholeTensorsArePackedLikeBins) {
  // 2 ranks, three whole tensors of 10: two share a shard, S >= 20 although
  // the balanced share is 15.
  EXPECT_EQ(lower_bound_shard_size(problem({t(10, 10), t(10, 10), t(10, 10)}, 2)), 20);
  // Of the 5 largest on 2 ranks (j = 2), one shard holds 3, at least 9 + 9 + 8.
  EXPECT_EQ(lower_bound_shard_size(problem({t(9, 9), t(9, 9), t(9, 9), t(9, 9), t(8, 8), t(1)}, 2)), 26);
}

TEST(LowerBound, TensorsSpanningSeveralShardsForceGranuleMultiples) {
  // A 100-element tensor with granule 7 on 10 ranks: balanced 10, but at S < 50
  // it crosses two boundaries, so S must be a multiple of 7 (or large enough
  // for one crossing: S + 7*floor(S/7) >= 100).
  int64_t S = lower_bound_shard_size(problem({t(100, 7)}, 10));
  EXPECT_EQ(S, 14);
  EXPECT_TRUE(meets_tensor_conditions(problem({t(100, 7)}, 10), 14));
  EXPECT_FALSE(meets_tensor_conditions(problem({t(100, 7)}, 10), 13));
}

// The reference's worked example: Llama-3-70B, one layer per unit, 16-row
// granules, 1,024 ranks: S must be a multiple of lcm(131072, 458752) = 917504.
TEST(LowerBound, Llama70bSixteenRowsAt1024Ranks) {
  models::ModelSpec model = models::catalog_model("llama3-70b");
  GranularityPolicy policy;
  policy.default_spec = GranularitySpec::parse("rows:16");
  PlanOptions options;
  UnitProblem layer = unit_problem(model.units[1], policy, 1024, options);
  int64_t S = lower_bound_shard_size(layer);
  EXPECT_EQ(S % 917504, 0);
  double padding = static_cast<double>(S * 1024 - layer.total_elements()) / static_cast<double>(layer.total_elements());
  EXPECT_GT(padding, 0.098);
  EXPECT_LT(padding, 0.10);
}

TEST(Placement, EarliestStartRespectsGranuleAtBoundary) {
  // S = 10, tensor of 12 elements with granule 4: starting at 3 would cut at
  // offset 7; the earliest start with (10 - s) % 4 == 0 is s = 6.
  EXPECT_EQ(earliest_start(3, t(12, 4), 10, 1), 6);
  // Fits before the boundary: starts at the cursor.
  EXPECT_EQ(earliest_start(3, t(7, 4), 10, 1), 3);
  // Crossing two boundaries needs S % g == 0: S = 10, g = 4 never works for 25.
  EXPECT_EQ(earliest_start(0, t(25, 4), 10, 1), kNoStart);
  EXPECT_EQ(earliest_start(0, t(25, 5), 10, 1), 0);
  // Alignment: starts on multiples of 2.
  EXPECT_EQ(earliest_start(3, t(3), 10, 2), 4);
}

TEST(Placement, EarliestStartIsMonotoneInTheCursor) {
  for (int64_t g : {1, 3, 4, 7}) {
    for (int64_t e : {1, 5, 9, 13, 27}) {
      int64_t previous = 0;
      for (int64_t cursor = 0; cursor < 60; ++cursor) {
        int64_t s = earliest_start(cursor, t(e, g), 12, 1);
        if (s == kNoStart) break;
        EXPECT_GE(s, cursor);
        EXPECT_GE(s, previous) << "g=" << g << " e=" << e << " cursor=" << cursor;
        previous = s;
      }
    }
  }
}

TEST(Placement, GreedyInOrderPacksTightly) {
  UnitProblem p = problem({t(5), t(5), t(6)}, 2);
  std::vector<int> order = {0, 1, 2};
  std::vector<int64_t> offsets(3);
  EXPECT_EQ(place_in_order(p, order, 8, &offsets), 16);
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 5, 10}));
}

TEST(Placement, GapFillingPutsSmallTensorsInAlignmentGaps) {
  // S = 10; a 12-element tensor of granule 5 after a 6-element one must
  // start at 10 (it may cross 20 only on a granule), leaving the gap [6, 10)
  // that the 3-element filler takes.
  UnitProblem p = problem({t(6), t(12, 5), t(3)}, 3);
  std::vector<int> order = {0, 1, 2};
  std::vector<int64_t> offsets(3);
  EXPECT_EQ(place_in_order(p, order, 10, &offsets), 25);
  EXPECT_EQ(place_filling_gaps(p, order, 10, 5, &offsets), 22);
  EXPECT_EQ(offsets[2], 6);
  EXPECT_EQ(offsets[1], 10);
}

}  // namespace
}  // namespace ragged::planner
