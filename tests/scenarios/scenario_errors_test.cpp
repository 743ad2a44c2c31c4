// Every bad-input path of a scenario gives one error naming the file, the
// line and column, and the field path.

#include <gtest/gtest.h>

#include "scenario_test_util.hpp"

namespace ragged::scenarios {
namespace {

using testing::minimal_scenario;
using testing::parse_error;

std::string replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(ScenarioErrors, MinimalScenarioIsValid) { EXPECT_EQ(parse_error(minimal_scenario()), ""); }

TEST(ScenarioErrors, UnknownFieldNamesLineFieldAndAlternatives) {
  std::string error = parse_error(replace(minimal_scenario(), "  nodes: 2\n", "  nodes: 2\n  nodez: 3\n"));
  EXPECT_CONTAINS(error, "test.textproto:6:3: cluster.nodez:");
  EXPECT_CONTAINS(error, "unknown field 'nodez'");
  EXPECT_CONTAINS(error, "gpus_per_node");
}

TEST(ScenarioErrors, ZeroGpusPerNode) {
  std::string error = parse_error(replace(minimal_scenario(), "gpus_per_node: 8", "gpus_per_node: 0"));
  EXPECT_CONTAINS(error, "test.textproto:4:3: cluster.gpus_per_node:");
  EXPECT_CONTAINS(error, "gpus_per_node is 0; it must be a whole number from 1 to 1,024");
}

TEST(ScenarioErrors, ZeroNodes) {
  std::string error = parse_error(replace(minimal_scenario(), "nodes: 2", "nodes: 0"));
  EXPECT_CONTAINS(error, ":5:3: cluster.nodes:");
}

TEST(ScenarioErrors, MissingModel) {
  std::string error = parse_error(replace(minimal_scenario(), "model { catalog: \"llama3-8b\" }\n", ""));
  EXPECT_CONTAINS(error, "model: no model given");
}

TEST(ScenarioErrors, MissingGpu) {
  std::string error = parse_error(replace(minimal_scenario(), "  gpu { preset: \"h100\" }\n", ""));
  EXPECT_CONTAINS(error, "cluster.gpu: no GPU given");
  EXPECT_CONTAINS(error, "test.textproto:2:1:");  // the nearest written ancestor: cluster
}

TEST(ScenarioErrors, UnknownPresetListsPresets) {
  std::string error = parse_error(replace(minimal_scenario(), "\"h100\"", "\"h1000\""));
  EXPECT_CONTAINS(error, ":3:9: cluster.gpu.preset: unknown GPU preset 'h1000'");
  EXPECT_CONTAINS(error, "h800");
}

TEST(ScenarioErrors, BadEnumValue) {
  std::string error = parse_error(replace(minimal_scenario(), "strategy: FSDP2", "strategy: FSDP3"));
  EXPECT_CONTAINS(error, "test.textproto:8:3: training.strategy:");
  EXPECT_CONTAINS(error, "FSDP3");
}

TEST(ScenarioErrors, OutsideAllocatorMemoryMustLeaveTheAllocatorSome) {
  std::string error =
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "strategy: FSDP2\n  allocator { outside_gib: 80 }"));
  EXPECT_CONTAINS(error, "training.allocator.outside_gib:");
  EXPECT_CONTAINS(error, "leaves nothing of the GPU's 79.6 GiB");
  EXPECT_CONTAINS(error, "set it below that");
  const std::string negative =
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "strategy: FSDP2\n  allocator { outside_gib: -1 }"));
  EXPECT_CONTAINS(negative, "training.allocator.outside_gib:");
}

TEST(ScenarioErrors, ShardGroupMustDivideGpus) {
  std::string error =
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "strategy: FSDP2\n  shard_group_size: 3"));
  EXPECT_CONTAINS(error, ":9:3: training.shard_group_size:");
  EXPECT_CONTAINS(error, "must divide the 16 GPUs");
}

TEST(ScenarioErrors, HsdpGroupsMustMultiplyToGpus) {
  std::string error = parse_error(replace(minimal_scenario(), "strategy: FSDP2",
                                          "strategy: FSDP2\n  shard_group_size: 8\n  replicate_group_size: 4"));
  EXPECT_CONTAINS(error,
                  "training.replicate_group_size: shard_group_size 8 x replicate_group_size 4 is not the 16 GPUs");
}

