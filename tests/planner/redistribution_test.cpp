#include "planner/redistribution.hpp"

#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "common/errors.hpp"

namespace ragged::planner {
namespace {

using Counts = std::vector<int64_t>;

// Moves the flat values 0..numel-1 from `from`'s local storages along the
// transfers; returns the destination local storages.
std::vector<std::vector<int64_t>> execute(const RaggedShard& from, const RaggedShard& to,
                                          const std::vector<Transfer>& transfers) {
  std::vector<std::vector<int64_t>> src(static_cast<size_t>(from.world_size())),
      dst(static_cast<size_t>(to.world_size()));
  for (int r = 0; r < from.world_size(); ++r) {
    src[r].resize(static_cast<size_t>(from.local_numel(r)));
    std::iota(src[r].begin(), src[r].end(), from.flat_interval(r).first);
    dst[r].assign(static_cast<size_t>(to.local_numel(r)), -1);
  }
  for (const Transfer& t : transfers) {
    for (int64_t i = 0; i < t.elements; ++i)
      dst[t.dst_rank].at(t.dst_offset + i) = src[t.src_rank].at(t.src_offset + i);
  }
  return dst;
}

void expect_delivers(const RaggedShard& from, const RaggedShard& to) {
  const auto transfers = redistribute(from, to);
  const auto dst = execute(from, to, transfers);
  for (int r = 0; r < to.world_size(); ++r) {
    for (size_t i = 0; i < dst[r].size(); ++i)
      ASSERT_EQ(dst[r][i], to.flat_interval(r).first + static_cast<int64_t>(i)) << "rank " << r;
  }
  // Each rank's sends (and receives) are consecutive slices in peer order:
  // the all-to-allv displacements are the prefix sums of the counts.
  for (int r = 0; r < from.world_size(); ++r) {
    int64_t next_send = 0, next_recv = 0;
    for (const Transfer& t : transfers) {
      ASSERT_GT(t.elements, 0);
      if (t.src_rank == r) {
        EXPECT_EQ(t.src_offset, next_send);
        next_send += t.elements;
      }
      if (t.dst_rank == r) {
        EXPECT_EQ(t.dst_offset, next_recv);
        next_recv += t.elements;
      }
    }
    EXPECT_EQ(next_send, from.local_numel(r));
    EXPECT_EQ(next_recv, to.local_numel(r));
  }
}

TEST(Redistribution, IntersectsSourceAndDestinationIntervals) {
  RaggedShard from({12}, 1, {4, 4, 4});
  RaggedShard to({12}, 1, {6, 0, 6});
  const std::vector<Transfer> expected = {{0, 0, 0, 0, 4}, {1, 0, 0, 4, 2}, {1, 2, 2, 0, 2}, {2, 2, 0, 2, 4}};
  EXPECT_EQ(redistribute(from, to), expected);
  EXPECT_EQ(send_counts(expected, 1, 3), (Counts{2, 0, 2}));
  EXPECT_EQ(recv_counts(expected, 2, 3), (Counts{0, 2, 4}));
  expect_delivers(from, to);
  expect_delivers(to, from);
}

TEST(Redistribution, MuonGatherToRootAndScatterBack) {
  // A 6 x 4 matrix in row units 2, 1, 0, 3 gathered to rank 2.
  RaggedShard shard({6, 4}, 1, {2, 1, 0, 3});
  RaggedShard root = RaggedShard::whole_on(2, 4, {6, 4});
  const auto gather = redistribute(shard, root);
  const std::vector<Transfer> expected = {{0, 2, 0, 0, 8}, {1, 2, 0, 8, 4}, {3, 2, 0, 12, 12}};
  EXPECT_EQ(gather, expected);
  RedistributionCost cost = redistribution_cost(gather, 4);
  EXPECT_EQ(cost.messages, 3);
  EXPECT_EQ(cost.total_elements, 24);
  EXPECT_EQ(cost.max_recv_elements, 24);
  EXPECT_EQ(cost.max_send_elements, 12);
  EXPECT_EQ(cost.local_elements, 0);

  const auto scatter = redistribute(root, shard);
  ASSERT_EQ(scatter.size(), 3u);
  for (size_t i = 0; i < scatter.size(); ++i) {
    EXPECT_EQ(scatter[i].src_rank, gather[i].dst_rank);
    EXPECT_EQ(scatter[i].dst_rank, gather[i].src_rank);
    EXPECT_EQ(scatter[i].src_offset, gather[i].dst_offset);
  }
  expect_delivers(root, shard);
}

TEST(Redistribution, RootThatHoldsAPieceCopiesItLocally) {
  RaggedShard shard({4, 3}, 1, {1, 1, 1, 1});
  const auto gather = redistribute(shard, RaggedShard::whole_on(1, 4, {4, 3}));
  RedistributionCost cost = redistribution_cost(gather, 4);
  EXPECT_EQ(cost.messages, 3);
  EXPECT_EQ(cost.local_elements, 3);
  EXPECT_EQ(cost.total_elements, 9);
  EXPECT_EQ(cost.max_send_elements, 3);
  EXPECT_EQ(cost.max_recv_elements, 9);
}

TEST(Redistribution, IdentityIsLocal) {
  RaggedShard shard({8, 2}, 1, {3, 0, 5});
  const auto transfers = redistribute(shard, shard);
  EXPECT_EQ(transfers.size(), 2u);
  EXPECT_EQ(redistribution_cost(transfers, 3).messages, 0);
  EXPECT_EQ(redistribution_cost(transfers, 3).local_elements, 16);
}

TEST(Redistribution, RandomPlacementsDeliverEveryElement) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int world = std::uniform_int_distribution<int>(1, 12)(rng);
    const int64_t rows = std::uniform_int_distribution<int64_t>(1, 40)(rng),
                  cols = std::uniform_int_distribution<int64_t>(1, 5)(rng);
    auto random_rows = [&] {
      std::vector<int64_t> units(static_cast<size_t>(world), 0);
      for (int64_t r = 0; r < rows; ++r) ++units[std::uniform_int_distribution<size_t>(0, world - 1)(rng)];
      return RaggedShard({rows, cols}, 1, units);
    };
    expect_delivers(random_rows(), random_rows());
    expect_delivers(random_rows(),
                    RaggedShard::whole_on(std::uniform_int_distribution<int>(0, world - 1)(rng), world, {rows, cols}));
    if (HasFatalFailure()) return;
  }
}

TEST(Redistribution, GatherOverSixteenThousandRanks) {
  const int world = 16384;
  std::vector<int64_t> units(world, 0);
  for (int r = 0; r < 1000; ++r) units[static_cast<size_t>(r) * 16] = 2;  // every 16th rank holds 2 rows
  RaggedShard shard({2000, 64}, 1, units);
  const auto transfers = redistribute(shard, RaggedShard::whole_on(world - 1, world, {2000, 64}));
  EXPECT_EQ(transfers.size(), 1000u);
  EXPECT_EQ(redistribution_cost(transfers, world).max_recv_elements, 2000 * 64);
}

TEST(Redistribution, RejectsMismatchedTensorsOrWorlds) {
  EXPECT_THROW(redistribute(RaggedShard({12}, 1, {6, 6}), RaggedShard({3, 4}, 1, {1, 2})), InputError);
  EXPECT_THROW(redistribute(RaggedShard({12}, 1, {6, 6}), RaggedShard({12}, 1, {4, 4, 4})), InputError);
}

}  // namespace
}  // namespace ragged::planner
