// FSDP1's passes over a unit's unsharded gradients, simulated
// (docs/SIMULATOR.md section 7, "FSDP1's gradient passes"): autograd's cat of
// the per-parameter gradients (bf16 read and written), the cast to fp32, the
// pre-divide of the fp32 gradient in place and the post-divide of the
// reduced shard. Each is memory-bound: alone on the GPU it streams its bytes
// at the table's achieved HBM bandwidth after one launch; beside other
// memory-bound work or a collective it shares HBM and only runs slower.
// Written here from the model's sizes and the A100 table, not from the
// Program.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/compute_model.hpp"
#include "sim/simulation.hpp"
#include "sim/simulation_child.hpp"
#include "small_model.hpp"

namespace ragged::sim {
namespace {

using testing::kHidden;
using testing::kIntermediate;
using testing::kLayers;

planner::ResolvedScenario fsdp1_on_8_a100s() {
  const std::string text = testing::small_model_block() +
                           "cluster { gpu { preset: \"a100-80g\" } gpus_per_node: 8 nodes: 1 }\n"
                           "training { strategy: FSDP1 micro_batch_size: 1 sequence_length: 2048\n"
                           "           precision { param: BF16 reduce: FP32 master: FP32 } }\n";
  return planner::resolve_scenario(
      scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "fsdp1.textproto", "."));
}

double seconds_of(const traces::Event& e) { return 1e-9 * static_cast<double>(e.end_ns() - e.start_ns()); }

TEST(Fsdp1GradientPasses, EachPassStreamsItsBytesAndOnlySharingSlowsIt) {
  const planner::ResolvedScenario resolved = fsdp1_on_8_a100s();
  SimulationOptions options;
  options.host_issue = false;
  const SimulationResult result = simulate_in_child(resolved, options);
  const GpuComputeSpec& a100 = *find_gpu_table("a100-80g");
  const double rate = a100.hbm_bytes_per_s * a100.memory_efficiency;
  // A block's flat gradient: its matrices (attention 4 h^2, a gated MLP
  // 3 h i) and its two norms, padded to the 8 ranks.
  const int64_t block = 4 * kHidden * kHidden + 3 * kHidden * kIntermediate + 2 * kHidden;
  const int64_t padded = (block + 7) / 8 * 8;
  struct Pass {
    const char* suffix;
    int64_t bytes;
  };
  const Pass passes[] = {{" cat grads", padded * 2 * 2},
                         {" cast grads", padded * (2 + 4)},
                         {" pre-divide grads", padded * 4 * 2},  // 8 ranks: by 4, then by 2
                         {" post-divide grad shard", padded / 8 * 4 * 2}};
  int checked = 0, alone = 0;
  for (const traces::Event& e : result.trace.events()) {
    if (e.name().rfind("layers.", 0) != 0) continue;
    for (const Pass& pass : passes) {
      const std::string& name = e.name();
      if (!name.ends_with(pass.suffix)) continue;
      const double expected = static_cast<double>(pass.bytes) / rate + a100.launch_seconds;
      const double simulated = seconds_of(e);
      std::printf("%-32s %9lld B: simulated %.1f us, alone %.1f us (%lld B at %.0f%% of %.2f TB/s + a launch)\n",
                  name.c_str(), static_cast<long long>(e.bytes()), 1e6 * simulated, 1e6 * expected,
                  static_cast<long long>(pass.bytes), 100 * a100.memory_efficiency, a100.hbm_bytes_per_s / 1e12);
      EXPECT_EQ(e.bytes(), pass.bytes) << name;
      EXPECT_GE(simulated, 0.999 * expected) << name;
      if (simulated <= 1.001 * expected) ++alone;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4 * kLayers);
  EXPECT_GT(alone, 0) << "some pass runs alone at the table's rate";
}

}  // namespace
}  // namespace ragged::sim