TEST(ScenarioErrors, NegativeSequenceLength) {
  std::string error = parse_error(replace(minimal_scenario(), "strategy: FSDP2", "sequence_length: -5"));
  EXPECT_CONTAINS(error, ":8:3: training.sequence_length: sequence_length is -5");
}

TEST(ScenarioErrors, EightBitAdamRejectsElementGranularity) {
  std::string error =
      parse_error(replace(minimal_scenario(), "strategy: FSDP2",
                          "optimizer { adam8bit {} }\n  granularity { default_spec { kind: ELEMENT } }"));
  EXPECT_CONTAINS(error, "training.granularity.default_spec: 8-bit Adam quantizes 32x32 tiles");
}

TEST(ScenarioErrors, ShampooSettingsOutOfRangeNameTheField) {
  const std::string zero_eps =
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "optimizer { shampoo { epsilon: 0 } }"));
  EXPECT_CONTAINS(zero_eps, "training.optimizer.shampoo.epsilon: epsilon is 0; it must be a positive number");
  const std::string negative_lr =
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "optimizer { shampoo { lr: -0.1 } }"));
  EXPECT_CONTAINS(negative_lr, "training.optimizer.shampoo.lr: lr is -0.1; it must be a finite number >= 0");
  const std::string decay =
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "optimizer { shampoo { weight_decay: inf } }"));
  EXPECT_CONTAINS(decay, "training.optimizer.shampoo.weight_decay: weight_decay is inf");
  const std::string frequency = parse_error(
      replace(minimal_scenario(), "strategy: FSDP2", "optimizer { shampoo { precondition_frequency: 0 } }"));
  EXPECT_CONTAINS(frequency, "training.optimizer.shampoo.precondition_frequency: precondition_frequency is 0");
}

TEST(ScenarioErrors, FlashAttention3NeedsAHopperGpu) {
  const std::string a100 = parse_error(replace(replace(minimal_scenario(), "\"h100\"", "\"a100-80g\""),
                                               "strategy: FSDP2", "attention: FLASH_ATTENTION_3"));
  EXPECT_CONTAINS(a100,
                  ":8:3: training.attention: FLASH_ATTENTION_3 runs only on Hopper GPUs (h100, h100-sxm-95g, h200, "
                  "h800), not on cluster.gpu.preset 'a100-80g': use FLASH_ATTENTION_2");
  EXPECT_EQ(parse_error(replace(minimal_scenario(), "strategy: FSDP2", "attention: FLASH_ATTENTION_3")), "");
  EXPECT_EQ(parse_error(replace(minimal_scenario(), "strategy: FSDP2", "attention: MATH loss: CHUNKED")), "");
}

// A locked clock needs the preset's maximum clock, and no more than it.
TEST(ScenarioErrors, ALockedClockNeedsAKnownMaximumAndStaysUnderIt) {
  EXPECT_EQ(parse_error(replace(minimal_scenario(), "preset: \"h100\"", "preset: \"h100\" locked_clock_mhz: 1500")),
            "");
  EXPECT_CONTAINS(parse_error(replace(minimal_scenario(), "preset: \"h100\"",
                                      "preset: \"h100\" locked_clock_mhz: 2100")),
                  "cluster.gpu.locked_clock_mhz: locked_clock_mhz is 2100; the h100's maximum SM clock is 1980 MHz");
  EXPECT_CONTAINS(parse_error(replace(minimal_scenario(), "preset: \"h100\"",
                                      "preset: \"gb200\" locked_clock_mhz: 1500")),
                  "cluster.gpu.locked_clock_mhz: a locked clock needs the GPU's maximum SM clock, which preset 'gb200' "
                  "does not know");
}

