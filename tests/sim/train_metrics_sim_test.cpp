// The training loop's metrics over the logits, simulated (docs/SIMULATOR.md
// section 7, "The training loop's metrics"): Composer updating llm-foundry's
// MPT train metrics on every micro-batch, two cross-entropies over the bf16
// logits under autocast (cast to fp32, log-softmax: 14 bytes an element
// each) plus their small ops. On one GPU the step has no collective to hide
// them behind, and without the CPU issue path no host time for them to
// overlap; FSDP1's root fence makes them wait for the micro-batch's
// reductions and the next all-gathers wait for them, so the step grows by
// their memory time and launches: within 1%, and not less. Written here from
// the model's sizes and the A100 table's bandwidth, not from the Program.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/compute_model.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::sim {
namespace {

std::string scenario(const std::string& outputs) {
  return "model { inline_spec { hidden_size: 256 num_layers: 4 vocab_size: 32768 intermediate_size: 704\n"
         "                      num_attention_heads: 8 num_key_value_heads: 8 } }\n"
         "cluster { gpu { preset: \"a100-80g\" } gpus_per_node: 1 nodes: 1 }\n"
         "training { strategy: FSDP1 micro_batch_size: 4 sequence_length: 2048 gradient_accumulation_steps: 2\n"
         "           loss: FUSED " + outputs + " }\n";
}

double step_seconds(const std::string& text) {
  const planner::ResolvedScenario resolved = planner::resolve_scenario(
      scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "metrics.textproto", "."));
  SimulationOptions options;
  options.host_issue = false;
  return simulate_summary_in_child(resolved, options).summary.step_time_s();
}

TEST(TrainMetrics, StepGrowsByTheMetricsMemoryTimeAndLaunches) {
  const double plain = step_seconds(scenario("outputs { logits: true held_until_next_forward: true }"));
  const double with_metrics = step_seconds(
      scenario("outputs { logits: true held_until_next_forward: true metric_cross_entropies: 2 }"));
  const GpuComputeSpec& a100 = *find_gpu_table("a100-80g");
  const double elements = 4.0 * 2048.0 * 32768.0;
  const double bytes = 2.0 * elements * 14.0;
  const double per_micro_batch = bytes / (a100.hbm_bytes_per_s * a100.memory_efficiency) +
                                 (3 + 2 * 7) * a100.launch_seconds;
  const double expected = 2.0 * per_micro_batch;
  const double grown = with_metrics - plain;
  std::printf("step %.3f ms without the metrics, %.3f ms with; grown %.3f ms, expected 2 x (%.1f GB at %.0f%% of "
              "%.2f TB/s + 17 launches) = %.3f ms (%+.2f%%)\n",
              1e3 * plain, 1e3 * with_metrics, 1e3 * grown, bytes / 1e9, 100 * a100.memory_efficiency,
              a100.hbm_bytes_per_s / 1e12, 1e3 * expected, 100 * (grown / expected - 1));
  EXPECT_GE(grown, expected);
  EXPECT_LE(grown, 1.01 * expected);
}

}  // namespace
}  // namespace ragged::sim
