#include <string>

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "scenario_test_util.hpp"
#include "scenarios/gpu_presets.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::scenarios {
namespace {

using testing::loaded_minimal_scenario;

TEST(ScenarioDefaults, PresetFillsGpuAndLinks) {
  const Scenario s = loaded_minimal_scenario().scenario;
  EXPECT_DOUBLE_EQ(s.cluster().gpu().peak_bf16_tflops(), 989.4);
  EXPECT_DOUBLE_EQ(s.cluster().gpu().hbm_capacity_gib(), 79.6);
  EXPECT_DOUBLE_EQ(s.cluster().intra_node().bandwidth_gbytes_per_s(), 450);
  EXPECT_EQ(s.cluster().nics().per_node(), 8);
  EXPECT_DOUBLE_EQ(s.cluster().nics().bandwidth_gbits_per_s(), 400);
  EXPECT_TRUE(s.cluster().topology().has_fat_tree());
  EXPECT_EQ(s.cluster().topology().fat_tree().levels(), 2);
}

TEST(ScenarioDefaults, TrainingDefaults) {
  const Training t = loaded_minimal_scenario().scenario.training();
  EXPECT_EQ(t.strategy(), FSDP2);  // written, kept
  EXPECT_EQ(t.shard_group_size(), 16);
  EXPECT_EQ(t.replicate_group_size(), 1);
  EXPECT_EQ(t.micro_batch_size(), 1);
  EXPECT_EQ(t.sequence_length(), 4096);
  EXPECT_EQ(t.precision().param(), BF16);
  EXPECT_EQ(t.precision().reduce(), FP32);
  EXPECT_EQ(t.precision().master(), FP32);
  EXPECT_EQ(t.activation_checkpointing(), NONE);
  EXPECT_TRUE(t.optimizer().has_adamw());
  EXPECT_DOUBLE_EQ(t.optimizer().adamw().beta2(), 0.95);
  EXPECT_EQ(t.granularity().default_spec().kind(), ELEMENT);
  EXPECT_EQ(t.prefetch_depth(), 1);
  EXPECT_TRUE(t.reshard_after_forward());
  // TorchTitan's stack: SDPA's FlashAttention-2, the fp32 loss, PyTorch's default allocator.
  EXPECT_EQ(t.attention(), FLASH_ATTENTION_2);
  EXPECT_EQ(t.loss(), FP32_LOGITS);
  EXPECT_TRUE(t.allocator().has_expandable_segments());
  EXPECT_FALSE(t.allocator().expandable_segments());
}

// docs/SIMULATOR.md section 9: Llama 3's interruption rate and storage cap,
// synchronous checkpoints, PyTorch's NCCL timeout as the relaunch.
TEST(ScenarioDefaults, GoodputDefaults) {
  const Goodput g = loaded_minimal_scenario().scenario.goodput();
  EXPECT_NEAR(g.interruptions_per_gpu_hour(), 1.9733e-5, 1e-9);  // 419 / (54 x 24 x 16,384)
  EXPECT_DOUBLE_EQ(g.storage_gbytes_per_s_per_node(), 40);
  EXPECT_DOUBLE_EQ(g.storage_aggregate_tbytes_per_s(), 2);
  EXPECT_FALSE(g.async_checkpoint());
  EXPECT_DOUBLE_EQ(g.host_copy_gbytes_per_s(), 64);
  EXPECT_DOUBLE_EQ(g.restart_minutes(), 10);
  EXPECT_DOUBLE_EQ(g.checkpoint_interval_minutes(), 0);
  EXPECT_DOUBLE_EQ(g.train_tokens(), 0);
  const std::string text =
      testing::minimal_scenario() + "goodput { interruptions_per_gpu_hour: 0 restart_minutes: 3 }\n";
  const Goodput written = parse_scenario(text, ScenarioFormat::kText, "t", ".").scenario.goodput();
  EXPECT_DOUBLE_EQ(written.interruptions_per_gpu_hour(), 0) << "a written zero is kept";
  EXPECT_DOUBLE_EQ(written.restart_minutes(), 3);
}

TEST(ScenarioDefaults, WrittenValuesOverridePreset) {
  std::string text = testing::minimal_scenario();
  text.replace(text.find("preset: \"h100\""), 14, "preset: \"h100\" hbm_capacity_gib: 64");
  EXPECT_DOUBLE_EQ(parse_scenario(text, ScenarioFormat::kText, "t", ".").scenario.cluster().gpu().hbm_capacity_gib(),
                   64);
}

// GPUs of one SKU spread 1.5% in sustained clock (gpu_presets.cpp); a CPU
// rank is nominal, and a written spread is kept, 0 included.
TEST(ScenarioDefaults, GpuClockSpreadDefaultsByPreset) {
  EXPECT_DOUBLE_EQ(loaded_minimal_scenario().scenario.cluster().gpu().clock_spread(), kDefaultClockSpread);
  std::string cpu = testing::minimal_scenario();
  cpu.replace(cpu.find("preset: \"h100\""), 14, "preset: \"cpu\"");
  EXPECT_DOUBLE_EQ(parse_scenario(cpu, ScenarioFormat::kText, "t", ".").scenario.cluster().gpu().clock_spread(), 0);
  std::string identical = testing::minimal_scenario();
  identical.replace(identical.find("preset: \"h100\""), 14, "preset: \"h100\" clock_spread: 0");
  EXPECT_DOUBLE_EQ(parse_scenario(identical, ScenarioFormat::kText, "t", ".").scenario.cluster().gpu().clock_spread(),
                   0);
  std::string wide = testing::minimal_scenario();
  wide.replace(wide.find("preset: \"h100\""), 14, "preset: \"h100\" clock_spread: 0.5");
  try {
    parse_scenario(wide, ScenarioFormat::kText, "t", ".");
    ADD_FAILURE() << "a 50% clock spread was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.gpu.clock_spread: clock_spread is 0.5"), std::string::npos)
        << e.what();
  }
}

