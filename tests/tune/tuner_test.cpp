// The search on the small scenario: the winner fits and is at least as fast
// as every other fitting candidate, pruning never discards what a
// simulation says fits, the cache answers a repeated search identically,
// any number of workers gives the same answer, and the GPU-count searches.

#include "tune/tuner.hpp"

#include <gtest/gtest.h>

#include <cstdio>

#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/prediction_band.hpp"
#include "sim/simulation_child.hpp"
#include "tests/tune/tune_test_util.hpp"
#include "tune/candidate_scenario.hpp"
#include "tune/evaluate.hpp"
#include "tune/gpu_search.hpp"

namespace ragged::tune {
namespace {

using testing::search_locally;
using testing::small_scenario;
using testing::TempDir;

// Two strategies and FSDP alone keep the search near a second: 96 candidates.
TuneOptions small_options() {
  TuneOptions options;
  options.constraints.strategies = {scenarios::RAGGED, scenarios::FSDP2};
  options.constraints.tps = {1};
  return options;
}

nlohmann::json answers(const SearchResult& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const Evaluation& e : r.evaluations) {
    nlohmann::json j = to_json(e);
    j.erase("simulation_wall_s");
    j.erase("cached");
    out.push_back(std::move(j));
  }
  return out;
}

TEST(Tuner, WinnerFitsAndIsAtLeastAsFastAsEveryOtherFittingCandidate) {
  const SearchResult r = search_locally(small_scenario(), small_options(), 2);
  std::printf("%zu candidates: %zu pruned, %zu simulated, %zu fit, budget %lld bytes\n", r.candidates.size(),
              r.counts.pruned(), r.counts.simulated, r.counts.fitting, static_cast<long long>(r.budget_bytes));
  ASSERT_EQ(r.candidates.size(), 96u);
  ASSERT_EQ(r.evaluations.size(), r.candidates.size());
  // Every verdict occurs, so the checks below are not vacuous.
  EXPECT_GT(r.counts.pruned(), 0u);
  EXPECT_GT(r.counts.fitting, 0u);
  EXPECT_LT(r.counts.fitting, r.counts.simulated);
  EXPECT_EQ(r.counts.pruned() + r.counts.simulated + r.counts.invalid + r.counts.failed, r.candidates.size());
  EXPECT_EQ(r.counts.failed, 0u);
  ASSERT_TRUE(r.any_fits());
  const Evaluation& best = r.evaluations[r.best()];
  EXPECT_TRUE(best.fits(r.budget_bytes));
  EXPECT_LE(best.peak_reserved_bytes, r.budget_bytes);
  size_t fitting = 0;
  for (const Evaluation& e : r.evaluations) {
    if (!e.fits(r.budget_bytes)) continue;
    ++fitting;
    EXPECT_GE(best.tokens_per_s_per_gpu, e.tokens_per_s_per_gpu);
  }
  EXPECT_EQ(fitting, r.ranking.ranked.size());
  for (size_t i : r.ranking.ranked) {  // never what `ragged simulate` calls a tight fit
    const Evaluation& e = r.evaluations[i];
    EXPECT_EQ(e.own_budget_bytes, memory_budget(e.capacity_bytes, traces::kPeakMemoryPredictionError));
    EXPECT_FALSE(traces::fits_tightly(e.peak_reserved_bytes, e.capacity_bytes, e.oom)) << describe(r.candidates[i], 8);
  }
  for (size_t k = 1; k < r.ranking.ranked.size(); ++k) {
    EXPECT_GE(r.evaluations[r.ranking.ranked[k - 1]].tokens_per_s_per_gpu,
              r.evaluations[r.ranking.ranked[k]].tokens_per_s_per_gpu);
  }
}

// Every pruned candidate of the search (here all of them, a sample of the
// space) is simulated anyway: none fits, and none peaks below its floor.
TEST(Tuner, PruningNeverDiscardsACandidateThatASimulationSaysFits) {
  const TuneOptions options = small_options();
  const Tuner tuner(small_scenario(), options);
  const SearchResult r = search_locally(small_scenario(), options, 2);
  size_t checked = 0;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    if (r.evaluations[i].outcome != Outcome::kPruned) continue;
    const auto simulated =
        sim::simulate_summary_in_child(planner::resolve_scenario(tuner.scenario_of(8, r.candidates[i]))).summary;
    const bool fits = !simulated.oom() && simulated.peak_reserved_bytes() <= r.budget_bytes;
    EXPECT_FALSE(fits) << describe(r.candidates[i], 8);
    EXPECT_GE(simulated.peak_allocated_bytes(), r.evaluations[i].floor_bytes) << describe(r.candidates[i], 8);
    ++checked;
  }
  std::printf("%zu pruned candidates simulated: none fits\n", checked);
  EXPECT_GT(checked, 10u);
}

