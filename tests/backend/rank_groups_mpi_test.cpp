// HSDP's communicators under mpirun (np 1 to 5): split_rank_groups for every
// shard size that divides the world, collectives inside the groups, and the
// ordered all-reduce that keeps HSDP runs bitwise comparable.

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backend/collective_check.hpp"
#include "backend/rank_groups.hpp"
#include "tests/backend/mpi_test_main.hpp"

namespace ragged::backend {
namespace {

Communicator& world() { return mpi_test_world(); }

TEST(RankGroups, ShardGroupsAreConsecutiveRanksAndReplicasTheSamePlace) {
  const int rank = world().rank();
  for (int shard = 1; shard <= world().size(); ++shard) {
    if (world().size() % shard != 0) continue;
    const RankGroups groups = split_rank_groups(world(), shard);
    EXPECT_EQ(groups.world, &world());
    EXPECT_EQ(groups.shard->size(), shard);
    EXPECT_EQ(groups.shard->rank(), rank % shard);
    EXPECT_EQ(groups.replicas->size(), world().size() / shard);
    EXPECT_EQ(groups.replicas->rank(), rank / shard);
    // Every group really is its own: an all-gather of world ranks shows who
    // is in it.
    std::vector<float> members(static_cast<size_t>(shard), -1.0f);
    members[static_cast<size_t>(groups.shard->rank())] = static_cast<float>(rank);
    groups.shard->all_gather_in_place(members.data(), 1);
    for (int i = 0; i < shard; ++i) EXPECT_EQ(members[static_cast<size_t>(i)], static_cast<float>(rank / shard * shard + i));
    EXPECT_EQ(self_test(*groups.shard, 257, 40 + static_cast<uint64_t>(shard)), 0) << "shard groups of " << shard;
    EXPECT_EQ(self_test(*groups.replicas, 257, 50 + static_cast<uint64_t>(shard)), 0) << "replicas of " << shard;
  }
}

TEST(RankGroups, DescribeNamesTheReplicas) {
  const RankGroups all = split_rank_groups(world(), world().size());
  EXPECT_EQ(describe(all, "mpi").find("HSDP"), std::string::npos);
  if (world().size() % 2 == 0) {
    const RankGroups halves = split_rank_groups(world(), world().size() / 2);
    EXPECT_NE(describe(halves, "mpi").find("HSDP: 2 replicas"), std::string::npos) << describe(halves, "mpi");
  }
}

// Values whose sum depends on the order they are added in: the ordered
// all-reduce must give 0 + x_0 + x_1 + ... bit for bit, on every rank.
TEST(RankGroups, OrderedAllReduceSumsInRankOrder) {
  world().set_ordered_reductions(true);
  const RankGroups groups = split_rank_groups(world(), 1);  // every rank its own shard: replicas = world
  world().set_ordered_reductions(false);
  Communicator& replicas = *groups.replicas;
  ASSERT_TRUE(replicas.ordered_reductions());
  auto value = [](int r, int i) { return (r % 2 == 0 ? 1.0f : -1.0f) * (1.0f + static_cast<float>(i) * 1e-7f) * (r == 0 ? 1e8f : 1.0f + 0.1f * static_cast<float>(r)); };
  const int count = 1001;
  std::vector<float> buffer(count);
  for (int i = 0; i < count; ++i) buffer[static_cast<size_t>(i)] = value(replicas.rank(), i);
  replicas.all_reduce_in_place(buffer.data(), count);
  int64_t wrong = 0;
  for (int i = 0; i < count; ++i) {
    float expected = 0.0f;
    for (int r = 0; r < replicas.size(); ++r) expected += value(r, i);
    wrong += std::memcmp(&expected, &buffer[static_cast<size_t>(i)], sizeof(float)) != 0 ? 1 : 0;
  }
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace ragged::backend
