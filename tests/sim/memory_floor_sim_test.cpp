// The planner's memory floor (planner::memory_floor), which `ragged tune`
// prunes with, never exceeds what the simulator's caching allocator
// allocates at its peak, whatever the strategy, checkpointing, batch,
// prefetch and resharding: pruning by it discards only what cannot fit.

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "planner/memory_breakdown.hpp"
#include "planner/program_builder.hpp"
#include "planner/resolved_scenario.hpp"
#include "planner/scenario_plan.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::sim {
namespace {

constexpr const char* kTinyLlama =
    "model { inline_spec { hidden_size: 256 num_layers: 4 vocab_size: 1024 intermediate_size: 704\n"
    "                      num_attention_heads: 8 num_key_value_heads: 4 } }\n"
    "cluster { gpu { preset: \"h100\" } gpus_per_node: 4 nodes: 2 }\n";

TEST(MemoryFloor, NeverAboveTheSimulatedPeak) {
  int checked = 0;
  for (const char* strategy : {"RAGGED", "FSDP1", "FSDP2", "ZERO3", "MEGATRON"}) {
    for (const char* knobs : {"activation_checkpointing: NONE micro_batch_size: 2",
                              "activation_checkpointing: SELECTIVE gradient_accumulation_steps: 2 prefetch_depth: 2",
                              "activation_checkpointing: FULL reshard_after_forward: false shard_group_size: 4",
                              "optimizer { muon {} } shard_group_size: 2"}) {
      const std::string text =
          std::string(kTinyLlama) + "training { strategy: " + strategy + " sequence_length: 1024 " + knobs + " }\n";
      const planner::ResolvedScenario resolved = planner::resolve_scenario(
          scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "floor.textproto", "."));
      const planner::Plan plan = planner::plan_scenario(resolved);
      const planner::ProgramInputs inputs = planner::program_inputs(resolved, plan);
      const planner::MemoryFloor floor =
          planner::memory_floor(planner::build_program(inputs, planner::representative_rank(inputs)));
      const traces::Summary simulated = simulate_summary_in_child(resolved).summary;
      std::printf("%-8s %-95s floor %9lld  simulated allocated %9lld  reserved %9lld bytes\n", strategy, knobs,
                  static_cast<long long>(floor.total()), static_cast<long long>(simulated.peak_allocated_bytes()),
                  static_cast<long long>(simulated.peak_reserved_bytes()));
      EXPECT_GT(floor.compute_stream_buffers, 0) << strategy << " " << knobs;
      EXPECT_LE(floor.total(), simulated.peak_allocated_bytes()) << strategy << " " << knobs;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 20);
}

}  // namespace
}  // namespace ragged::sim