TEST(ScenarioDefaults, EightBitAdamDefaultsToItsBlockGranularity) {
  std::string text = testing::minimal_scenario();
  text.replace(text.find("strategy: FSDP2"), 15, "optimizer { adam8bit { block_rows: 64 block_cols: 32 } }");
  const GranularitySpec spec =
      parse_scenario(text, ScenarioFormat::kText, "t", ".").scenario.training().granularity().default_spec();
  EXPECT_EQ(spec.kind(), BLOCK);
  EXPECT_EQ(spec.block_rows(), 64);
  EXPECT_EQ(spec.block_cols(), 32);
}

TEST(ScenarioDefaults, ShampooDefaultsAreDistributedShampoos) {
  std::string text = testing::minimal_scenario();
  text.replace(text.find("strategy: FSDP2"), 15, "optimizer { shampoo {} }");
  const Shampoo s = parse_scenario(text, ScenarioFormat::kText, "t", ".").scenario.training().optimizer().shampoo();
  EXPECT_EQ(s.block_size(), 1024);
  EXPECT_EQ(s.precondition_frequency(), 1);
  EXPECT_DOUBLE_EQ(s.lr(), 1e-2);
  EXPECT_DOUBLE_EQ(s.epsilon(), 1e-12);
  EXPECT_DOUBLE_EQ(s.weight_decay(), 0.0);
  EXPECT_DOUBLE_EQ(s.adamw().lr(), 3e-4);
}

TEST(ScenarioDefaults, SgdDefaultsAreTorchs) {
  std::string text = testing::minimal_scenario();
  text.replace(text.find("strategy: FSDP2"), 15, "optimizer { sgd {} }");
  const Sgd s = parse_scenario(text, ScenarioFormat::kText, "t", ".").scenario.training().optimizer().sgd();
  EXPECT_DOUBLE_EQ(s.lr(), 1e-3);
  EXPECT_DOUBLE_EQ(s.momentum(), 0.0);
  EXPECT_DOUBLE_EQ(s.weight_decay(), 0.0);
}