// A full-mesh board holds every GPU of the node: no fewer GPUs than the node.
TEST(ScenarioErrors, AFullMeshBoardHoldsEveryGpuOfTheNode) {
  EXPECT_EQ(parse_error(replace(minimal_scenario(), "gpus_per_node: 8",
                                "gpus_per_node: 2\n  intra_node { full_mesh_gpus: 4 }")),
            "");
  EXPECT_CONTAINS(parse_error(replace(minimal_scenario(), "gpus_per_node: 8",
                                      "gpus_per_node: 8\n  intra_node { full_mesh_gpus: 4 }")),
                  "cluster.intra_node.full_mesh_gpus: full_mesh_gpus is 4, fewer than gpus_per_node (8)");
  EXPECT_CONTAINS(parse_error(replace(minimal_scenario(), "gpus_per_node: 8",
                                      "gpus_per_node: 1\n  intra_node { full_mesh_gpus: 1 }")),
                  "cluster.intra_node.full_mesh_gpus: full_mesh_gpus is 1; it must be");
}

// SDPA's cuDNN backend has measured rates on Hopper and Blackwell parts only.
TEST(ScenarioErrors, CudnnAttentionNeedsAHopperOrBlackwellGpu) {
  const std::string a100 = parse_error(replace(replace(minimal_scenario(), "\"h100\"", "\"a100-80g\""),
                                               "strategy: FSDP2", "attention: CUDNN_ATTENTION"));
  EXPECT_CONTAINS(a100,
                  ":8:3: training.attention: CUDNN_ATTENTION (measured rates) runs only on Hopper and Blackwell GPUs "
                  "(h100, h100-sxm-95g, h200, h800, b200, gb200), not on cluster.gpu.preset 'a100-80g': use "
                  "FLASH_ATTENTION_2");
  EXPECT_EQ(parse_error(replace(minimal_scenario(), "strategy: FSDP2", "attention: CUDNN_ATTENTION")), "");
  EXPECT_EQ(parse_error(replace(replace(minimal_scenario(), "\"h100\"", "\"gb200\""), "strategy: FSDP2",
                                "attention: CUDNN_ATTENTION")),
            "");
}

TEST(ScenarioErrors, CheckpointEveryNeedsFullCheckpointingAndAPositiveCount) {
  const std::string selective = parse_error(
      replace(minimal_scenario(), "strategy: FSDP2", "activation_checkpointing: SELECTIVE checkpoint_every: 2"));
  EXPECT_CONTAINS(selective,
                  "training.checkpoint_every: checkpoint_every 2 picks the blocks that full checkpointing "
                  "recomputes, but activation_checkpointing is not FULL: set activation_checkpointing: FULL");
  const std::string zero =
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "activation_checkpointing: FULL checkpoint_every: 0"));
  EXPECT_CONTAINS(zero, "training.checkpoint_every: checkpoint_every is 0");
  EXPECT_EQ(
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "activation_checkpointing: FULL checkpoint_every: 2")),
      "");
}

TEST(ScenarioErrors, ReturnedLogitsAndTheLoopsMetricsNeedLogitsToRead) {
  const std::string chunked =
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "loss: CHUNKED outputs { logits: true }"));
  EXPECT_CONTAINS(chunked,
                  "training.outputs.logits: the CHUNKED loss never makes the whole logits for the model to "
                  "return: set outputs.logits false, or use another loss");
  const std::string unheld = parse_error(
      replace(minimal_scenario(), "strategy: FSDP2", "loss: FUSED outputs { logits: true metric_cross_entropies: 2 }"));
  EXPECT_CONTAINS(unheld,
                  "training.outputs.metric_cross_entropies: the metrics read the returned logits after the "
                  "backward: set outputs.logits and outputs.held_until_next_forward true (Composer keeps "
                  "state.outputs), or set it to 0");
  const std::string many = parse_error(
      replace(minimal_scenario(), "strategy: FSDP2",
              "loss: FUSED outputs { logits: true held_until_next_forward: true metric_cross_entropies: 17 }"));
  EXPECT_CONTAINS(many, "training.outputs.metric_cross_entropies: metric_cross_entropies is 17");
  EXPECT_EQ(parse_error(replace(minimal_scenario(), "strategy: FSDP2",
                                "loss: FUSED outputs { logits: true held_until_next_forward: true "
                                "metric_cross_entropies: 2 }")),
            "");
  EXPECT_EQ(parse_error(replace(minimal_scenario(), "strategy: FSDP2", "loss: FUSED outputs { logits: true }")), "");
}

