// training.mesh: its defaults (FSDP over what tp and the replicas leave), the
// groups it sets, and one located error line naming the fix for every
// combination that cannot be laid out.

#include <gtest/gtest.h>

#include "scenario_test_util.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::scenarios {
namespace {

using testing::minimal_scenario;
using testing::parse_error;

// The minimal scenario (16 H100s, llama3-8b) with `fields` added to its training block.
std::string with_training(const std::string& fields) {
  std::string text = minimal_scenario();
  const std::string anchor = "  strategy: FSDP2\n";
  return text.replace(text.find(anchor), anchor.size(), anchor + fields + "\n");
}

Training training_of(const std::string& fields) {
  return parse_scenario(with_training(fields), ScenarioFormat::kText, "test.textproto", ".").scenario.training();
}

TEST(MeshScenario, DefaultIsFsdpOverEveryGpu) {
  const Training t = training_of("");
  EXPECT_EQ(t.mesh().tp(), 1);
  EXPECT_EQ(t.mesh().cp(), 1);
  EXPECT_EQ(t.mesh().ep(), 1);
  EXPECT_EQ(t.mesh().dp_shard(), 16);
  EXPECT_EQ(t.mesh().dp_replicate(), 1);
  EXPECT_TRUE(t.mesh().sequence_parallel());
  EXPECT_EQ(t.shard_group_size(), 16);
}

TEST(MeshScenario, TpAndCpLeaveTheRestToFsdp) {
  const Training t = training_of("  mesh { tp: 4 cp: 2 }");
  EXPECT_EQ(t.shard_group_size(), 4);  // dp_shard 2 x cp 2
  EXPECT_EQ(t.mesh().dp_shard(), 2);
  EXPECT_EQ(t.replicate_group_size(), 1);
}

TEST(MeshScenario, DpSizesSetTheFsdpGroups) {
  const Training t = training_of("  mesh { tp: 2 dp_shard: 4 }");
  EXPECT_EQ(t.shard_group_size(), 4);
  EXPECT_EQ(t.replicate_group_size(), 2);
  EXPECT_EQ(t.mesh().dp_replicate(), 2);
}

TEST(MeshScenario, GlobalBatchCountsDataParallelRanksOnly) {
  const Scenario s = parse_scenario(with_training("  micro_batch_size: 2\n  mesh { tp: 4 cp: 2 }"),
                                    ScenarioFormat::kText, "test.textproto", ".")
                         .scenario;
  EXPECT_EQ(global_batch_sequences(s), 16 / 8 * 2);
}

TEST(MeshScenario, TpMustDivideTheGpus) {
  const std::string error = parse_error(with_training("  mesh { tp: 3 }"));
  EXPECT_CONTAINS(error, "training.mesh.tp: tp is 3; it must divide the 16 GPUs");
  EXPECT_CONTAINS(error, "test.textproto:9:");
}

TEST(MeshScenario, ConflictingShardGroupNamesBoth) {
  const std::string error = parse_error(with_training("  shard_group_size: 8\n  mesh { tp: 2 dp_shard: 2 }"));
  EXPECT_CONTAINS(error, "training.mesh.dp_shard: dp_shard 2 x cp 1 is 2, but shard_group_size is 8");
}

TEST(MeshScenario, ProductMustBeTheGpuCount) {
  const std::string error = parse_error(with_training("  replicate_group_size: 4\n  mesh { tp: 2 dp_shard: 4 }"));
  EXPECT_CONTAINS(error,
                  "training.replicate_group_size: shard_group_size 4 x replicate_group_size 4 x mesh.tp 2 is "
                  "not the 16 GPUs");
}

TEST(MeshScenario, EpIsCarvedOutOfTheShardGroup) {
  const std::string error = parse_error(with_training("  mesh { tp: 2 ep: 16 }"));
  EXPECT_CONTAINS(error, "training.mesh.ep: ep is 16; expert parallelism is carved out of dp_shard x cp (8)");
}

// The routed experts split over tp like the MLP unless expert_tp is 1 (each
// expert whole on its rank, ep carved out of tp x dp_shard x cp).
TEST(MeshScenario, ExpertTpIsTpOrOne) {
  EXPECT_EQ(training_of("  mesh { tp: 2 }").mesh().expert_tp(), 2);
  EXPECT_EQ(training_of("  mesh { tp: 2 ep: 16 expert_tp: 1 }").mesh().expert_tp(), 1);
  const std::pair<const char*, const char*> refused[] = {
      {"tp: 4 ep: 2 expert_tp: 2",
       "training.mesh.expert_tp: expert_tp is 2; the routed experts are split over the same tp ranks as the MLP "
       "(expert_tp = tp 4, the default) or whole on each rank (expert_tp 1)"},
      {"tp: 2 expert_tp: 1",
       "training.mesh.expert_tp: expert_tp 1 keeps each routed expert whole on its expert-parallel rank, but ep is "
       "1: set training.mesh.ep above 1"},
      {"tp: 2 ep: 2 expert_tp: 1 sequence_parallel: false",
       "training.mesh.expert_tp: with expert_tp 1 each tp rank dispatches its own 1/tp of the tokens, which "
       "sequence parallelism gives it: set sequence_parallel: true"},
      {"tp: 2 ep: 32 expert_tp: 1",
       "training.mesh.ep: ep is 32; with whole experts (expert_tp 1) expert parallelism is carved out of tp x "
       "dp_shard x cp (16)"},
  };
  for (const auto& [mesh, error] : refused) {
    EXPECT_CONTAINS(parse_error(with_training(std::string("  mesh { ") + mesh + " }")), error);
  }
}

TEST(MeshScenario, CpNeedsTwoChunksPerRank) {
  const std::string error = parse_error(with_training("  sequence_length: 1000\n  mesh { cp: 16 }"));
  EXPECT_CONTAINS(error, "training.mesh.cp: cp 16 cuts each sequence into 2 x cp = 32 chunks");
}

TEST(MeshScenario, CpNeedsAFlashKernel) {
  const std::string error = parse_error(with_training("  attention: MATH\n  mesh { cp: 2 }"));
  EXPECT_CONTAINS(error, "training.mesh.cp: context parallelism runs a flash attention kernel");
}

TEST(MeshScenario, TpOverlapNeedsSequenceParallelTensorParallelism) {
  EXPECT_EQ(training_of("  mesh { tp: 2 }").mesh().tp_overlap(), TP_OVERLAP_NONE);
  EXPECT_EQ(training_of("  mesh { tp: 2 tp_overlap: ASYNC_TP }").mesh().tp_overlap(), ASYNC_TP);
  EXPECT_CONTAINS(parse_error(with_training("  mesh { tp_overlap: USERBUFFERS }")),
                  "training.mesh.tp_overlap: USERBUFFERS overlaps sequence parallelism's all-gathers and "
                  "reduce-scatters with the GEMMs; tp is 1: set tp_overlap: TP_OVERLAP_NONE, or a training.mesh.tp "
                  "above 1");
  EXPECT_CONTAINS(parse_error(with_training("  mesh { tp: 2 sequence_parallel: false tp_overlap: ASYNC_TP }")),
                  "training.mesh.tp_overlap: ASYNC_TP overlaps sequence parallelism's all-gathers and reduce-scatters "
                  "with the GEMMs; sequence_parallel is false");
}

TEST(MeshScenario, WholeMatrixOptimizersRefuseTensorParallelism) {
  const std::string error = parse_error(with_training("  optimizer { muon {} }\n  mesh { tp: 2 }"));
  EXPECT_CONTAINS(error, "training.mesh.tp: Muon owns whole matrices");
}

TEST(MeshScenario, ZeroTpIsARangeError) {
  const std::string error = parse_error(with_training("  mesh { tp: 0 }"));
  EXPECT_CONTAINS(error, "training.mesh.tp: tp is 0");
}

TEST(MeshScenario, MoreGpusKeepTheMeshAndRecutTheDataParallelSizes) {
  const LoadedScenario loaded =
      parse_scenario(with_training("  mesh { tp: 2 dp_shard: 4 }"), ScenarioFormat::kText, "test.textproto", ".");
  const Training t = with_total_gpus(loaded, 64).scenario.training();
  EXPECT_EQ(t.mesh().tp(), 2);
  EXPECT_EQ(t.mesh().dp_shard(), 4);
  EXPECT_EQ(t.mesh().dp_replicate(), 8);
}

TEST(MeshScenario, PipelineStagesDefaultTo1F1BOverTheAccumulationSteps) {
  const Training t = training_of("  gradient_accumulation_steps: 8\n  mesh { pp: 4 tp: 2 }");
  EXPECT_EQ(t.mesh().dp_shard(), 2);  // 16 GPUs / tp 2 / pp 4
  EXPECT_EQ(t.shard_group_size(), 2);
  EXPECT_EQ(t.pipeline().schedule(), ONE_F_ONE_B);
  EXPECT_EQ(t.pipeline().micro_batches(), 8);
  EXPECT_EQ(t.pipeline().virtual_stages(), 1);
  const Scenario s = parse_scenario(with_training("  gradient_accumulation_steps: 8\n  mesh { pp: 4 tp: 2 }"),
                                    ScenarioFormat::kText, "test.textproto", ".")
                         .scenario;
  EXPECT_EQ(global_batch_sequences(s), 2 * 8);  // two data-parallel ranks, 8 micro-batches of 1
}

TEST(MeshScenario, PipelineMicroBatchesSetTheAccumulationSteps) {
  const Training t = training_of("  mesh { pp: 2 }\n  pipeline { schedule: INTERLEAVED_1F1B micro_batches: 6 }");
  EXPECT_EQ(t.gradient_accumulation_steps(), 6);
  EXPECT_EQ(t.pipeline().virtual_stages(), 2);
}

// --pp (scenarios::with_mesh) on a scenario with stages: 1 drops the
// pipeline block and keeps the step's micro-batches; another count drops the
// split of the layers written for the old one.
TEST(MeshScenario, ANewStageCountRewritesThePipelineBlock) {
  const LoadedScenario staged =
      parse_scenario(with_training("  mesh { pp: 2 }\n  pipeline { schedule: INTERLEAVED_1F1B micro_batches: 8 "
                                   "layers_per_stage: [8, 8, 8, 8] }"),
                     ScenarioFormat::kText, "test.textproto", ".");
  const Training one = with_mesh(staged, 0, 0, 0, 1).scenario.training();
  EXPECT_EQ(one.mesh().pp(), 1);
  EXPECT_FALSE(one.has_pipeline());
  EXPECT_EQ(one.gradient_accumulation_steps(), 8);
  const Training four = with_mesh(staged, 0, 0, 0, 4).scenario.training();
  EXPECT_EQ(four.mesh().pp(), 4);
  EXPECT_EQ(four.pipeline().schedule(), INTERLEAVED_1F1B);
  EXPECT_EQ(four.pipeline().layers_per_stage_size(), 0);
  const Training same = with_mesh(staged, 0, 0, 0, 2).scenario.training();
  EXPECT_EQ(same.pipeline().layers_per_stage_size(), 4);
}

TEST(MeshScenario, PipelineBlockNeedsStages) {
  const std::string error = parse_error(with_training("  pipeline { schedule: GPIPE }"));
  EXPECT_CONTAINS(error, "training.pipeline: a pipeline block without pipeline stages: set mesh.pp above 1");
}

TEST(MeshScenario, PipelineMicroBatchesMustAgreeWithTheAccumulationSteps) {
  const std::string error =
      parse_error(with_training("  gradient_accumulation_steps: 4\n  mesh { pp: 2 }\n  pipeline { micro_batches: 8 }"));
  EXPECT_CONTAINS(error, "training.pipeline.micro_batches: micro_batches 8 and gradient_accumulation_steps 4");
}

TEST(MeshScenario, InterleavedRunsRoundsOfPp) {
  const std::string error = parse_error(
      with_training("  gradient_accumulation_steps: 6\n  mesh { pp: 4 }\n  pipeline { schedule: INTERLEAVED_1F1B }"));
  EXPECT_CONTAINS(error,
                  "training.pipeline.micro_batches: INTERLEAVED_1F1B runs micro-batches in rounds of pp (4); "
                  "6 is not a multiple: use 8");
}

TEST(MeshScenario, VirtualStagesOnlyInterleave) {
  const std::string error = parse_error(with_training("  mesh { pp: 2 }\n  pipeline { virtual_stages: 2 }"));
  EXPECT_CONTAINS(error, "training.pipeline.virtual_stages: virtual_stages is 2; only INTERLEAVED_1F1B");
}

// torch.distributed.pipelining's receive buffers are chosen by name; the
// default keeps what a stage receives only while its micro-batch is in flight.
TEST(MeshScenario, ReceiveBuffersAreOneOfTheirNames) {
  EXPECT_EQ(training_of("  mesh { pp: 2 }").pipeline().receive_buffers(), RECEIVE_WHILE_IN_FLIGHT);
  EXPECT_EQ(training_of("  mesh { pp: 2 }\n  pipeline { receive_buffers: ONE_BUFFER_PER_MICRO_BATCH }")
                .pipeline()
                .receive_buffers(),
            ONE_BUFFER_PER_MICRO_BATCH);
  const std::string error = parse_error(with_training("  mesh { pp: 2 }\n  pipeline { receive_buffers: 7 }"));
  EXPECT_CONTAINS(error, "receive_buffers");
  EXPECT_CONTAINS(error, "ONE_BUFFER_PER_MICRO_BATCH");
}

TEST(MeshScenario, LayersPerStageGiveOnePerStage) {
  const std::string error = parse_error(with_training("  mesh { pp: 4 }\n  pipeline { layers_per_stage: [8, 8] }"));
  EXPECT_CONTAINS(error, "training.pipeline.layers_per_stage: 2 entries for 4 stages");
}

TEST(MeshScenario, OnlyTheFirstAndTheLastStageMayHoldNoBlock) {
  EXPECT_EQ(
      training_of("  mesh { pp: 4 }\n  pipeline { layers_per_stage: [0, 16, 16, 0] }").pipeline().layers_per_stage(0),
      0);
  const std::string error =
      parse_error(with_training("  mesh { pp: 4 }\n  pipeline { layers_per_stage: [8, 0, 16, 8] }"));
  EXPECT_CONTAINS(error, "training.pipeline.layers_per_stage[1]: 0 blocks; every stage between the first and the last");
}

TEST(MeshScenario, PpMustDivideTheGpus) {
  const std::string error = parse_error(with_training("  mesh { pp: 3 }"));
  EXPECT_CONTAINS(error, "training.mesh.pp: pp is 3; tp 1 x pp 3 must divide the 16 GPUs");
}

}  // namespace
}  // namespace ragged::scenarios
