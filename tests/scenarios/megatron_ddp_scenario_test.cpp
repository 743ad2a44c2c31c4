// strategy: MEGATRON_DDP in a scenario: Megatron-LM's defaults (buckets of
// max(40M, 1M x dp) parameters, fp32 main gradients, no overlap) and one
// located error naming the fix for every input it cannot run.

#include <gtest/gtest.h>

#include "scenario_test_util.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::scenarios {
namespace {

using testing::minimal_scenario_training;
using testing::parse_error;
using testing::training_with;

TEST(MegatronDdpScenario, MegatronLmsDefaultsOverTheDataParallelGroup) {
  const Training t = training_with("strategy: MEGATRON_DDP");
  EXPECT_EQ(t.shard_group_size(), 16);  // the distributed optimizer shards over every data-parallel rank
  EXPECT_EQ(t.precision().reduce(), FP32);
  EXPECT_EQ(t.megatron_ddp().bucket_size(), 40'000'000);
  EXPECT_FALSE(t.megatron_ddp().overlap_grad_reduce());
  EXPECT_FALSE(t.megatron_ddp().overlap_param_gather());
  EXPECT_EQ(parse_strategy("megatron-ddp"), MEGATRON_DDP);
  EXPECT_EQ(strategy_name(MEGATRON_DDP), "megatron-ddp");
  for (Strategy s : all_strategies()) EXPECT_NE(s, MEGATRON_DDP) << "it shards the optimizer alone";
}

TEST(MegatronDdpScenario, TheBucketGrowsWithTheDataParallelGroupNotWithContextParallelism) {
  // 16 GPUs: tp 2 x cp 2 leaves dp 4 -> 40M; dp 64 on 64 GPUs -> 64M.
  EXPECT_EQ(training_with("strategy: MEGATRON_DDP mesh { tp: 2 cp: 2 }").megatron_ddp().bucket_size(), 40'000'000);
  const std::string big = testing::minimal_scenario_training("strategy: MEGATRON_DDP");
  std::string text = big;
  text.replace(text.find("nodes: 2"), 8, "nodes: 8");
  const Training t = parse_scenario(text, ScenarioFormat::kText, "test.textproto", ".").scenario.training();
  EXPECT_EQ(t.megatron_ddp().bucket_size(), 64'000'000);
}

TEST(MegatronDdpScenario, EveryInputItCannotRunIsOneLocatedErrorNamingTheFix) {
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: FSDP2 megatron_ddp { overlap_grad_reduce: true }")),
                  "training.megatron_ddp: the megatron_ddp block holds Megatron-LM's DistributedDataParallelConfig: "
                  "set strategy: MEGATRON_DDP, or remove it");
  EXPECT_CONTAINS(
      parse_error(minimal_scenario_training("strategy: MEGATRON_DDP megatron_ddp { overlap_param_gather: true }")),
      "training.megatron_ddp.overlap_param_gather: Megatron-LM overlaps the parameter all-gather only "
      "with overlap_grad_reduce");
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: MEGATRON_DDP precision { reduce: FP16 }")),
                  "training.precision.reduce: Megatron's main gradients are FP32");
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: MEGATRON_DDP optimizer { muon {} }")),
                  "training.optimizer: Megatron's distributed optimizer steps Adam");
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: MEGATRON_DDP megatron_ddp { bucket_size: 0 }")),
                  "training.megatron_ddp.bucket_size");
}

}  // namespace
}  // namespace ragged::scenarios
