// Strategy DDP simulated (docs/SIMULATOR.md section 7, "DDP"): every
// gradient byte is all-reduced once a step over the replicas, in buckets that
// run beside the rest of the backward; on one GPU nothing is reduced.

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

planner::ResolvedScenario ddp_on(int gpus) {
  const std::string text =
      testing::small_model_block() + "cluster { gpu { preset: \"a100-80g\" } gpus_per_node: " + std::to_string(gpus) +
      " nodes: 1 }\n"
      "training { strategy: DDP ddp { bucket_cap_mb: 4 } micro_batch_size: 2 sequence_length: 2048\n"
      "           precision { param: BF16 master: FP32 } }\n";
  return planner::resolve_scenario(
      scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "ddp.textproto", "."));
}

TEST(DdpSim, EveryGradientByteIsAllReducedOnceBesideTheBackward) {
  const SimulationResult result = simulate_in_child(ddp_on(8), SimulationOptions{});
  int64_t reduced = 0;
  int buckets = 0;
  int64_t first_reduce_start = INT64_MAX, last_backward_end = 0, last_reduce_end = 0;
  double reduce_seconds = 0;
  for (const traces::Event& e : result.trace.events()) {
    if (e.kind() == traces::ALL_REDUCE) {
      reduced += e.bytes();
      ++buckets;
      first_reduce_start = std::min(first_reduce_start, e.start_ns());
      last_reduce_end = std::max(last_reduce_end, e.end_ns());
      reduce_seconds += 1e-9 * static_cast<double>(e.end_ns() - e.start_ns());
    }
    if (e.kind() == traces::COMPUTE_BWD) last_backward_end = std::max(last_backward_end, e.end_ns());
    EXPECT_NE(e.kind(), traces::ALL_GATHER) << e.name();
    EXPECT_NE(e.kind(), traces::REDUCE_SCATTER) << e.name();
  }
  const traces::Summary& s = result.trace.summary();
  std::printf(
      "all-reduced %lld bytes in %d buckets (the fp32 gradients: %lld bytes), %.2f ms of all-reduce, "
      "%.2f ms exposed, backward ends %.2f ms, last all-reduce %.2f ms\n",
      static_cast<long long>(reduced), buckets, static_cast<long long>(kParams * 4), 1e3 * reduce_seconds,
      1e3 * s.exposed_comm_s(), 1e-6 * static_cast<double>(last_backward_end),
      1e-6 * static_cast<double>(last_reduce_end));
  EXPECT_EQ(reduced, kParams * 4);
  EXPECT_GT(buckets, 2);
  // The first buckets are reduced while the backward still runs, so less
  // than the all-reduces' time is exposed.
  EXPECT_LT(first_reduce_start, last_backward_end);
  EXPECT_LT(s.exposed_comm_s(), reduce_seconds);
}

TEST(DdpSim, OneGpuRunsNoCollective) {
  const SimulationResult result = simulate_in_child(ddp_on(1), SimulationOptions{});
  for (const traces::Event& e : result.trace.events()) {
    EXPECT_NE(e.kind(), traces::ALL_REDUCE) << e.name();
    EXPECT_NE(e.kind(), traces::ALL_GATHER) << e.name();
  }
  EXPECT_EQ(result.trace.summary().comm_s(), 0.0);
}

}  // namespace
}  // namespace ragged::sim
