// Ranking by goodput (TuneOptions::rank_by = kGoodput): every fitting
// candidate gets the goodput `ragged simulate --goodput` would give it, the
// winner maximises the effective rate, a high interruption rate moves the
// winner to the candidate whose restart loads less, and the goodput settings
// leave the result cache valid.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "planner/goodput.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/simulation_child.hpp"
#include "tests/tune/tune_test_util.hpp"
#include "tune/candidate_scenario.hpp"
#include "tune/tuner.hpp"

namespace ragged::tune {
namespace {

using testing::small_scenario;
using testing::TempDir;

struct Interruptions {
  double per_gpu_hour = 0;
  double restart_minutes = 10;
  double storage_gbytes_per_s_per_node = 40;
  double storage_aggregate_tbytes_per_s = 2;
};

scenarios::LoadedScenario with_goodput(scenarios::LoadedScenario base, const Interruptions& in) {
  scenarios::Goodput* g = base.written.mutable_goodput();
  g->set_interruptions_per_gpu_hour(in.per_gpu_hour);
  g->set_restart_minutes(in.restart_minutes);
  g->set_storage_gbytes_per_s_per_node(in.storage_gbytes_per_s_per_node);
  g->set_storage_aggregate_tbytes_per_s(in.storage_aggregate_tbytes_per_s);
  return scenarios::rebuild(std::move(base));
}

TuneOptions by_goodput() {
  TuneOptions options;
  options.constraints.strategies = {scenarios::RAGGED, scenarios::FSDP2};
  options.constraints.tps = {1};
  options.rank_by = RankBy::kGoodput;
  return options;
}

using testing::search_locally;

// Interruptions often enough, and storage slow enough, that goodput is far
// from 100% and differs between candidates.
const Interruptions kHarsh = {0.2, 1, 0.01, 0.001};

TEST(GoodputRanking, WinnerMaximisesEffectiveThroughputOverEveryFittingCandidate) {
  const SearchResult r = search_locally(with_goodput(small_scenario(), kHarsh), by_goodput());
  ASSERT_TRUE(r.by_goodput());
  ASSERT_TRUE(r.any_fits());
  size_t fitting = 0;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const Evaluation& e = r.evaluations[i];
    ASSERT_EQ(r.goodput[i].has_value(), e.fits(r.budget_bytes)) << describe(r.candidates[i], r.gpus);
    if (!r.goodput[i]) continue;
    ++fitting;
    EXPECT_GT(r.goodput[i]->goodput, 0.0);
    EXPECT_LT(r.goodput[i]->goodput, 1.0);
    EXPECT_DOUBLE_EQ(r.ranked_rate(i), e.tokens_per_s_per_gpu * r.goodput[i]->goodput);
    EXPECT_GE(r.ranked_rate(r.best()), r.ranked_rate(i)) << describe(r.candidates[i], r.gpus);
  }
  EXPECT_EQ(fitting, r.ranking.ranked.size());
  for (size_t k = 1; k < r.ranking.ranked.size(); ++k) {
    EXPECT_GE(r.ranked_rate(r.ranking.ranked[k - 1]), r.ranked_rate(r.ranking.ranked[k]));
  }
  const size_t best = r.best();
  std::printf("winner %s: %.1f tokens/s/GPU x goodput %.4f = %.1f effective\n",
              describe(r.candidates[best], r.gpus).c_str(), r.evaluations[best].tokens_per_s_per_gpu,
              r.goodput[best]->goodput, r.ranked_rate(best));
}

// The candidate `ragged simulate --goodput` would see: the winner's scenario
// resolved, simulated, and planner::estimate_goodput on its step.
TEST(GoodputRanking, FiguresEqualWhatSimulateGoodputComputes) {
  const scenarios::LoadedScenario base = with_goodput(small_scenario(), kHarsh);
  const Tuner tuner(base, by_goodput());
  const SearchResult r = search_locally(base, by_goodput());
  ASSERT_TRUE(r.any_fits());
  const planner::ResolvedScenario resolved =
      planner::resolve_scenario(tuner.scenario_of(r.gpus, r.candidates[r.best()]));
  const traces::Summary s = sim::simulate_summary_in_child(resolved).summary;
  const planner::GoodputEstimate expected =
      planner::estimate_goodput(resolved, s.step_time_s(), s.tokens_per_s_per_gpu());
  const planner::GoodputEstimate& got = *r.goodput[r.best()];
  std::printf("goodput: simulate %.12f, tune %.12f; effective %.6f and %.6f tokens/s/GPU\n", expected.goodput,
              got.goodput, expected.effective_tokens_per_s_per_gpu, got.effective_tokens_per_s_per_gpu);
  auto near = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); };
  EXPECT_PRED2(near, got.goodput, expected.goodput);
  EXPECT_PRED2(near, got.effective_tokens_per_s_per_gpu, expected.effective_tokens_per_s_per_gpu);
  EXPECT_PRED2(near, got.interval_s, expected.interval_s);
  EXPECT_PRED2(near, got.restart_s, expected.restart_s);
  EXPECT_PRED2(near, got.job_mtbf_s, expected.job_mtbf_s);
  EXPECT_EQ(got.checkpoint.bytes_per_gpu, expected.checkpoint.bytes_per_gpu);
  EXPECT_EQ(got.interval_steps, expected.interval_steps);
}

