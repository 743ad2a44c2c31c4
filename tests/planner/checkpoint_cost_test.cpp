// The checkpoint's bytes and times against hand-computed cases
// (docs/SIMULATOR.md section 9).

#include "planner/checkpoint_cost.hpp"

#include <gtest/gtest.h>

namespace ragged::planner {
namespace {

// 1,024 GPUs in 128 nodes of 8, no HSDP; 10 GB/s per node, 1 TB/s in all,
// 50 GB/s from a GPU to host memory.
ClusterShape cluster_1024() { return {1024, 8, 1024}; }

GoodputSettings storage(double node_gbytes_per_s) {
  GoodputSettings s;
  s.storage_bytes_per_s_per_node = node_gbytes_per_s * 1e9;
  s.storage_aggregate_bytes_per_s = 1e12;
  s.host_copy_bytes_per_s = 50e9;
  return s;
}

TEST(CheckpointCost, HoldsTheMasterWeightsAndOptimizerStatesOnly) {
  PersistentMemory persistent;
  persistent.master_params = 400;
  persistent.compute_params = 200;
  persistent.gradients = 400;
  persistent.optimizer_states = 800;
  persistent.gathered_small_params = 10;
  EXPECT_EQ(checkpoint_bytes_per_gpu(persistent), 1200);
}

// 1e9 B per GPU x 1,024 GPUs = 1.024e12 B. Per node 8e9 B / 10 GB/s = 0.8 s;
// the cluster 1.024e12 B / 1 TB/s = 1.024 s: the cap binds. The load reads
// the same bytes (no replicas).
TEST(CheckpointCost, AggregateCapBindsWhenNodesOutrunIt) {
  const CheckpointCost c = checkpoint_cost(1'000'000'000, cluster_1024(), storage(10));
  EXPECT_DOUBLE_EQ(c.total_bytes, 1.024e12);
  EXPECT_DOUBLE_EQ(c.write_s, 1.024);
  EXPECT_TRUE(c.aggregate_bound);
  EXPECT_DOUBLE_EQ(c.load_s, 1.024);
  EXPECT_DOUBLE_EQ(c.pause_s, c.write_s) << "synchronous: training waits for the write";
}

// At 1 GB/s per node: 8e9 B / 1 GB/s = 8 s, above the cap's 1.024 s.
TEST(CheckpointCost, NodeBandwidthBindsWhenSlow) {
  const CheckpointCost c = checkpoint_cost(1'000'000'000, cluster_1024(), storage(1));
  EXPECT_DOUBLE_EQ(c.write_s, 8.0);
  EXPECT_FALSE(c.aggregate_bound);
}

// HSDP, 4 replicas of a 256-GPU shard group: one copy written, 256e9 B, per
// node 2e9 B / 10 GB/s = 0.2 s, the cap 0.256 s; every replica loads its
// copy: 1.024e12 B, 1.024 s.
TEST(CheckpointCost, HsdpWritesOneCopyAndLoadsEveryReplica) {
  const CheckpointCost c = checkpoint_cost(1'000'000'000, {1024, 8, 256}, storage(10));
  EXPECT_DOUBLE_EQ(c.total_bytes, 256e9);
  EXPECT_DOUBLE_EQ(c.write_s, 0.256);
  EXPECT_DOUBLE_EQ(c.load_s, 1.024);
}

// Asynchronous: the pause is the snapshot, 1e9 B / 50 GB/s = 20 ms; the
// write still takes 1.024 s, in the background.
TEST(CheckpointCost, AsynchronousPausesForTheSnapshotOnly) {
  GoodputSettings s = storage(10);
  s.async_checkpoint = true;
  const CheckpointCost c = checkpoint_cost(1'000'000'000, cluster_1024(), s);
  EXPECT_DOUBLE_EQ(c.snapshot_s, 0.02);
  EXPECT_DOUBLE_EQ(c.pause_s, 0.02);
  EXPECT_DOUBLE_EQ(c.write_s, 1.024);
}

}  // namespace
}  // namespace ragged::planner
