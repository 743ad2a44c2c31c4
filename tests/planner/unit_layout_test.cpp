// The per-tensor views of a unit's layout the Program builder allocates by.

#include <gtest/gtest.h>

#include "planner/unit_layout.hpp"

namespace ragged::planner {
namespace {

UnitLayout three_tensors(Placement placement) {
  UnitLayout l;
  l.ranks = 4;
  l.placement = placement;
  l.slots = {{0, 10, false}, {10, 3, true}, {13, 7, false}};
  return l;
}

// Rank-major: a tensor's chunk on each of the 4 ranks; contiguous: the tensor.
TEST(UnitLayout, PiecesAreOnePerTensorPaddedToItsChunks) {
  EXPECT_EQ(per_tensor_pieces(three_tensors(Placement::kRankMajor), 2, false), (std::vector<int64_t>{80, 24, 56}));
  EXPECT_EQ(per_tensor_pieces(three_tensors(Placement::kRankMajor), 2, true), (std::vector<int64_t>{80, 56}));
  EXPECT_EQ(per_tensor_pieces(three_tensors(Placement::kContiguous), 4, false), (std::vector<int64_t>{40, 12, 28}));
}

TEST(UnitLayout, PersistentTensorsAreNotGathered) {
  EXPECT_EQ(tensor_count(three_tensors(Placement::kRankMajor), false), 3);
  EXPECT_EQ(tensor_count(three_tensors(Placement::kRankMajor), true), 2);
}

}  // namespace
}  // namespace ragged::planner