// Two candidates on 2 nodes of 4 with 1 Gbit/s NICs: HSDP (groups of 4 in a
// node, replicated) is faster, since its all-gathers stay on NVLink, but
// each GPU holds twice the state, and at a restart every replica reads its
// copy back: twice the bytes through the same storage. With an interruption
// every 7.5 minutes (1 per GPU-hour on 8 GPUs) and 1 MB/s of storage, the
// longer restart costs more than the faster step gains, and FSDP over all 8
// GPUs wins by effective throughput.
TEST(GoodputRanking, HighInterruptionRateMovesTheWinnerToTheShorterCheckpointLoad) {
  scenarios::LoadedScenario base = small_scenario();
  base.written.mutable_model()->mutable_inline_spec()->set_num_layers(16);  // a checkpoint 4x as large
  base.written.mutable_cluster()->mutable_gpu()->set_hbm_capacity_gib(1);
  base.written.mutable_cluster()->mutable_nics()->set_bandwidth_gbits_per_s(1);
  base = with_goodput(std::move(base), {1, 0, 0.001, 1e-6});
  TuneOptions options = by_goodput();
  options.constraints.strategies = {scenarios::FSDP2};
  options.constraints.tps = {1};
  options.constraints.shard_groups = {4, 8};
  options.constraints.micro_batches = {2};
  options.constraints.checkpointing = {scenarios::FULL};
  options.constraints.prefetch_depths = {1};
  options.constraints.reshard_after_forward = {false};
  TuneOptions throughput = options;
  throughput.rank_by = RankBy::kThroughput;

  const SearchResult fast = search_locally(base, throughput);
  const SearchResult good = search_locally(base, options);
  ASSERT_EQ(fast.ranking.ranked.size(), 2u);
  ASSERT_EQ(good.ranking.ranked.size(), 2u);
  const size_t hsdp = fast.best(), fsdp = good.best();
  for (size_t i : {hsdp, fsdp}) {
    const planner::GoodputEstimate& g = *good.goodput[i];
    std::printf(
        "%s: %.0f tokens/s/GPU, step %.4f s, checkpoint %lld bytes per GPU, restart %.1f s, goodput %.4f, "
        "effective %.0f\n",
        describe(good.candidates[i], good.gpus).c_str(), good.evaluations[i].tokens_per_s_per_gpu,
        good.evaluations[i].step_time_s, static_cast<long long>(g.checkpoint.bytes_per_gpu), g.restart_s, g.goodput,
        g.effective_tokens_per_s_per_gpu);
  }
  ASSERT_EQ(fast.candidates[hsdp].shard_group, 4) << "the case needs HSDP to win on throughput";
  EXPECT_EQ(good.candidates[fsdp].shard_group, 8);
  EXPECT_GT(good.evaluations[hsdp].tokens_per_s_per_gpu, good.evaluations[fsdp].tokens_per_s_per_gpu);
  EXPECT_LT(good.goodput[fsdp]->checkpoint.bytes_per_gpu, good.goodput[hsdp]->checkpoint.bytes_per_gpu);
  EXPECT_LT(good.goodput[fsdp]->restart_s, good.goodput[hsdp]->restart_s);
  // Both restarts read at the storage's 1 MB/s cap: load times in the ratio
  // of the bytes per GPU, about 2 (half the shard group; padding aside).
  const planner::CheckpointCost &h = good.goodput[hsdp]->checkpoint, &f = good.goodput[fsdp]->checkpoint;
  const double bytes_ratio = static_cast<double>(h.bytes_per_gpu) / static_cast<double>(f.bytes_per_gpu);
  std::printf("checkpoint load: analytic ratio %.6f (bytes per GPU), computed %.6f\n", bytes_ratio,
              h.load_s / f.load_s);
  EXPECT_NEAR(h.load_s / f.load_s, bytes_ratio, 1e-9);
  EXPECT_NEAR(bytes_ratio, 2.0, 0.05);
  EXPECT_GT(good.ranked_rate(fsdp), good.ranked_rate(hsdp));
}

// Goodput is computed after the search from cached figures: other goodput
// settings read every candidate from the cache and rank them anew.
TEST(GoodputRanking, OtherGoodputSettingsReadEveryCandidateFromTheCache) {
  TempDir dir("goodput_cache");
  TuneOptions options = by_goodput();
  options.cache_dir = dir.path();
  const SearchResult mild = search_locally(with_goodput(small_scenario(), {}), options);
  const SearchResult harsh = search_locally(with_goodput(small_scenario(), kHarsh), options);
  EXPECT_EQ(mild.counts.cached, 0u);
  EXPECT_EQ(harsh.counts.cached, harsh.candidates.size());
  ASSERT_TRUE(harsh.any_fits());
  const size_t i = harsh.best();
  EXPECT_EQ(harsh.evaluations[i].step_time_s, mild.evaluations[i].step_time_s);
  EXPECT_EQ(harsh.evaluations[i].checkpoint_bytes_per_gpu, mild.evaluations[i].checkpoint_bytes_per_gpu);
  EXPECT_LT(harsh.goodput[i]->goodput, mild.goodput[i]->goodput);
}

}  // namespace
}  // namespace ragged::tune
