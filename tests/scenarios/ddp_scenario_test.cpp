// strategy: DDP in a scenario: its defaults (every GPU a replica, the
// gradients reduced in the parameters' dtype, 25 MiB buckets) and one located
// error naming the fix for every input DDP cannot run.

#include <gtest/gtest.h>

#include "scenario_test_util.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::scenarios {
namespace {

using testing::minimal_scenario_training;
using testing::parse_error;
using testing::training_with;

TEST(DdpScenario, EveryGpuIsAReplicaReducingInTheParametersDtype) {
  const Training t = training_with("strategy: DDP precision { master: BF16 }");
  EXPECT_EQ(t.shard_group_size(), 1);
  EXPECT_EQ(t.replicate_group_size(), 16);
  EXPECT_EQ(t.mesh().dp_replicate(), 16);
  EXPECT_EQ(t.precision().reduce(), BF16);
  EXPECT_EQ(t.ddp().bucket_cap_mb(), 25);
  EXPECT_EQ(parse_strategy("ddp"), DDP);
  EXPECT_EQ(strategy_name(DDP), "ddp");
  for (Strategy s : all_strategies()) EXPECT_NE(s, DDP) << "DDP is no sharding layout to compare";
}

TEST(DdpScenario, NoSyncIsDdpsGradientSyncOnTheLastMicroBatch) {
  EXPECT_EQ(parse_error(minimal_scenario_training("strategy: DDP gradient_accumulation_steps: 4 "
                                                  "accumulation_gradient_sync: LAST_MICRO_BATCH")),
            "");
  EXPECT_CONTAINS(
      parse_error(minimal_scenario_training("strategy: ZERO3 accumulation_gradient_sync: LAST_MICRO_BATCH")),
      "set strategy: FSDP2 or DDP");
}

TEST(DdpScenario, WhatDdpCannotRunIsRefusedAtItsField) {
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: DDP shard_group_size: 8")),
                  "training.shard_group_size: DDP replicates every parameter on every GPU, but shard_group_size is 8");
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: DDP mesh { tp: 2 }")),
                  "training.mesh: DDP runs data parallelism alone, but the mesh has tp 2");
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: DDP precision { reduce: BF16 master: FP32 }")),
                  "training.precision.reduce: DDP all-reduces the gradients in the parameters' dtype (master FP32)");
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: FSDP2 ddp { bucket_cap_mb: 50 }")),
                  "training.ddp: the ddp block holds DistributedDataParallel's arguments: set strategy: DDP");
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: DDP ddp { bucket_cap_mb: 0 }")),
                  "training.ddp.bucket_cap_mb");
}

}  // namespace
}  // namespace ragged::scenarios
