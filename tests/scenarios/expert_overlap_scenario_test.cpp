// training.experts.overlap_all_to_all (Megatron-Core's combined 1F1B): one
// located error naming the fix for every configuration Megatron refuses or
// Ragged does not model.

#include <gtest/gtest.h>

#include "scenario_test_util.hpp"

namespace ragged::scenarios {
namespace {

using testing::minimal_scenario_training;
using testing::parse_error;
using testing::training_with;

constexpr const char* kPipelined =
    "strategy: MEGATRON_DDP gradient_accumulation_steps: 4 mesh { ep: 2 pp: 2 } "
    "pipeline { schedule: INTERLEAVED_1F1B virtual_stages: 2 } ";

TEST(ExpertOverlapScenario, OffByDefaultAndAcceptedUnderInterleavedStagesWithExpertParallelism) {
  EXPECT_FALSE(training_with("strategy: MEGATRON_DDP").experts().overlap_all_to_all());
  // Without stages: Megatron's combined_1f1b_schedule_for_no_pipelining.
  EXPECT_TRUE(training_with("strategy: MEGATRON_DDP gradient_accumulation_steps: 4 mesh { ep: 2 } "
                            "experts { overlap_all_to_all: true }")
                  .experts()
                  .overlap_all_to_all());
  const Training t = training_with(std::string(kPipelined) + "experts { overlap_all_to_all: true }");
  EXPECT_TRUE(t.experts().overlap_all_to_all());
  EXPECT_TRUE(training_with(std::string(kPipelined) +
                            "activation_checkpointing: SELECTIVE experts { overlap_all_to_all: true }")
                  .experts()
                  .overlap_all_to_all());
}

TEST(ExpertOverlapScenario, EveryConfigurationItCannotRunIsOneLocatedErrorNamingTheFix) {
  const std::string on = "experts { overlap_all_to_all: true }";
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: MEGATRON_DDP gradient_accumulation_steps: 4 "
                                                        "mesh { pp: 2 } pipeline { schedule: INTERLEAVED_1F1B "
                                                        "virtual_stages: 2 } " +
                                                        on)),
                  "training.experts.overlap_all_to_all: the overlap hides expert-parallel all-to-alls: set mesh.ep "
                  "above 1, or remove overlap_all_to_all");
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: FSDP2 mesh { ep: 2 } " + on)),
                  "training.experts.overlap_all_to_all: fsdp2 has no combined 1F1B schedule (Megatron-Core's): use "
                  "strategy MEGATRON_DDP, or remove overlap_all_to_all");
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: MEGATRON mesh { ep: 2 } " + on)),
                  "training.experts.overlap_all_to_all: Megatron-FSDP's combined step (without pipeline stages only: "
                  "Megatron refuses it under interleaved stages) is not modelled: use strategy MEGATRON_DDP, or remove "
                  "overlap_all_to_all");
  EXPECT_CONTAINS(parse_error(minimal_scenario_training("strategy: MEGATRON_DDP gradient_accumulation_steps: 4 "
                                                        "mesh { ep: 2 pp: 2 } " +
                                                        on)),
                  "training.experts.overlap_all_to_all: Megatron overlaps the all-to-alls over pipeline stages only "
                  "with virtual stages: set pipeline.schedule INTERLEAVED_1F1B, or remove overlap_all_to_all");
  EXPECT_CONTAINS(
      parse_error(minimal_scenario_training(std::string(kPipelined) + "activation_checkpointing: FULL " + on)),
      "training.experts.overlap_all_to_all: Megatron refuses the overlap under full recomputation");
  EXPECT_CONTAINS(parse_error(minimal_scenario_training(std::string(kPipelined) +
                                                        "experts { overlap_all_to_all: true checkpointing: FULL }")),
                  "checkpoint SELECTIVE or NONE, or remove overlap_all_to_all");
}

TEST(ExpertOverlapScenario, DelayedWeightGradientsNeedTheOverlapAndFusedAccumulation) {
  EXPECT_TRUE(
      training_with(std::string(kPipelined) + "experts { overlap_all_to_all: true delay_weight_gradients: true }")
          .experts()
          .delay_weight_gradients());
  EXPECT_CONTAINS(
      parse_error(minimal_scenario_training(std::string(kPipelined) + "experts { delay_weight_gradients: true }")),
      "training.experts.delay_weight_gradients: Megatron delays the weight gradients only with the "
      "overlapped all-to-alls: set experts.overlap_all_to_all, or remove delay_weight_gradients");
  EXPECT_CONTAINS(parse_error(minimal_scenario_training(
                      std::string(kPipelined) + "megatron_ddp { gradient_accumulation_fusion: false } "
                                                "experts { overlap_all_to_all: true delay_weight_gradients: true }")),
                  "set megatron_ddp.gradient_accumulation_fusion true, or remove delay_weight_gradients");
}

}  // namespace
}  // namespace ragged::scenarios