TEST(Tuner, AnyNumberOfWorkersGivesTheSameAnswer) {
  const SearchResult one = search_locally(small_scenario(), small_options(), 1);
  const SearchResult four = search_locally(small_scenario(), small_options(), 4);
  EXPECT_EQ(answers(one), answers(four));
  EXPECT_EQ(one.ranking.ranked, four.ranking.ranked);
  EXPECT_EQ(one.ranking.pareto, four.ranking.pareto);
}

// The second search reads every candidate from the cache and answers the
// same; a smaller headroom afterwards simulates what the larger one pruned
// and answers as a search without the cache does.
TEST(Tuner, CacheAnswersARepeatedSearchIdentically) {
  TempDir dir("cache");
  TuneOptions cached = small_options();
  cached.cache_dir = dir.path();
  const SearchResult first = search_locally(small_scenario(), cached, 2);
  EXPECT_EQ(first.counts.cached, 0u);
  const SearchResult second = search_locally(small_scenario(), cached, 2);
  EXPECT_EQ(second.counts.cached, second.candidates.size());
  EXPECT_EQ(answers(first), answers(second));
  std::printf("first search %.2f s, repeated from the cache %.2f s\n", first.wall_seconds, second.wall_seconds);

  TuneOptions roomy = cached;
  roomy.constraints.headroom = 0.5;
  const SearchResult pruned_more = search_locally(small_scenario(), roomy, 2);
  EXPECT_GT(pruned_more.counts.pruned(), first.counts.pruned());
  TuneOptions uncached = small_options();
  uncached.constraints.headroom = 0.5;
  EXPECT_EQ(answers(pruned_more), answers(search_locally(small_scenario(), uncached, 2)));
}

// With the memory band rule the fitting candidates are those of the plain
// search whose band's upper end is within the capacity, in the same order;
// every simulated candidate carries its band (at least its own peak where the
// regime under-predicts), and the rule holds for figures read from a cache a
// plain search wrote.
TEST(Tuner, TheMemoryBandRuleRanksOnlyCandidatesWhoseBandFits) {
  TempDir dir("band-cache");
  TuneOptions plain = small_options();
  plain.cache_dir = dir.path();
  const SearchResult without = search_locally(small_scenario(), plain, 2);
  TuneOptions banded = plain;
  banded.constraints.memory_band = true;
  const SearchResult with = search_locally(small_scenario(), banded, 2);
  EXPECT_EQ(with.counts.cached, with.candidates.size());
  std::vector<size_t> expected;
  for (size_t i : without.ranking.ranked) {
    const Evaluation& e = without.evaluations[i];
    EXPECT_GT(e.band_peak_bytes, 0) << describe(without.candidates[i], 8);
    EXPECT_FALSE(e.band_rule);
    if (e.band_peak_bytes <= e.capacity_bytes) expected.push_back(i);
  }
  EXPECT_EQ(with.ranking.ranked, expected);
  std::printf("%zu candidates fit, %zu with their memory band within the capacity\n", without.ranking.ranked.size(),
              with.ranking.ranked.size());
  for (const Evaluation& e : with.evaluations) {
    if (e.outcome == Outcome::kSimulated) {
      EXPECT_TRUE(e.band_rule);
    }
  }
  TuneOptions uncached = banded;
  uncached.cache_dir.reset();
  EXPECT_EQ(search_locally(small_scenario(), uncached, 2).ranking.ranked, with.ranking.ranked);
}