TEST(ScenarioErrors, GatheredLogitsNeedASplitHeadAndWholeLogits) {
  EXPECT_CONTAINS(parse_error(replace(minimal_scenario(), "strategy: FSDP2", "mesh { gathered_logits: true }")),
                  "training.mesh.gathered_logits: gathers the head's logits over tensor parallelism, but tp is 1");
  EXPECT_CONTAINS(parse_error(replace(minimal_scenario(), "strategy: FSDP2",
                                      "mesh { tp: 2 gathered_logits: true vocabulary_parallel: false "
                                      "sequence_parallel: false }")),
                  "training.mesh.gathered_logits: a replicated head computes its logits whole");
  EXPECT_CONTAINS(parse_error(replace(minimal_scenario(), "strategy: FSDP2",
                                      "loss: CHUNKED mesh { tp: 2 gathered_logits: true }")),
                  "training.mesh.gathered_logits: a chunked loss never makes the logits whole");
}

TEST(ScenarioErrors, CompileScopeNeedsCompiledAndAKnownValue) {
  const std::string eager =
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "compile_scope: TRANSFORMER_BLOCKS"));
  EXPECT_CONTAINS(eager,
                  "training.compile_scope: compile_scope TRANSFORMER_BLOCKS says what torch.compile covers, but "
                  "compiled is not true: set compiled: true, or remove compile_scope");
  const std::string unknown =
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "compiled: true compile_scope: 9"));
  EXPECT_CONTAINS(unknown,
                  "training.compile_scope: compile_scope is 9; use WHOLE_MODEL, TRANSFORMER_BLOCKS or MODEL_WITHOUT_LOSS");
  EXPECT_CONTAINS(parse_error(replace(minimal_scenario(), "strategy: FSDP2", "compile_scope: MODEL_WITHOUT_LOSS")),
                  "training.compile_scope: compile_scope MODEL_WITHOUT_LOSS says what torch.compile covers");
  EXPECT_EQ(
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "compiled: true compile_scope: TRANSFORMER_BLOCKS")),
      "");
  EXPECT_EQ(parse_error(replace(minimal_scenario(), "strategy: FSDP2", "compiled: true")), "");
}

TEST(ScenarioErrors, AdamWImplementationIsAKnownValueOnPlainAdamWOnly) {
  const auto with = [](const std::string& optimizer) {
    return parse_error(replace(minimal_scenario(), "strategy: FSDP2", "optimizer { " + optimizer + " }"));
  };
  EXPECT_CONTAINS(with("adamw { implementation: 7 }"),
                  "training.optimizer.adamw.implementation: implementation is 7; use FUSED_KERNEL, FOREACH or "
                  "PER_PARAMETER");
  EXPECT_CONTAINS(with("muon { adamw { implementation: FOREACH } }"),
                  "training.optimizer.muon.adamw.implementation: the kernels of an update are chosen for plain adamw "
                  "only; remove implementation here");
  for (const char* ok : {"FOREACH", "FUSED_KERNEL", "PER_PARAMETER"}) {
    EXPECT_EQ(with(std::string("adamw { implementation: ") + ok + " }"), "") << ok;
  }
}

