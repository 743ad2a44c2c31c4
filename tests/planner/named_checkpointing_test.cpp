// SAVED_NAMES checkpointing from a scenario: the presets expanded, bad input
// refused by field, and the recompute of a block's backward equal to the
// forward FLOPs of exactly the ops it reruns.

#include <cstdio>

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "planner/checkpointing_plan.hpp"
#include "planner/compute_work.hpp"
#include "planner/resolved_scenario.hpp"

namespace ragged::planner {
namespace {

ResolvedScenario resolve(const std::string& training) {
  const std::string text = "model { catalog: \"llama3-70b\" }\n"
                           "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 8 }\n"
                           "training { micro_batch_size: 2 sequence_length: 4096 " + training + " }\n";
  return resolve_scenario(scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "s.textproto",
                                                    RAGGED_SOURCE_DIR));
}

std::string error_of(const std::string& training) {
  try {
    resolve(training);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(NamedCheckpointingScenario, PresetsExpandToTheWeightMatmuls) {
  const ResolvedScenario dots = resolve("activation_checkpointing: SAVED_NAMES saved_activations: DOTS");
  const ResolvedScenario no_batch = resolve("activation_checkpointing: SAVED_NAMES saved_activations: DOTS_NO_BATCH_DIMS");
  const ResolvedScenario named = resolve(
      "activation_checkpointing: SAVED_NAMES saved_activations: [QKV_PROJ, OUT_PROJ, MLP_IN, MLP_OUT]");
  ASSERT_TRUE(dots.model.kernels.saved_names.has_value());
  // Under a fused attention kernel the attention is no dot: the two presets agree.
  EXPECT_EQ(dots.model.kernels.saved_names, no_batch.model.kernels.saved_names);
  EXPECT_EQ(dots.model.kernels.saved_names, named.model.kernels.saved_names);
  EXPECT_EQ(checkpointing_mode(scenarios::SAVED_NAMES), models::Checkpointing::kSelective);
  EXPECT_FALSE(resolve("activation_checkpointing: SELECTIVE").model.kernels.saved_names.has_value());
}

TEST(NamedCheckpointingScenario, BadInputIsRefusedByField) {
  EXPECT_NE(error_of("activation_checkpointing: SAVED_NAMES attention: MATH saved_activations: DOTS")
                .find("training.saved_activations[0]"),
            std::string::npos);
  EXPECT_NE(error_of("activation_checkpointing: FULL saved_activations: QKV_PROJ").find("training.saved_activations"),
            std::string::npos);
  EXPECT_NE(error_of("activation_checkpointing: SAVED_NAMES saved_activations: SAVED_ACTIVATION_UNSPECIFIED")
                .find("training.saved_activations[0]"),
            std::string::npos);
}

// Llama-2-70B's block (Llama-3-70B's) at 2 x 4096 tokens under MaxText's
// custom policy: the attention, gate and up are rerun; q, k, v, o and down not.
TEST(NamedCheckpointingScenario, RecomputeIsTheRerunOpsForward) {
  const ResolvedScenario r =
      resolve("activation_checkpointing: SAVED_NAMES saved_activations: [QKV_PROJ, OUT_PROJ, MLP_OUT]");
  const models::UnitSpec& block = r.model.units[1];
  const MicroBatch batch{2, 4096, true, r.model.kernels};
  const double tokens = 2 * 4096, h = 8192, ffn = 28672;
  const double attention = block.compute.attention->forward_flops_per_token(4096) * tokens;
  const double expected = 2 * (2 * tokens * h * ffn) + attention;
  const ComputeWork work = recompute_work(block, batch, models::Checkpointing::kSelective);
  std::printf("llama-2-70b block recompute, MaxText custom: %.4e FLOPs (gate + up %.4e + attention %.4e)\n",
              total_flops(work), 4 * tokens * h * ffn, attention);
  EXPECT_DOUBLE_EQ(total_flops(work), expected);
  // Everything named: nothing rerun; nothing named: the forward but the down projection.
  const ResolvedScenario all = resolve(
      "activation_checkpointing: SAVED_NAMES saved_activations: [NORM_OUT, QKV_PROJ, ATTENTION_OUT, OUT_PROJ, "
      "RESIDUAL, MLP_IN, MLP_PRODUCT, MLP_OUT]");
  EXPECT_DOUBLE_EQ(total_flops(recompute_work(all.model.units[1], batch, models::Checkpointing::kSelective)), 0);
  EXPECT_DOUBLE_EQ(recompute_work(all.model.units[1], batch, models::Checkpointing::kSelective).elementwise_bytes, 0);
  const ResolvedScenario none = resolve("activation_checkpointing: SAVED_NAMES");
  const double full = total_flops(forward_work(none.model.units[1], batch));
  EXPECT_DOUBLE_EQ(total_flops(recompute_work(none.model.units[1], batch, models::Checkpointing::kSelective)),
                   full - 2 * tokens * ffn * h);
}

}  // namespace
}  // namespace ragged::planner