// The winner's scenario file, read back as `ragged simulate` reads it,
// simulates to the very figures the search ranked, and its band (the
// ranking's column and JSON ranges) is the one simulate gives from them.
TEST(Tuner, WinnersScenarioFileReproducesItsFigures) {
  const TuneOptions options = small_options();
  const Tuner tuner(small_scenario(), options);
  const SearchResult r = search_locally(small_scenario(), options, 2);
  ASSERT_TRUE(r.any_fits());
  const Candidate& best = r.candidates[r.best()];
  const std::string text = scenario_file_text(tuner.scenario_of(8, best), describe(best, 8));
  const auto reread = scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "best.textproto", "/");
  const traces::Summary s = sim::simulate_summary_in_child(planner::resolve_scenario(reread)).summary;
  const Evaluation& e = r.evaluations[r.best()];
  EXPECT_EQ(s.tokens_per_s_per_gpu(), e.tokens_per_s_per_gpu);
  EXPECT_EQ(s.step_time_s(), e.step_time_s);
  EXPECT_EQ(s.peak_reserved_bytes(), e.peak_reserved_bytes);
  EXPECT_EQ(reread.scenario.name(), "tiny-llama-8xsmall-tuned");
  const sim::PredictionBand band = sim::regime_band(reread.scenario, s);
  ASSERT_GT(band.throughput.rows, 0);
  EXPECT_EQ(e.band_rows, band.throughput.rows);
  EXPECT_EQ(e.band_tokens_low, band.tokens_low);
  EXPECT_EQ(e.band_tokens_high, band.tokens_high);
  EXPECT_EQ(e.band_memory_low_bytes, band.memory_low);
  EXPECT_EQ(e.band_peak_bytes, band.memory_high);
  EXPECT_LE(e.band_tokens_low, e.band_tokens_high);
}

// The per-count table skips a count the fixed global batch does not divide over.
// The experts' own recompute, a candidate beside its twin that keeps them:
// it peaks lower and takes longer, as the simulator says of the scenario
// the candidate writes (what `ragged tune` ranks it by).
TEST(Tuner, TheExpertsOwnRecomputeTradesTimeForMemory) {
  const scenarios::LoadedScenario moe = scenarios::load_scenario("tiny-moe-4xcpu");
  TuneOptions options;
  options.constraints.tps = {1};
  const Tuner tuner(moe, options);
  Candidate kept;
  kept.strategy = scenarios::FSDP2;
  kept.ep = 2;
  kept.shard_group = 4;
  kept.micro_batch = 2;
  kept.checkpointing = scenarios::SELECTIVE;
  Candidate recomputed = kept;
  recomputed.experts_recompute = true;
  const auto simulate = [&](const Candidate& c) {
    return sim::simulate_summary_in_child(planner::resolve_scenario(tuner.scenario_of(4, c))).summary;
  };
  const auto a = simulate(kept), b = simulate(recomputed);
  std::printf("experts kept: %.3f ms, %lld bytes; recomputed: %.3f ms, %lld bytes\n", 1e3 * a.step_time_s(),
              static_cast<long long>(a.peak_allocated_bytes()), 1e3 * b.step_time_s(),
              static_cast<long long>(b.peak_allocated_bytes()));
  EXPECT_LT(b.peak_allocated_bytes(), a.peak_allocated_bytes());
  EXPECT_GT(b.step_time_s(), a.step_time_s());
}