TEST(ScenarioErrors, KernelValuesOutOfRangeNameTheField) {
  const std::string attention = parse_error(replace(minimal_scenario(), "strategy: FSDP2", "attention: 7"));
  EXPECT_CONTAINS(attention,
                  "training.attention: attention is 7; use MATH, FLASH_ATTENTION_2, FLASH_ATTENTION_3, "
                  "TRITON_FLASH_ATTENTION, MEMORY_EFFICIENT or CUDNN_ATTENTION");
  EXPECT_CONTAINS(parse_error(replace(minimal_scenario(), "strategy: FSDP2", "attention_mask: 5")),
                  "training.attention_mask: attention_mask is 5; use CAUSAL or DENSE");
  EXPECT_CONTAINS(parse_error(replace(minimal_scenario(), "strategy: FSDP2", "attention_mask: DENSE")),
                  "training.attention_mask: a DENSE mask is an attn_mask tensor, which FlashAttention's kernels do "
                  "not take (SDPA then runs its efficient backend): set attention: MEMORY_EFFICIENT");
  EXPECT_CONTAINS(parse_error(replace(minimal_scenario(), "strategy: FSDP2", "strategy: DDP optimizer_step: false")),
                  "training.optimizer_step: a loop without optimizer steps is modelled for FSDP1, FSDP2, RAGGED and "
                  "ZERO3 without pipeline stages");
  EXPECT_CONTAINS(parse_error(replace(minimal_scenario(), "strategy: FSDP2",
                                      "strategy: FSDP2 optimizer_step: false accumulation_gradient_sync: "
                                      "LAST_MICRO_BATCH")),
                  "training.accumulation_gradient_sync: without optimizer steps no gradient is ever reduced");
  EXPECT_EQ(parse_error(replace(minimal_scenario(), "strategy: FSDP2", "strategy: FSDP1 optimizer_step: false")), "");
  for (const char* kernel : {"MEMORY_EFFICIENT", "MATH"}) {
    EXPECT_EQ(parse_error(replace(minimal_scenario(), "strategy: FSDP2",
                                  std::string("attention: ") + kernel + " attention_mask: DENSE")),
              "")
        << kernel;
  }
  EXPECT_EQ(parse_error(replace(replace(minimal_scenario(), "\"h100\"", "\"a100-80g\""), "strategy: FSDP2",
                                "attention: TRITON_FLASH_ATTENTION")),
            "");
  const std::string loss = parse_error(replace(minimal_scenario(), "strategy: FSDP2", "loss: 9"));
  EXPECT_CONTAINS(loss, "training.loss: loss is 9; use FP32_LOGITS, FUSED, CHUNKED, SHIFTED_FP32_LOGITS, LOG_SOFTMAX or LOSS_PARALLEL");
  const std::string name = parse_error(replace(minimal_scenario(), "strategy: FSDP2", "loss: FUSSED"));
  EXPECT_CONTAINS(name, "training.loss:");
  EXPECT_CONTAINS(name, "FUSSED");
}

TEST(ScenarioErrors, RowsGranularityNeedsRows) {
  std::string error =
      parse_error(replace(minimal_scenario(), "strategy: FSDP2", "granularity { default_spec { kind: ROWS } }"));
  EXPECT_CONTAINS(error, "training.granularity.default_spec.rows: rows is 0");
}

TEST(ScenarioErrors, OverridePathHasIndexAndLine) {
  std::string error = parse_error(replace(minimal_scenario(), "strategy: FSDP2",
                                          "granularity {\n"
                                          "    overrides { pattern: \"*.a\" granularity { kind: ELEMENT } }\n"
                                          "    overrides { pattern: \"\" granularity { kind: ELEMENT } }\n"
                                          "  }"));
  EXPECT_CONTAINS(error, "test.textproto:10:17: training.granularity.overrides[1].pattern: empty pattern");
}

TEST(ScenarioErrors, SeveralProblemsReportTheFirstAndCount) {
  std::string error =
      parse_error(replace(replace(minimal_scenario(), "nodes: 2", "nodes: 0"), "gpus_per_node: 8", "gpus_per_node: 0"));
  EXPECT_CONTAINS(error, "cluster.gpus_per_node");
  EXPECT_CONTAINS(error, "(1 more problem)");
  // The other one is listed, located, on a line of its own.
  EXPECT_CONTAINS(error, "\n  and test.textproto:");
  EXPECT_CONTAINS(error, "cluster.nodes");
}

TEST(ScenarioErrors, SyntaxErrorHasPosition) {
  std::string error = parse_error("cluster {\n  nodes: 2\n");
  EXPECT_CONTAINS(error, "test.textproto:3:");
}

TEST(ScenarioErrors, JsonUnknownFieldHasPathAndLine) {
  std::string json =
      "{\n  \"model\": {\"catalog\": \"llama3-8b\"},\n  \"cluster\": {\n    \"gpu\": {\"preset\": \"h100\"},\n"
      "    \"gpusPerNode\": 8,\n    \"nodez\": 2\n  }\n}\n";
  std::string error = parse_error(json, ScenarioFormat::kJson);
  EXPECT_CONTAINS(error, "test.textproto:6:5: cluster.nodez: unknown field 'nodez'");
}

