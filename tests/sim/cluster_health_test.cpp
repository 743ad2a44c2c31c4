#include "sim/cluster_health.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "sim/straggler_report.hpp"

namespace ragged::sim {
namespace {

TEST(ClusterHealth, HealthyByDefault) {
  const ClusterHealth health;
  EXPECT_FALSE(health.breaks_symmetry());
  EXPECT_EQ(health.gpu_rate(123), 1.0);
  EXPECT_EQ(health.nic_rate(7), 1.0);
  const auto ranks = simulated_ranks(health, 1024);
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].rank, 0);
}

TEST(ClusterHealth, ChooseDistinctIsReproducibleAndInRange) {
  const auto a = choose_distinct(100, 10240, 7), b = choose_distinct(100, 10240, 7), c = choose_distinct(100, 10240, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  ASSERT_EQ(a.size(), 100u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::adjacent_find(a.begin(), a.end()), a.end());
  EXPECT_GE(a.front(), 0);
  EXPECT_LT(a.back(), 10240);
  // All of them: every index once.
  const auto every = choose_distinct(16, 16, 3);
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(every[static_cast<size_t>(i)], i);
}

TEST(ClusterHealth, SlowGpusAndLinksListedOrDrawn) {
  scenarios::WhatIf w;
  w.mutable_slow_gpus()->add_ranks(9);
  w.mutable_slow_gpus()->add_ranks(3);
  w.mutable_slow_gpus()->set_fraction(0.5);
  w.mutable_slow_links()->set_count(2);
  w.mutable_slow_links()->set_fraction(0.25);
  w.mutable_slow_links()->set_seed(5);
  const ClusterHealth health(w, 16, 2);
  EXPECT_TRUE(health.breaks_symmetry());
  EXPECT_EQ(health.slow_gpus(), (std::vector<int64_t>{3, 9}));
  EXPECT_EQ(health.gpu_rate(3), 0.5);
  EXPECT_EQ(health.gpu_rate(4), 1.0);
  EXPECT_EQ(health.slow_nodes(), (std::vector<int64_t>{0, 1}));  // two of two nodes
  EXPECT_EQ(health.nic_rate(1), 0.25);
  // Rank 0 is healthy: it is the reference; the slowest GPU (the first of
  // the slow ones) beside it.
  const auto ranks = simulated_ranks(health, 16);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].rank, 0);
  EXPECT_EQ(ranks[1].rank, 3);
  EXPECT_EQ(ranks[1].compute_rate, 0.5);
}

TEST(ClusterHealth, ReferenceSkipsSlowRankZero) {
  scenarios::WhatIf w;
  w.mutable_slow_gpus()->add_ranks(0);
  w.mutable_slow_gpus()->set_fraction(0.5);
  const auto ranks = simulated_ranks(ClusterHealth(w, 8, 1), 8);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].rank, 1);
  EXPECT_EQ(ranks[1].rank, 0);
}

TEST(ClusterHealth, JitterHasMeanOneAndItsStandardDeviation) {
  for (auto distribution : {scenarios::NORMAL, scenarios::LOGNORMAL}) {
    scenarios::WhatIf w;
    w.mutable_jitter()->set_distribution(distribution);
    w.mutable_jitter()->set_relative_stddev(0.05);
    w.mutable_jitter()->set_seed(11);
    const int64_t gpus = 100000;
    const ClusterHealth health(w, gpus, gpus / 8);
    double sum = 0, squares = 0, slowest = 1;
    for (int64_t g = 0; g < gpus; ++g) {
      const double factor = 1 / health.gpu_rate(g);  // compute time multiplier
      sum += factor;
      squares += factor * factor;
      slowest = std::min(slowest, health.gpu_rate(g));
    }
    const double mean = sum / static_cast<double>(gpus);
    const double sd = std::sqrt(squares / static_cast<double>(gpus) - mean * mean);
    std::printf("jitter %s, 0.05 sd over %lld GPUs: mean %.5f, sd %.5f, slowest GPU at %.3f\n",
                distribution == scenarios::NORMAL ? "normal" : "log-normal", static_cast<long long>(gpus), mean, sd, slowest);
    EXPECT_NEAR(mean, 1.0, 0.001);  // 4 standard errors: 0.05 / sqrt(1e5) = 1.6e-4
    EXPECT_NEAR(sd, 0.05, 0.001);
    // The slowest of 100,000 draws sits about 4.4 standard deviations out.
    EXPECT_LT(slowest, 1 / 1.18);
    EXPECT_GT(slowest, 1 / 1.3);
  }
}

TEST(StragglerReport, WaitsAreWallTimeAndTheLastArrivalIsCritical) {
  // Two ranks; rank 1 reaches both collectives late, and the two waits of
  // rank 0 overlap (two streams): 1 s then [0.5, 2.0] -> 2 s of wall time.
  std::vector<RankRun> ranks = {{{0, 1.0}, 3.0, 0.2}, {{9, 0.5}, 3.1, 0.0}};
  std::vector<CollectiveRecord> collectives = {
      {1, planner::OpKind::kAllGather, {0.0, 1.0}, 1.0, 1.5, {2, -1}},
      {2, planner::OpKind::kReduceScatter, {0.5, 2.0}, 2.0, 2.5, {2, -1}},
      {3, planner::OpKind::kAllGather, {2.6, 2.6}, 2.6, 2.7, {0, 3}},
  };
  scenarios::WhatIf w;
  w.mutable_slow_links()->add_nodes(2);
  w.mutable_slow_links()->set_fraction(0.5);
  const StragglerReport r = analyse_stragglers(ranks, collectives, ClusterHealth(w, 32, 4));
  EXPECT_EQ(r.critical, 1);
  EXPECT_DOUBLE_EQ(r.ranks[0].waited_seconds, 2.0);
  EXPECT_DOUBLE_EQ(r.ranks[1].imposed_seconds, 2.0);
  EXPECT_EQ(r.ranks[1].last_arrivals, 2);
  EXPECT_DOUBLE_EQ(r.waited_by_kind.at("all_gather"), 1.0);
  EXPECT_DOUBLE_EQ(r.waited_by_kind.at("reduce_scatter"), 1.5);
  EXPECT_EQ(r.bottleneck.endpoint, (Endpoint{2, -1}));
  EXPECT_EQ(r.bottleneck.collectives, 2);
  EXPECT_EQ(r.bottleneck.rate, 0.5);
  EXPECT_EQ(describe_link(r.bottleneck.endpoint), "node 2's NICs");
  // Through JSON and back (the child's answer).
  const StragglerReport back = straggler_from_json(straggler_to_json(r));
  EXPECT_EQ(straggler_to_json(back), straggler_to_json(r));
}

}  // namespace
}  // namespace ragged::sim
