// Branch and bound (TuneOptions::exact_top) keeps the answer exact: on a
// small search with tensor parallelism and pipeline stages, the top k with
// bounding are the exhaustive search's top k (same candidates, same
// figures), every candidate it simulates has the exhaustive search's
// figures, and the bounded ones are exactly those whose bound lies below
// the k-th best, whatever the workers' timing. Ranked by goodput too.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/tune/tune_test_util.hpp"
#include "tune/candidate_scenario.hpp"
#include "tune/tuner.hpp"

namespace ragged::tune {
namespace {

TuneOptions mesh_search() {
  TuneOptions options;
  options.constraints.strategies = {scenarios::RAGGED};
  options.constraints.tps = {1, 2};
  options.constraints.pps = {1, 2};
  options.constraints.schedules = {scenarios::ONE_F_ONE_B, scenarios::INTERLEAVED_1F1B};
  options.constraints.global_batch_tokens = 8 * 1024;  // 8 sequences of 1,024 tokens on 8 GPUs
  return options;
}

using testing::search_locally;

void expect_same_figures(const Evaluation& bounded, const Evaluation& exhaustive, const std::string& what) {
  EXPECT_EQ(bounded.outcome, exhaustive.outcome) << what;
  EXPECT_EQ(bounded.step_time_s, exhaustive.step_time_s) << what;
  EXPECT_EQ(bounded.tokens_per_s_per_gpu, exhaustive.tokens_per_s_per_gpu) << what;
  EXPECT_EQ(bounded.peak_reserved_bytes, exhaustive.peak_reserved_bytes) << what;
  EXPECT_EQ(bounded.mfu, exhaustive.mfu) << what;
}

void expect_exact_top(const SearchResult& all, const SearchResult& bounded, size_t k) {
  ASSERT_EQ(bounded.candidates, all.candidates);
  const size_t shown = std::min(k, all.ranking.ranked.size());
  ASSERT_GE(bounded.ranking.ranked.size(), shown);
  for (size_t r = 0; r < shown; ++r) {
    const size_t i = all.ranking.ranked[r];
    EXPECT_EQ(bounded.ranking.ranked[r], i) << "rank " << r + 1 << " of top " << k;
    EXPECT_EQ(bounded.ranked_rate(i), all.ranked_rate(i)) << describe(all.candidates[i], 8);
    expect_same_figures(bounded.evaluations[i], all.evaluations[i], describe(all.candidates[i], 8));
  }
  ASSERT_TRUE(bounded.kth_best_rate.has_value());
  EXPECT_EQ(*bounded.kth_best_rate, all.ranked_rate(all.ranking.ranked[k - 1]));
  for (size_t i = 0; i < all.candidates.size(); ++i) {
    const Evaluation& e = bounded.evaluations[i];
    const std::string what = describe(all.candidates[i], 8);
    if (e.outcome == Outcome::kBounded) {
      EXPECT_LT(e.tokens_per_s_per_gpu_bound(), *bounded.kth_best_rate) << what;
      EXPECT_EQ(all.evaluations[i].outcome, Outcome::kSimulated) << what;
      EXPECT_LT(all.ranked_rate(i), *bounded.kth_best_rate) << what;
      EXPECT_NE(e.message.find("cannot enter the top"), std::string::npos) << e.message;
    } else {
      expect_same_figures(e, all.evaluations[i], what);
      if (e.outcome == Outcome::kSimulated) {
        EXPECT_GE(e.tokens_per_s_per_gpu_bound(), *bounded.kth_best_rate) << what;
      }
    }
  }
  EXPECT_EQ(bounded.counts.simulated + bounded.counts.bounded, all.counts.simulated);
  EXPECT_EQ(bounded.counts.pruned(), all.counts.pruned());
  std::printf("top %zu: %zu of %zu candidates simulated, %zu bounded (exhaustive: %zu simulated)\n", k,
              bounded.counts.simulated, all.candidates.size(), bounded.counts.bounded, all.counts.simulated);
}

TEST(BoundedSearch, TheTopKEqualsTheExhaustiveSearchs) {
  const SearchResult all = search_locally(testing::small_scenario(), mesh_search());
  ASSERT_GE(all.ranking.ranked.size(), 10u);
  EXPECT_FALSE(all.exact_top.has_value());
  for (size_t k : {1, 3, 10}) {
    TuneOptions options = mesh_search();
    options.exact_top = k;
    const SearchResult bounded = search_locally(testing::small_scenario(), options);
    expect_exact_top(all, bounded, k);
    if (k == 1) {
      EXPECT_GT(bounded.counts.bounded, 0u);
    }
  }
}

// The bounded set is the candidates whose bound lies below the final k-th
// best, not those that happened to be skipped: one worker and two give it alike.
TEST(BoundedSearch, TheAnswerDoesNotDependOnTheWorkers) {
  TuneOptions options = mesh_search();
  options.exact_top = 3;
  const SearchResult one = search_locally(testing::small_scenario(), options, 1);
  const SearchResult two = search_locally(testing::small_scenario(), options, 2);
  ASSERT_EQ(one.evaluations.size(), two.evaluations.size());
  for (size_t i = 0; i < one.evaluations.size(); ++i) {
    EXPECT_EQ(one.evaluations[i].outcome, two.evaluations[i].outcome) << describe(one.candidates[i], 8);
    EXPECT_EQ(one.evaluations[i].step_time_s, two.evaluations[i].step_time_s) << describe(one.candidates[i], 8);
  }
  EXPECT_EQ(one.ranking.ranked, two.ranking.ranked);
  EXPECT_EQ(one.ranking.pareto, two.ranking.pareto);
}

TEST(BoundedSearch, RankedByGoodputTheTopKIsExactToo) {
  scenarios::LoadedScenario base = testing::small_scenario();
  scenarios::Goodput* g = base.written.mutable_goodput();
  g->set_interruptions_per_gpu_hour(0.2);
  g->set_storage_gbytes_per_s_per_node(0.01);
  base = scenarios::rebuild(std::move(base));
  TuneOptions options = mesh_search();
  options.rank_by = RankBy::kGoodput;
  const SearchResult all = search_locally(base, options);
  options.exact_top = 3;
  const SearchResult bounded = search_locally(base, options);
  ASSERT_TRUE(bounded.by_goodput());
  expect_exact_top(all, bounded, 3);
}

}  // namespace
}  // namespace ragged::tune