TEST(GpuSearch, CountsTheBatchDoesNotDivideOverAreSkipped) {
  TuneOptions options = small_options();
  options.constraints.global_batch_tokens = 16 * 1024;
  options.constraints.checkpointing = {scenarios::FULL};
  const Tuner tuner(small_scenario(), options);
  LocalTaskPool pool([&](const std::string& task) { return tuner.run_task(task); }, 2);
  const auto rows = search_gpu_counts(tuner, pool, {4, 12, 16});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].result.has_value());
  EXPECT_FALSE(rows[1].result.has_value());
  EXPECT_NE(rows[1].skipped.find("16 sequences over 12 data-parallel ranks"), std::string::npos) << rows[1].skipped;
  EXPECT_TRUE(rows[2].result.has_value());
  EXPECT_EQ(rows[2].result->batch.tokens_per_gpu(), 1024);
}

// The smallest count that fits, and one node fewer does not: one GPU per
// node, so that the state sharded over fewer GPUs decides.
TEST(GpuSearch, MinGpusFitsWhereOneNodeFewerDoesNot) {
  scenarios::LoadedScenario base = small_scenario();
  base.written.mutable_cluster()->set_gpus_per_node(1);
  base.written.mutable_cluster()->set_nodes(8);
  base = scenarios::rebuild(std::move(base));
  TuneOptions options = small_options();
  options.constraints.checkpointing = {scenarios::FULL};
  const Tuner tuner(base, options);
  LocalTaskPool pool([&](const std::string& task) { return tuner.run_task(task); }, 2);
  const MinGpusResult found = find_min_gpus(tuner, pool, 8);
  std::string probes;
  for (const auto& [gpus, fits] : found.probes) probes += std::to_string(gpus) + (fits ? " fits, " : " no, ");
  std::printf("probes: %s\n", probes.c_str());
  ASSERT_TRUE(found.result.has_value());
  const int64_t gpus = found.result->gpus;
  EXPECT_GT(gpus, 1);  // not vacuous: one GPU is too few
  EXPECT_TRUE(found.result->any_fits());
  EXPECT_TRUE(tuner.fits_at(pool, gpus));
  EXPECT_FALSE(tuner.fits_at(pool, gpus - 1));
}

// Without --tps a search starts with FSDP alone; where nothing fits it
// searches tensor parallelism's sizes too: here whole micro-batches of 2
// sequences without checkpointing fit only split over tp ranks.
TEST(Tuner, NothingFittingWithFsdpAloneWidensToTensorParallelism) {
  TuneOptions options;
  options.constraints.strategies = {scenarios::RAGGED};
  options.constraints.checkpointing = {scenarios::NONE};
  options.constraints.micro_batches = {2};
  const SearchResult r = search_locally(small_scenario(), options, 2);
  EXPECT_TRUE(r.widened_to_tensor_parallelism);
  ASSERT_TRUE(r.any_fits());
  EXPECT_GT(r.candidates[r.best()].tp, 1);
  TuneOptions fsdp_alone = options;
  fsdp_alone.constraints.tps = {1};
  const SearchResult alone = search_locally(small_scenario(), fsdp_alone, 2);
  EXPECT_FALSE(alone.any_fits());
  EXPECT_FALSE(alone.widened_to_tensor_parallelism);
}

// `--global-batch-tokens` below a sequence per GPU: the answer is a mesh
// whose data-parallel ranks divide the batch, simulated and fitting.
TEST(Tuner, ASmallGlobalBatchIsAnsweredByAMesh) {
  TuneOptions options;
  options.constraints.strategies = {scenarios::RAGGED};
  options.constraints.global_batch_tokens = 2 * 1024;  // 2 sequences on 8 GPUs
  options.constraints.checkpointing = {scenarios::FULL};
  options.constraints.prefetch_depths = {1};
  const SearchResult r = search_locally(small_scenario(), options, 2);
  ASSERT_TRUE(r.any_fits());
  const Candidate& best = r.candidates[r.best()];
  std::printf("best: %s, %.0f tokens/s per GPU\n", describe(best, 8).c_str(),
              r.evaluations[r.best()].tokens_per_s_per_gpu);
  EXPECT_EQ(best.tp, 4);
  EXPECT_EQ(best.micro_batch * best.grad_accum, 1) << "2 sequences over 2 data-parallel ranks";
}

}  // namespace
}  // namespace ragged::tune