TEST(ScenarioErrors, JsonWrongTypeHasPathAndLine) {
  std::string json =
      "{\"model\": {\"catalog\": \"llama3-8b\"},\n \"cluster\": {\"gpu\": {\"preset\": \"h100\"},\n"
      "  \"gpus_per_node\": \"eight\", \"nodes\": 1}}";
  std::string error = parse_error(json, ScenarioFormat::kJson);
  EXPECT_CONTAINS(error, ":3:3: cluster.gpus_per_node:");
  EXPECT_CONTAINS(error, "eight");
}

TEST(ScenarioErrors, JsonCamelCaseValueErrorsUseProtoNames) {
  std::string json =
      "{\"model\": {\"catalog\": \"llama3-8b\"},\n \"cluster\": {\"gpu\": {\"preset\": \"h100\"},\n"
      "  \"gpusPerNode\": 0, \"nodes\": 1}}";
  std::string error = parse_error(json, ScenarioFormat::kJson);
  EXPECT_CONTAINS(error, ":3:3: cluster.gpus_per_node: gpus_per_node is 0");
}

TEST(ScenarioErrors, JsonUnknownTopLevelFieldHasItsLine) {
  std::string error = parse_error("{\"model\": {\"catalog\": \"llama3-8b\"},\n \"bogus\": 1}", ScenarioFormat::kJson);
  EXPECT_CONTAINS(error, "test.textproto:2:2: bogus: unknown field 'bogus'");
}

// A 30,000-character name used to overflow the stack (std::regex's recursion
// while explaining the parse error): now one error, the name shortened (the
// command line shortens the whole line: CliErrors.HostileInputsEndInOneShortLine).
TEST(ScenarioErrors, AHugeUnknownNameIsOneShortenedError) {
  const std::string name(30000, 'a');
  for (const auto& [text, format] :
       {std::pair{name + ": 1\n", ScenarioFormat::kText}, std::pair{"{\"" + name + "\": 1}", ScenarioFormat::kJson}}) {
    const std::string error = parse_error(text, format);
    EXPECT_CONTAINS(error, "unknown field 'aaaaaaaaaaaaaaaaaaaa...'");
  }
}

// Protobuf's text parser lets an invalid byte into a string; the simulation's
// trace then failed to serialize (an internal error). Refused at the field.
TEST(ScenarioErrors, InvalidUtf8InAStringNamesTheField) {
  std::string text = minimal_scenario();
  text = "name: \"bad\\377name\"\n" + text;
  EXPECT_CONTAINS(parse_error(text), ":1:1: name: name is not valid UTF-8 (byte 4 of 8): write the text as UTF-8");
}

// Every report prints the scenario's and the model's names: an ESC in one
// would colour or clear the reader's terminal (it passed validation before).
TEST(ScenarioErrors, AControlCharacterInAStringNamesTheField) {
  std::string text = minimal_scenario();
  text = "name: \"red\\x1b[31m\"\n" + text;
  EXPECT_CONTAINS(parse_error(text), ":1:1: name: name holds the control character \\x1b (byte 4 of 8): remove it");
  EXPECT_CONTAINS(parse_error("description: \"a\\xc2\\x9b2J\"\n" + minimal_scenario()),
                  "description holds the control character \\u009b (byte 2 of 5)");
  EXPECT_EQ(parse_error("description: \"two\\nlines\\tand a tab\"\n" + minimal_scenario()), "");
}

TEST(ScenarioErrors, MalformedJson) {
  std::string error = parse_error("{\"model\": ", ScenarioFormat::kJson);
  EXPECT_CONTAINS(error, "test.textproto");
  EXPECT_CONTAINS(error, "JSON");
}

TEST(ScenarioErrors, MissingFileAndUnknownName) {
  try {
    load_scenario("does/not/exist.textproto");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "does/not/exist.textproto");
  }
  try {
    load_scenario("llama9-8b-8xh100");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "llama3-8b-8xh100");
  }
}

}  // namespace
}  // namespace ragged::scenarios
