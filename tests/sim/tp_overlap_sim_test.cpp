// Overlapped tensor parallelism simulated (docs/SIMULATOR.md section 11,
// "Overlapped tensor parallelism"): the chunked Program hides tp time behind
// the GEMMs, never more than the tp collectives took when run whole, and the
// copy engines' transfers leave the SMs to the GEMMs where Transformer
// Engine's kernels take some.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/simulation.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::sim {
namespace {

// Two Llama-3-8B-wide blocks at tp 8 on one node of H100s, 8 x 8,192 tokens
// (the regime torchtitan's async TP runs measured: 12 x 8,192 a micro-batch).
planner::ResolvedScenario tensor_parallel(const std::string& overlap) {
  const std::string text =
      "model { inline_spec { hidden_size: 4096 num_layers: 2 vocab_size: 32768 intermediate_size: 14336\n"
      "                      num_attention_heads: 32 num_key_value_heads: 8 } }\n"
      "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n"
      "training { strategy: FSDP2 micro_batch_size: 8 sequence_length: 8192 mesh { tp: 8 tp_overlap: " +
      overlap + " } }\n";
  return planner::resolve_scenario(
      scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "tp_overlap.textproto", "."));
}

struct Step {
  double step = 0, exposed = 0, compute = 0;
  double tp_busy = 0;  // the tp stream's events summed
};

Step simulated(const std::string& overlap) {
  const SimulationResult result = simulate_in_child(tensor_parallel(overlap), SimulationOptions{});
  Step s;
  s.step = result.trace.summary().step_time_s();
  s.exposed = result.trace.summary().exposed_comm_s();
  s.compute = result.trace.summary().compute_s();
  for (const traces::Event& e : result.trace.events()) {
    if (e.stream() == traces::TENSOR_PARALLEL_STREAM) s.tp_busy += 1e-9 * static_cast<double>(e.end_ns() - e.start_ns());
  }
  return s;
}

TEST(TpOverlapSim, ChunkedCollectivesHideTensorParallelTimeBehindTheGemms) {
  const Step whole = simulated("TP_OVERLAP_NONE");
  const Step async = simulated("ASYNC_TP");
  const Step userbuffers = simulated("USERBUFFERS");
  for (const auto& [name, s] : {std::pair{"whole", whole}, {"async TP", async}, {"userbuffers", userbuffers}}) {
    std::printf("%-12s step %.2f ms, exposed %.2f ms, compute busy %.2f ms, tp stream busy %.2f ms\n", name,
                1e3 * s.step, 1e3 * s.exposed, 1e3 * s.compute, 1e3 * s.tp_busy);
  }
  for (const Step& s : {async, userbuffers}) {
    // Faster, with less of the step waiting on communication ...
    EXPECT_LT(s.step, whole.step);
    EXPECT_LT(s.exposed, whole.exposed);
    // ... but what it saves is at most the tp time the whole collectives took.
    EXPECT_GE(s.step, whole.step - whole.tp_busy);
    // The chunks' smaller GEMMs and PyTorch's local sums cost compute.
    EXPECT_GT(s.compute, whole.compute);
  }
  // The same bytes cross NVLink either way: the tp stream is busy about as
  // long (within the latency the extra steps add and the HBM they share).
  EXPECT_NEAR(async.tp_busy / whole.tp_busy, 1.0, 0.35);
}

}  // namespace
}  // namespace ragged::sim
