// What-ifs on whole steps of a shipped scenario (one child process each):
// Llama-3-70B on 128 H100 (16 nodes) under FSDP alone (the shipped
// scenario's tensor parallelism taken out), compute-bound at 8,192 tokens per
// GPU and communication-bound at 1,024. The exact checks against hand-computed
// expectations are in whatif_model_test.cpp; these show the effects at scale
// and check them against the mechanisms' bounds.

#include <cstdio>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::sim {
namespace {

using Edit = std::function<void(scenarios::Scenario&)>;

SimulationResult simulate_llama70b(int32_t sequence_length, const Edit& edit) {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario("llama3-70b-10240xh100"), 128);
  loaded.written.mutable_training()->clear_mesh();
  loaded.written.mutable_training()->set_sequence_length(sequence_length);
  edit(loaded.written);
  loaded = scenarios::rebuild(std::move(loaded));
  return simulate_in_child(planner::resolve_scenario(std::move(loaded)), {});
}

Edit slow_gpus(int32_t count, double fraction) {
  return [=](scenarios::Scenario& s) {
    s.mutable_whatif()->mutable_slow_gpus()->set_count(count);
    s.mutable_whatif()->mutable_slow_gpus()->set_fraction(fraction);
  };
}

Edit slow_links(int32_t count, double fraction) {
  return [=](scenarios::Scenario& s) {
    s.mutable_whatif()->mutable_slow_links()->set_count(count);
    s.mutable_whatif()->mutable_slow_links()->set_fraction(fraction);
  };
}

TEST(WhatIfSimulation, OneGpuAtHalfSpeedSlowsAComputeBoundStepTowardTwice) {
  // The collectives wait for their last member, so one GPU at half its
  // compute rate paces every rank: the step is the one of a cluster whose
  // GPUs all run at half speed, between 1.5x (only the GEMMs and attention
  // slow down: memory-bound kernels keep their rate) and 2x the healthy one.
  const SimulationResult one = simulate_llama70b(8192, slow_gpus(1, 0.5));
  const SimulationResult all = simulate_llama70b(8192, slow_gpus(128, 0.5));
  const double healthy = one.stats.whatif.healthy_step_seconds;
  const double step = one.trace.summary().step_time_s(), all_slow = all.trace.summary().step_time_s();
  std::printf("one GPU at 0.5 of 128: healthy %.6f s, one slow %.6f s (%.3fx), every GPU slow %.6f s (%.3fx), "
              "relative %+.1e\n",
              healthy, step, step / healthy, all_slow, all_slow / healthy, (step - all_slow) / all_slow);
  std::fflush(stdout);
  EXPECT_GE(step / healthy, 1.5);
  EXPECT_LE(step / healthy, 2.0);
  EXPECT_NEAR(step, all_slow, 0.01 * all_slow);
  ASSERT_EQ(one.stats.whatif.ranks.size(), 2u);
  EXPECT_EQ(one.stats.whatif.critical, 1);
  EXPECT_EQ(one.stats.whatif.ranks[1].run.rank.compute_rate, 0.5);
  EXPECT_GT(one.stats.whatif.ranks[1].last_arrivals, one.stats.whatif.collectives * 9 / 10);
}

TEST(WhatIfSimulation, SlowNicMattersWhereCommunicationIsExposed) {
  // One node's NICs at half their bandwidth: its ring hops take twice as long.
  // Where the collectives hide behind compute that costs a little (their
  // CTAs are held longer); where they are exposed the step follows them.
  struct Case {
    const char* what;
    int32_t sequence_length;
  };
  double slowdowns[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const Case c = i == 0 ? Case{"compute-bound (8,192 tokens)", 8192} : Case{"communication-bound (1,024 tokens)", 1024};
    const SimulationResult r = simulate_llama70b(c.sequence_length, slow_links(1, 0.5));
    const SimulationResult healthy = simulate_llama70b(c.sequence_length, [](scenarios::Scenario&) {});
    const traces::Summary& h = healthy.trace.summary();
    slowdowns[i] = r.trace.summary().step_time_s() / h.step_time_s();
    std::printf("slow NIC at 0.5, %s: healthy %.6f s, exposed communication %.1f%%, communication busy %.1f%% of compute "
                "busy; slow %.6f s, %.3fx; bottleneck %s in %d of %d collectives\n",
                c.what, h.step_time_s(), 100 * h.exposed_comm_s() / h.step_time_s(), 100 * h.comm_s() / h.compute_s(),
                r.trace.summary().step_time_s(), slowdowns[i], describe_link(r.stats.whatif.bottleneck.endpoint).c_str(),
                r.stats.whatif.bottleneck.collectives, r.stats.whatif.collectives);
    std::fflush(stdout);
    EXPECT_NEAR(r.stats.whatif.healthy_step_seconds, h.step_time_s(), 1e-9 * h.step_time_s());
    EXPECT_EQ(r.stats.whatif.bottleneck.rate, 0.5);
  }
  EXPECT_LT(slowdowns[0], 1.1);
  EXPECT_GT(slowdowns[1], 1.5);
}

TEST(WhatIfSimulation, SymmetricModeAskedForRunsFull) {
  SimulationOptions options;
  options.mode = ModeChoice::kSymmetric;
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario("llama3-70b-10240xh100"), 1024);
  slow_links(2, 0.5)(loaded.written);
  loaded = scenarios::rebuild(std::move(loaded));
  const SimulationResult r = simulate_in_child(planner::resolve_scenario(std::move(loaded)), options);
  EXPECT_EQ(r.stats.mode, SimulationMode::kFull);
  EXPECT_TRUE(r.stats.forced_full);
  EXPECT_EQ(r.stats.simulated_nodes, 128);
}

}  // namespace
}  // namespace ragged::sim
