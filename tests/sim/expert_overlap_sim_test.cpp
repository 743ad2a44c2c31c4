// training.experts.overlap_all_to_all simulated: the combined 1F1B step runs
// each pass's expert all-to-alls beside the other pass's compute, so a step
// whose dispatch and combine cross a slow network exposes less of them and
// ends sooner; the kernels slow down while the all-to-alls hold SMs, so the
// compute stream's busy time grows instead of the overlap being free.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/simulation.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::sim {
namespace {

// A small Qwen3 MoE on 4 nodes of 4 H100 at 100 Gb/s a NIC: pp 2 (two chunks
// a rank) x ep 8, the experts' all-to-alls across nodes.
traces::Summary simulated(bool overlap) {
  const std::string text =
      "model { inline_spec { family: \"qwen3_moe\" hidden_size: 1024 num_layers: 8 vocab_size: 4096\n"
      "  intermediate_size: 2048 num_attention_heads: 8 num_key_value_heads: 4 head_dim: 128\n"
      "  num_experts: 16 experts_per_token: 4 moe_intermediate_size: 512 } }\n"
      "cluster { gpu { preset: \"h100\" } gpus_per_node: 4 nodes: 4 nics { per_node: 4 bandwidth_gbits_per_s: 100 } }\n"
      "training { strategy: MEGATRON_DDP micro_batch_size: 1 sequence_length: 4096 gradient_accumulation_steps: 8\n"
      "  mesh { ep: 8 pp: 2 expert_tp: 1 } pipeline { schedule: INTERLEAVED_1F1B virtual_stages: 2 }\n"
      "  experts { overlap_all_to_all: " +
      std::string(overlap ? "true" : "false") + " } }\n";
  const planner::ResolvedScenario resolved = planner::resolve_scenario(
      scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "overlap_sim.textproto", "."));
  return simulate_in_child(resolved, SimulationOptions{}).trace.summary();
}

TEST(ExpertOverlapSim, TheCombinedStepHidesAllToAllsBehindTheOtherPassesCompute) {
  const traces::Summary plain = simulated(false);
  const traces::Summary overlapped = simulated(true);
  std::printf(
      "step %.1f ms -> %.1f ms with the overlap; exposed communication %.1f -> %.1f ms; compute busy %.1f -> "
      "%.1f ms\n",
      1e3 * plain.step_time_s(), 1e3 * overlapped.step_time_s(), 1e3 * plain.exposed_comm_s(),
      1e3 * overlapped.exposed_comm_s(), 1e3 * plain.compute_s(), 1e3 * overlapped.compute_s());
  EXPECT_LT(overlapped.exposed_comm_s(), 0.9 * plain.exposed_comm_s());
  EXPECT_LT(overlapped.step_time_s(), plain.step_time_s());
  // The all-to-alls' SMs slow the kernels that run beside them.
  EXPECT_GT(overlapped.compute_s(), plain.compute_s());
  // Nothing runs faster than its kernels.
  EXPECT_GT(overlapped.step_time_s(), overlapped.compute_s());
}

}  // namespace
}  // namespace ragged::sim