TEST(ScenarioDefaults, OptimizerNamesRoundTripAndAnUnknownOneListsTheChoices) {
  for (const std::string& name : optimizer_names()) {
    Training t;
    select_optimizer(&t, name, "--optimizer");
    EXPECT_EQ(optimizer_name(t.optimizer()), name);
  }
  Training t;
  try {
    select_optimizer(&t, "lion", "--optimizer");
    FAIL() << "lion is not an optimizer of the model's";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--optimizer lion: use one of adamw, adam8bit, muon, shampoo, sgd");
  }
}

TEST(ScenarioDefaults, HsdpReplicasDeriveShardGroup) {
  std::string text = testing::minimal_scenario();
  text.replace(text.find("strategy: FSDP2"), 15, "replicate_group_size: 2");
  const Training t = parse_scenario(text, ScenarioFormat::kText, "t", ".").scenario.training();
  EXPECT_EQ(t.shard_group_size(), 8);
  EXPECT_EQ(t.replicate_group_size(), 2);
}

TEST(ScenarioDefaults, WithTotalGpusRescalesNodesAndGroups) {
  LoadedScenario loaded = loaded_minimal_scenario();
  LoadedScenario bigger = with_total_gpus(loaded, 64);
  EXPECT_EQ(bigger.scenario.cluster().nodes(), 8);
  EXPECT_EQ(bigger.scenario.training().shard_group_size(), 64);
  LoadedScenario smaller = with_total_gpus(loaded, 4);
  EXPECT_EQ(smaller.scenario.cluster().gpus_per_node(), 4);
  EXPECT_EQ(smaller.scenario.cluster().nodes(), 1);
  EXPECT_THROW(with_total_gpus(loaded, 12), InputError);
  EXPECT_THROW(with_total_gpus(loaded, 0), InputError);
}

// The memory outside PyTorch's allocator: the CUDA context (400 MiB) and one
// NCCL communicator per group a rank runs collectives in (688 MiB, 544 for a
// group of two); the allocator gets the rest of the GPU.
TEST(ScenarioDefaults, OutsideAllocatorMemoryCountsTheContextAndEachCommunicator) {
  auto outside = [](const std::string& training) {
    const std::string text = testing::minimal_scenario();
    const std::string with = text.substr(0, text.find("training {")) + "training {\n" + training + "}\n";
    return parse_scenario(with, ScenarioFormat::kText, "t", ".").scenario;
  };
  const Scenario fsdp = outside("  strategy: FSDP2\n");
  EXPECT_DOUBLE_EQ(fsdp.training().allocator().outside_gib(), (400.0 + 688.0) / 1024);
  EXPECT_EQ(allocator_capacity_bytes(fsdp), static_cast<int64_t>((79.6 - (400.0 + 688.0) / 1024) * (1LL << 30)));
  const Scenario hsdp_pairs = outside("  strategy: FSDP2\n  shard_group_size: 8\n");  // 2 replicas
  EXPECT_DOUBLE_EQ(hsdp_pairs.training().allocator().outside_gib(), (400.0 + 688.0 + 544.0) / 1024);
  const Scenario written = outside("  strategy: FSDP2\n  allocator { outside_gib: 2.5 }\n");
  EXPECT_DOUBLE_EQ(written.training().allocator().outside_gib(), 2.5);
  EXPECT_EQ(allocator_capacity_bytes(written), static_cast<int64_t>((79.6 - 2.5) * (1LL << 30)));
}

TEST(ScenarioDefaults, OneGpuHoldsOnlyTheContext) {
  const std::string text = testing::minimal_scenario();
  std::string one = text;
  one.replace(one.find("gpus_per_node: 8"), 16, "gpus_per_node: 1");
  one.replace(one.find("nodes: 2"), 8, "nodes: 1");
  const Scenario s = parse_scenario(one, ScenarioFormat::kText, "t", ".").scenario;
  EXPECT_DOUBLE_EQ(s.training().allocator().outside_gib(), 400.0 / 1024);
}

TEST(ScenarioDefaults, StrategyNamesRoundTrip) {
  for (Strategy s : all_strategies()) EXPECT_EQ(parse_strategy(strategy_name(s)), s);
  EXPECT_THROW(parse_strategy("fsdp3"), InputError);
}

}  // namespace
}  // namespace ragged::scenarios
