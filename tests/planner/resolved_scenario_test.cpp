#include "planner/resolved_scenario.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "common/file_io.hpp"

namespace ragged::planner {
namespace {

std::string resolve_error(const std::string& text) {
  try {
    resolve_scenario(scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "s.textproto", RAGGED_SOURCE_DIR));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kCluster = "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n";

// torch.compile(model) with the loop computing the loss on the returned
// logits (compile_scope MODEL_WITHOUT_LOSS): the loss stays as declared;
// inside the compiled model (WHOLE_MODEL) Inductor lowers it as fused.
TEST(ResolvedScenario, ALossOutsideTheCompiledModelStaysEager) {
  auto kernels_of = [](const std::string& scope) {
    const std::string text = std::string("model { catalog: \"llama3-8b\" }\n") + kCluster +
                             "training { loss: LOG_SOFTMAX compiled: true compile_scope: " + scope + " }\n";
    return resolve_scenario(scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "s.textproto", RAGGED_SOURCE_DIR))
        .model.kernels;
  };
  EXPECT_EQ(models::effective_loss(kernels_of("MODEL_WITHOUT_LOSS")), models::LossKernel::kLogSoftmax);
  EXPECT_EQ(models::effective_loss(kernels_of("WHOLE_MODEL")), models::LossKernel::kFused);
}

// torch's loss_parallel runs its handlers' ops one by one in eager mode;
// compiled, Inductor fuses their element-wise chains, and the loss is held
// as aten's cross_entropy of the fp32 logits under vocabulary parallelism.
TEST(ResolvedScenario, LossParallelIsDecomposedOnlyWhenEager) {
  auto loss_of = [](const std::string& compile) {
    const std::string text = std::string("model { catalog: \"llama3-8b\" }\n") + kCluster +
                             "training { loss: LOSS_PARALLEL mesh { tp: 2 } " + compile + " }\n";
    return models::effective_loss(
        resolve_scenario(scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "s.textproto", RAGGED_SOURCE_DIR))
            .model.kernels);
  };
  EXPECT_EQ(loss_of(""), models::LossKernel::kLossParallel);
  EXPECT_EQ(loss_of("compiled: true compile_scope: MODEL_WITHOUT_LOSS"), models::LossKernel::kLossParallel);
  EXPECT_EQ(loss_of("compiled: true"), models::LossKernel::kFp32Logits);
}

// LOSS_PARALLEL needs logits sharded by vocabulary: one located error naming
// the field and the fix where they are not.
TEST(ResolvedScenario, LossParallelNeedsVocabularyShardedLogits) {
  const std::string head = std::string("model { catalog: \"llama3-8b\" }\n") + kCluster;
  for (const std::string mesh : {"", "mesh { tp: 2 vocabulary_parallel: false sequence_parallel: false }",
                                 "mesh { tp: 2 gathered_logits: true }"}) {
    const std::string error = resolve_error(head + "training { loss: LOSS_PARALLEL " + mesh + " }\n");
    EXPECT_NE(error.find("training.loss"), std::string::npos) << mesh << ": " << error;
    EXPECT_NE(error.find("use FP32_LOGITS otherwise"), std::string::npos) << error;
  }
  EXPECT_EQ(resolve_error(head + "training { loss: LOSS_PARALLEL mesh { tp: 2 } }\n"), "");
}

// training.experts needs a router, and a load a router can give: each
// mistake one located line naming the field and the fix.
TEST(ResolvedScenario, TheExpertLoadNeedsARouterAndFitsIt) {
  const std::string dense = std::string("model { catalog: \"llama3-8b\" }\n") + kCluster;
  const std::string error = resolve_error(dense + "training { experts { busiest_load: 2 } }\n");
  EXPECT_NE(error.find("training.experts"), std::string::npos) << error;
  EXPECT_NE(error.find("remove the experts block"), std::string::npos) << error;
  EXPECT_NE(resolve_error(dense + "training { experts { kernel: PADDED } }\n").find("no routed experts"),
            std::string::npos);
  EXPECT_NE(resolve_error(dense + "training { experts { epilogue: EAGER_EPILOGUE } }\n").find("no routed experts"),
            std::string::npos);
  const std::string moe = std::string("model { catalog: \"mixtral-8x7b\" }\n") + kCluster;
  const std::string over = resolve_error(moe + "training { experts { busiest_load: 4.5 } }\n");
  EXPECT_NE(over.find("training.experts.busiest_load"), std::string::npos) << over;
  EXPECT_NE(over.find("give 1 (balanced) to 4"), std::string::npos) << over;
  EXPECT_EQ(resolve_error(moe + "training { experts { busiest_load: 4 kernel: PADDED } }\n"), "");
  const ResolvedScenario r = resolve_scenario(scenarios::parse_scenario(
      moe + "training { experts { busiest_load: 2.5 kernel: PADDED } }\n", scenarios::ScenarioFormat::kText,
      "s.textproto", RAGGED_SOURCE_DIR));
  EXPECT_DOUBLE_EQ(r.model.kernels.expert_load, 2.5);
  EXPECT_EQ(r.model.kernels.expert_kernel, models::ExpertKernel::kPadded);
}

// training.experts.reduce: a dtype, for a model with routed experts, under a
// strategy that reduces unit by unit.
TEST(ResolvedScenario, TheExpertsReduceDtypeNeedsExpertsAndAnFsdpStrategy) {
  const std::string dense = std::string("model { catalog: \"llama3-8b\" }\n") + kCluster;
  EXPECT_NE(resolve_error(dense + "training { experts { reduce: BF16 } }\n").find("no routed experts"),
            std::string::npos);
  const std::string moe = std::string("model { catalog: \"mixtral-8x7b\" }\n") + kCluster;
  EXPECT_EQ(resolve_error(moe + "training { strategy: FSDP2 experts { reduce: BF16 } }\n"), "");
  const std::string megatron = resolve_error(moe + "training { strategy: MEGATRON_DDP experts { reduce: BF16 } }\n");
  EXPECT_NE(megatron.find("training.experts.reduce"), std::string::npos) << megatron;
  EXPECT_NE(megatron.find("use a strategy that reduces unit by unit (ragged, fsdp1, fsdp2, zero3)"), std::string::npos)
      << megatron;
  const std::string fsdp = resolve_error(moe + "training { strategy: MEGATRON experts { reduce: BF16 } }\n");
  EXPECT_NE(fsdp.find("training.experts.reduce"), std::string::npos) << fsdp;
  const std::string unknown = resolve_error(moe + "training { experts { reduce: 7 } }\n");
  EXPECT_NE(unknown.find("training.experts.reduce"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("FP32, BF16 or FP16"), std::string::npos) << unknown;
}

// training.experts.epilogue: Megatron-Core's eager epilogue reaches the
// model's kernel choices; an unknown value is one located line naming the fix.
TEST(ResolvedScenario, TheExpertEpilogueReachesTheKernelChoices) {
  const std::string oss = std::string("model { catalog: \"gpt-oss-20b\" }\n") + kCluster;
  const ResolvedScenario eager =
      resolve_scenario(scenarios::parse_scenario(oss + "training { experts { epilogue: EAGER_EPILOGUE } }\n",
                                                 scenarios::ScenarioFormat::kText, "s.textproto", RAGGED_SOURCE_DIR));
  EXPECT_EQ(eager.model.kernels.expert_epilogue, models::ExpertEpilogue::kEager);
  EXPECT_DOUBLE_EQ(eager.model.arch.glu_clamp, 7.0);
  const ResolvedScenario plain = resolve_scenario(
      scenarios::parse_scenario(oss, scenarios::ScenarioFormat::kText, "s.textproto", RAGGED_SOURCE_DIR));
  EXPECT_EQ(plain.model.kernels.expert_epilogue, models::ExpertEpilogue::kFused);
  const std::string unknown = resolve_error(oss + "training { experts { epilogue: 9 } }\n");
  EXPECT_NE(unknown.find("training.experts.epilogue"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("FUSED_EPILOGUE or EAGER_EPILOGUE"), std::string::npos) << unknown;
}

TEST(ResolvedScenario, EveryShippedScenarioResolves) {
  for (const auto& file : scenarios::shipped_scenarios()) {
    ResolvedScenario resolved = resolve_scenario(scenarios::load_scenario(file.name));
    EXPECT_GT(resolved.model.params(), 0) << file.name;
  }
}

TEST(ResolvedScenario, InlineModelMatchesEquivalentCatalogShape) {
  ResolvedScenario tiny = resolve_scenario(scenarios::load_scenario("tiny-llama-4xcpu"));
  EXPECT_EQ(tiny.model.arch.hidden, 256);
  EXPECT_EQ(tiny.model.arch.head_dim, 32);   // derived: hidden / heads
  EXPECT_EQ(tiny.model.units.size(), 6u);   // embed, 4 blocks, head
}

TEST(ResolvedScenario, UnknownCatalogModelIsLocated) {
  std::string error = resolve_error(std::string("model { catalog: \"llama4-8b\" }\n") + kCluster);
  EXPECT_NE(error.find("s.textproto:1:9: model.catalog:"), std::string::npos) << error;
  EXPECT_NE(error.find("llama3-8b"), std::string::npos) << error;
}

// model.layers keeps the first blocks of any source: same widths, same
// embedding and head, fewer blocks (and their sliding-window flags).
TEST(ResolvedScenario, LayersKeepsTheFirstBlocks) {
  auto resolve = [](const std::string& model) {
    return resolve_scenario(scenarios::parse_scenario(model + kCluster, scenarios::ScenarioFormat::kText,
                                                      "s.textproto", RAGGED_SOURCE_DIR));
  };
  const ResolvedScenario all = resolve("model { catalog: \"llama3-8b\" }\n");
  const ResolvedScenario two = resolve("model { catalog: \"llama3-8b\" layers: 2 }\n");
  EXPECT_EQ(two.model.arch.layers, 2);
  EXPECT_EQ(two.model.arch.hidden, all.model.arch.hidden);
  ASSERT_EQ(two.model.units.size(), 4u);  // embed, 2 blocks, head
  const int64_t block = all.model.units[1].params();
  EXPECT_EQ(two.model.params(), all.model.params() - 30 * block);
  EXPECT_EQ(two.model.units.back().params(), all.model.units.back().params());
  const ResolvedScenario gpt = resolve("model { catalog: \"gpt-oss-120b\" layers: 3 }\n");
  EXPECT_EQ(gpt.model.arch.sliding_layers.size(), 3u);
  EXPECT_TRUE(gpt.model.arch.is_moe_layer(0));
  // 0 keeps every layer; more than the model has, or fewer than 0, is located.
  EXPECT_EQ(resolve("model { catalog: \"llama3-8b\" layers: 0 }\n").model.params(), all.model.params());
  std::string error = resolve_error(std::string("model { catalog: \"llama3-8b\"\n  layers: 40 }\n") + kCluster);
  EXPECT_NE(error.find("s.textproto:2:3: model.layers: llama3-8b has 32 layers"), std::string::npos) << error;
  EXPECT_NE(resolve_error(std::string("model { catalog: \"llama3-8b\" layers: -1 }\n") + kCluster).find("model.layers"),
            std::string::npos);
}

TEST(ResolvedScenario, InvalidInlineNumbersAreLocated) {
  std::string error = resolve_error(std::string("model { inline_spec {\n  hidden_size: 256\n  num_layers: 0\n"
                                                "  vocab_size: 100 intermediate_size: 64 num_attention_heads: 4 } }\n") + kCluster);
  EXPECT_NE(error.find("s.textproto:3:3: model.inline_spec.num_layers:"), std::string::npos) << error;
}

TEST(ResolvedScenario, HfConfigRelativeToScenarioDirectory) {
  std::string text = std::string("model { hf_config: \"tests/models/data/llama/config.json\" }\n") + kCluster;
  ResolvedScenario resolved =
      resolve_scenario(scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "s.textproto", RAGGED_SOURCE_DIR));
  EXPECT_EQ(resolved.model.arch.hidden, 4096);
  std::string error = resolve_error(std::string("model { hf_config: \"missing/config.json\" }\n") + kCluster);
  EXPECT_NE(error.find("s.textproto:1:9: model.hf_config:"), std::string::npos) << error;
}

// The GPT-2 style families come from their config.json (their block forms
// and checkpoint names are not inline_spec fields); layers keeps their form.
TEST(ResolvedScenario, Gpt2StyleFamiliesComeFromTheirConfigJson) {
  std::string error = resolve_error(std::string("model { inline_spec {\n  family: \"gpt2\"\n  hidden_size: 256 "
                                                "num_layers: 2 vocab_size: 100 intermediate_size: 64 "
                                                "num_attention_heads: 4 } }\n") + kCluster);
  EXPECT_NE(error.find("s.textproto:2:3: model.inline_spec.family:"), std::string::npos) << error;
  EXPECT_NE(error.find("model.hf_config"), std::string::npos) << error;

  std::string text = std::string("model { hf_config: \"tests/models/data/falcon-40b/config.json\" layers: 2 }\n") +
                     kCluster;
  ResolvedScenario falcon =
      resolve_scenario(scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "s.textproto", RAGGED_SOURCE_DIR));
  EXPECT_EQ(falcon.model.arch.layers, 2);
  EXPECT_TRUE(falcon.model.arch.parallel_block);
  EXPECT_EQ(falcon.model.units[2].tensors.front().name, "h.1.ln_attn.weight");
}

TEST(ResolvedScenario, BlockThatDoesNotDivideATensorIsLocated) {
  std::string error = resolve_error(std::string("model { catalog: \"gpt-oss-20b\" }\n") + kCluster +
                                    "training {\n  granularity { default_spec { kind: BLOCK block_rows: 128 block_cols: 128 } }\n}\n");
  EXPECT_NE(error.find("s.textproto:4:17: training.granularity.default_spec: block 128x128 does not divide tensor"),
            std::string::npos) << error;
}

}  // namespace
}  // namespace ragged::planner
