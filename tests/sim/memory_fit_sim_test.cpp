// What did not fit and what would (sim/memory_fit.hpp): on Llama-3-8B with
// no checkpointing and four sequences of 8,192 tokens a micro-step, out of
// memory on 8 H100s, the changes found to fit do fit when simulated again,
// the ones discarded by their floor cannot, and the parts named add up to
// the planner's peak.

#include <string>

#include <gtest/gtest.h>

#include "planner/memory_breakdown.hpp"
#include "planner/program_builder.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/memory_fit.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::sim {
namespace {

planner::ResolvedScenario llama_8b(const std::string& training) {
  const std::string text =
      "model { catalog: \"llama3-8b\" }\n"
      "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n"
      "training { strategy: FSDP2 sequence_length: 8192 " + training + " }\n";
  return planner::resolve_scenario(scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "fit.textproto", "."));
}

TEST(MemoryFit, FixesThatFitDoFitAndTheDiscardedCannot) {
  const planner::ResolvedScenario oom = llama_8b("activation_checkpointing: NONE micro_batch_size: 4");
  ASSERT_TRUE(simulate_summary_in_child(oom).summary.oom());
  const MemoryFixes fixes = find_memory_fixes(oom, {});
  EXPECT_EQ(fixes.capacity_bytes, scenarios::allocator_capacity_bytes(oom.scenario()));
  ASSERT_FALSE(fixes.fitting().empty());
  bool full_checkpointing = false;
  for (const MemoryFix& fix : fixes.tried) {
    EXPECT_FALSE(fix.flags.empty());
    if (fix.flags == "--checkpointing full") full_checkpointing = true;
    if (!fix.simulated) {
      EXPECT_GT(fix.floor_bytes, fixes.capacity_bytes) << fix.flags;
    } else if (fix.fits()) {
      EXPECT_LE(fix.peak_reserved_bytes, fixes.capacity_bytes) << fix.flags;
      EXPECT_GT(fix.tokens_per_s_per_gpu, 0) << fix.flags;
    }
  }
  EXPECT_TRUE(full_checkpointing);
  // The same change written into the scenario fits when simulated again.
  const planner::ResolvedScenario checkpointed = llama_8b("activation_checkpointing: FULL micro_batch_size: 4");
  EXPECT_FALSE(simulate_summary_in_child(checkpointed).summary.oom());
}

TEST(MemoryFit, PartsAreThePlannersPeakLargestFirst) {
  const planner::ResolvedScenario oom = llama_8b("activation_checkpointing: NONE micro_batch_size: 4");
  const std::vector<MemoryPart> parts = memory_parts_at_peak(oom);
  ASSERT_FALSE(parts.empty());
  EXPECT_EQ(parts.front().what, "activations");
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_GT(parts[i].bytes, 0);
    if (i > 0) {
      EXPECT_GE(parts[i - 1].bytes, parts[i].bytes);
    }
    total += parts[i].bytes;
  }
  const planner::MemoryBreakdown m =
      planner::memory_breakdown(planner::build_scenario_programs(oom).programs.front());
  EXPECT_EQ(total, m.persistent.total() + m.unsharded_params + m.gradients_in_flight + m.activations + m.workspace +
                       m.grad_shards + m.model_outputs);
}

TEST(MemoryFit, NothingStrongerToTryWhenTheStateAloneIsOver) {
  // 70B on one GPU: no checkpointing, micro-batch or 8x the GPUs brings the
  // sharded state under 80 GiB, and nothing is simulated for it.
  const std::string text =
      "model { catalog: \"llama3-70b\" }\n"
      "cluster { gpu { preset: \"h100\" } gpus_per_node: 1 nodes: 1 }\n"
      "training { activation_checkpointing: FULL }\n";
  const planner::ResolvedScenario oom =
      planner::resolve_scenario(scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "big.textproto", "."));
  const MemoryFixes fixes = find_memory_fixes(oom, {});
  EXPECT_TRUE(fixes.fitting().empty());
  for (const MemoryFix& fix : fixes.tried) EXPECT_FALSE(fix.simulated) << fix.flags;
}

// Under ep a mixture of experts' layer can be recomputed alone (Megatron's
// --recompute-modules moe): the mildest checkpointing change, tried first.
// GPT-OSS 20B at 32K tokens under selective checkpointing needs about 188 GiB
// a GPU, about 138 with the experts' own FULL, on a 160 GiB part.
TEST(MemoryFit, UnderEpTheExpertsOwnRecomputeIsTriedFirst) {
  const std::string head =
      "model { catalog: \"gpt-oss-20b\" }\n"
      "cluster { gpu { preset: \"h100\" hbm_capacity_gib: 160 } gpus_per_node: 8 nodes: 1 }\n"
      "training { sequence_length: 32768 activation_checkpointing: SELECTIVE mesh { ep: 8 } ";
  auto resolve = [&](const std::string& more) {
    return planner::resolve_scenario(
        scenarios::parse_scenario(head + more + " }\n", scenarios::ScenarioFormat::kText, "moe.textproto", "."));
  };
  const planner::ResolvedScenario oom = resolve("");
  ASSERT_TRUE(simulate_summary_in_child(oom).summary.oom());
  const MemoryFixes fixes = find_memory_fixes(oom, {});
  ASSERT_FALSE(fixes.tried.empty());
  EXPECT_EQ(fixes.tried.front().flags, "--set training.experts.checkpointing=FULL");
  EXPECT_TRUE(fixes.tried.front().fits());
  // Already set: not offered again.
  const planner::ResolvedScenario set = resolve("experts { checkpointing: FULL }");
  for (const MemoryFix& fix : find_memory_fixes(set, {}).tried) {
    EXPECT_NE(fix.flags, "--set training.experts.checkpointing=FULL");
  }
}

}  // namespace
}  // namespace ragged::sim
