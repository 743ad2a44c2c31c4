// Strategy MEGATRON_DDP simulated (docs/SIMULATOR.md section 7, "Megatron's
// DDP and distributed optimizer"): every fp32 gradient byte reduce-scattered
// and every bf16 parameter byte all-gathered once a step over the
// data-parallel group, each ring sending (dp - 1) / dp of its buffer off a
// rank; overlapped buckets run beside the backward; a tp x pp x dp mesh
// simulates stage by stage.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/simulation.hpp"
#include "sim/simulation_child.hpp"
#include "small_model.hpp"

namespace ragged::sim {
namespace {

using testing::kHidden;
using testing::kIntermediate;
using testing::kLayers;
using testing::kParams;
using testing::kVocab;

planner::ResolvedScenario megatron_ddp(const std::string& fields, int nodes = 1) {
  const std::string text = testing::small_model_block() +
                           "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: " + std::to_string(nodes) +
                           " }\n"
                           "training { strategy: MEGATRON_DDP micro_batch_size: 2 sequence_length: 2048 " +
                           fields + " }\n";
  return planner::resolve_scenario(
      scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "megatron_ddp.textproto", "."));
}

struct Collectives {
  int64_t reduced = 0, gathered = 0;
  int reduce_scatters = 0;
  double reduce_seconds = 0, gather_seconds = 0;
  int64_t first_reduce_start = INT64_MAX, last_backward_end = 0;
};

Collectives collectives_of(const SimulationResult& result) {
  Collectives c;
  for (const traces::Event& e : result.trace.events()) {
    const double seconds = 1e-9 * static_cast<double>(e.end_ns() - e.start_ns());
    if (e.kind() == traces::COMPUTE_BWD) c.last_backward_end = std::max(c.last_backward_end, e.end_ns());
    if (e.name().find("dist-opt") == std::string::npos) continue;  // a tp group's collectives aside
    if (e.kind() == traces::REDUCE_SCATTER) {
      c.reduced += e.bytes();
      c.reduce_scatters += 1;
      c.reduce_seconds += seconds;
      c.first_reduce_start = std::min(c.first_reduce_start, e.start_ns());
    }
    if (e.kind() == traces::ALL_GATHER) {
      c.gathered += e.bytes();
      c.gather_seconds += seconds;
    }
  }
  return c;
}

TEST(DistOptSim, EveryGradientAndParameterByteCrossesTheDataParallelRingOnce) {
  const planner::ResolvedScenario resolved = megatron_ddp("");
  const SimulationResult result = simulate_in_child(resolved, SimulationOptions{});
  const Collectives c = collectives_of(result);
  // The buffers pad each parameter to 64 elements and the bucket to
  // lcm(8, 128): within a few thousand elements of the model.
  const double sent = static_cast<double>(c.reduced) * 7 / 8;
  const double link = resolved.scenario().cluster().intra_node().bandwidth_gbytes_per_s() * 1e9;
  std::printf(
      "reduce-scatter %lld bytes (fp32 gradients %lld), %.0f sent per rank, %.3f ms simulated against "
      "%.3f ms at the NVLink's %.0f GB/s; all-gather %lld bytes (bf16 parameters %lld), %.3f ms\n",
      static_cast<long long>(c.reduced), static_cast<long long>(kParams * 4), sent, 1e3 * c.reduce_seconds,
      1e3 * sent / link, link / 1e9, static_cast<long long>(c.gathered), static_cast<long long>(kParams * 2),
      1e3 * c.gather_seconds);
  EXPECT_EQ(c.reduce_scatters, 1);  // without overlap_grad_reduce: one bucket
  EXPECT_NEAR(static_cast<double>(c.reduced), kParams * 4.0, 64.0 * 4 * 64);
  EXPECT_EQ(c.gathered * 2, c.reduced);
  EXPECT_GE(c.reduce_seconds, sent / link);
  EXPECT_LT(c.reduce_seconds, 2 * sent / link);
  // After the backward: nothing to hide it behind.
  EXPECT_GE(c.first_reduce_start, c.last_backward_end);
}

TEST(DistOptSim, OverlappedBucketsRunBesideTheBackward) {
  const SimulationResult apart = simulate_in_child(megatron_ddp("", 2), SimulationOptions{});
  const SimulationResult overlapped = simulate_in_child(
      megatron_ddp("megatron_ddp { bucket_size: 4000000 overlap_grad_reduce: true overlap_param_gather: true }", 2),
      SimulationOptions{});
  const Collectives a = collectives_of(apart), o = collectives_of(overlapped);
  std::printf("2 nodes: step %.3f ms apart (exposed %.3f ms), %.3f ms overlapped in %d buckets (exposed %.3f ms)\n",
              1e3 * apart.trace.summary().step_time_s(), 1e3 * apart.trace.summary().exposed_comm_s(),
              1e3 * overlapped.trace.summary().step_time_s(), o.reduce_scatters,
              1e3 * overlapped.trace.summary().exposed_comm_s());
  EXPECT_GT(o.reduce_scatters, 2);
  EXPECT_LT(o.first_reduce_start, o.last_backward_end);
  EXPECT_EQ(a.reduced, o.reduced);
  EXPECT_LT(overlapped.trace.summary().exposed_comm_s(), apart.trace.summary().exposed_comm_s());
  EXPECT_LT(overlapped.trace.summary().step_time_s(), apart.trace.summary().step_time_s());
}

TEST(DistOptSim, TensorPipelineAndDataParallelMeshSimulatesEveryStage) {
  const SimulationResult result =
      simulate_in_child(megatron_ddp("gradient_accumulation_steps: 4 mesh { tp: 2 pp: 2 } "
                                     "megatron_ddp { overlap_grad_reduce: true overlap_param_gather: true }",
                                     2),
                        SimulationOptions{});
  const traces::Summary& s = result.trace.summary();
  ASSERT_EQ(s.stages_size(), 2);
  const Collectives c = collectives_of(result);
  std::printf(
      "tp 2 x pp 2 x dp 4 on 16 H100: step %.3f ms, pipeline wait %.3f ms, %lld bytes reduce-scattered "
      "over the traced stages\n",
      1e3 * s.step_time_s(), 1e3 * s.pipeline_wait_s(), static_cast<long long>(c.reduced));
  EXPECT_GT(s.step_time_s(), 0);
  EXPECT_GT(c.reduced, 0);
  EXPECT_GT(c.gathered, 0);
}

}  // namespace
}  // namespace ragged::sim
