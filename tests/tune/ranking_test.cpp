// Ranking and the Pareto front on hand-made evaluations, and the time to train.

#include "tune/ranking.hpp"

#include <gtest/gtest.h>

namespace ragged::tune {
namespace {

Evaluation simulated(double tokens_per_s, int64_t peak, bool oom = false) {
  Evaluation e;
  e.outcome = Outcome::kSimulated;
  e.tokens_per_s_per_gpu = tokens_per_s;
  e.peak_reserved_bytes = peak;
  e.oom = oom;
  return e;
}

TEST(Ranking, OnlyWhatFitsFastestFirstTiesToTheSmallerPeakThenTheEarlier) {
  Evaluation pruned;
  pruned.outcome = Outcome::kPruned;
  const std::vector<Evaluation> all = {
      simulated(100, 50),        // 0
      simulated(300, 120),       // 1: over the budget of 100
      simulated(200, 90),        // 2
      pruned,                    // 3
      simulated(200, 60),        // 4: ties 2, smaller peak
      simulated(250, 80, true),  // 5: out of memory
      simulated(200, 60),        // 6: ties 4 exactly
  };
  const Ranking r = rank(all, 100);
  EXPECT_EQ(r.ranked, (std::vector<size_t>{4, 6, 2, 0}));
  // By peak: 0 (50, 100/s), 4 (60, 200/s); 6 ties 4; 2 is larger and no faster.
  EXPECT_EQ(r.pareto, (std::vector<size_t>{0, 4}));
}

// A step that reached the allocator's capacity released its cache: the reserved
// peak left behind is under the budget, but the headroom was not kept.
TEST(Ranking, AStepThatReleasedTheAllocatorsCacheDoesNotFit) {
  Evaluation calm = simulated(200, 60);
  Evaluation pressed = simulated(300, 60);
  pressed.alloc_retries = 1;
  EXPECT_TRUE(calm.fits(100));
  EXPECT_FALSE(pressed.fits(100));
  EXPECT_EQ(rank({calm, pressed}, 100).ranked, (std::vector<size_t>{0}));
}

// Under the band rule a candidate fits only if the upper end of its memory
// band (what runs like it peaked at against their predictions) is within the
// allocator's capacity; without it the band is reported, not applied. Both
// travel between ranks and through the cache as JSON.
TEST(Ranking, UnderTheBandRuleACandidateWhoseBandPassesTheCapacityDoesNotFit) {
  Evaluation within = simulated(200, 60);
  within.capacity_bytes = 110;
  within.band_peak_bytes = 110;
  Evaluation over = simulated(300, 60);
  over.capacity_bytes = 110;
  over.band_peak_bytes = 111;
  EXPECT_EQ(rank({within, over}, 100).ranked, (std::vector<size_t>{1, 0}));
  within.band_rule = over.band_rule = true;
  EXPECT_TRUE(within.fits(100));
  EXPECT_FALSE(over.fits(100));
  EXPECT_EQ(rank({within, over}, 100).ranked, (std::vector<size_t>{0}));
  over.band_tokens_low = 250;
  over.band_tokens_high = 340;
  over.band_rows = 21;
  over.band_memory_low_bytes = 95;
  const Evaluation back = evaluation_from_json(to_json(over));
  EXPECT_EQ(back.band_peak_bytes, 111);
  EXPECT_EQ(back.band_tokens_low, 250);
  EXPECT_EQ(back.band_tokens_high, 340);
  EXPECT_EQ(back.band_rows, 21);
  EXPECT_EQ(back.band_memory_low_bytes, 95);
  EXPECT_TRUE(back.band_rule);
  EXPECT_FALSE(back.fits(100));
}

// A candidate whose own capacity (its mesh's communicators take more) less
// the headroom is below its peak does not fit, whatever the search's budget.
TEST(Ranking, ACandidateMustFitItsOwnBudgetToo) {
  Evaluation roomy = simulated(200, 90);
  roomy.own_budget_bytes = 95;
  Evaluation squeezed = simulated(300, 90);
  squeezed.own_budget_bytes = 89;
  EXPECT_TRUE(roomy.fits(100));
  EXPECT_FALSE(squeezed.fits(100));
  EXPECT_EQ(rank({roomy, squeezed}, 100).ranked, (std::vector<size_t>{0}));
  EXPECT_EQ(evaluation_from_json(to_json(squeezed)).own_budget_bytes, 89);
}

TEST(Ranking, ParetoFrontKeepsEveryTradeOff) {
  const std::vector<Evaluation> all = {simulated(10, 10), simulated(30, 30), simulated(20, 20), simulated(25, 40),
                                       simulated(40, 50)};
  const Ranking r = rank(all, 100);
  EXPECT_EQ(r.pareto, (std::vector<size_t>{0, 2, 1, 4}));  // 3 is beaten by 1 (faster and smaller)
  EXPECT_EQ(r.ranked.front(), 4u);
}

// Given rates (the goodput-adjusted ones) order the ranking and the front
// instead of the evaluations' own tokens/s.
TEST(Ranking, ByTheRatesGiven) {
  const std::vector<Evaluation> all = {simulated(100, 10), simulated(90, 20), simulated(80, 30), simulated(300, 200)};
  const Ranking r = rank(all, 100, {50, 70, 60, 1000});
  EXPECT_EQ(r.ranked, (std::vector<size_t>{1, 2, 0}));  // 3 does not fit, whatever its rate
  EXPECT_EQ(r.pareto, (std::vector<size_t>{0, 1}));     // 2 is larger than 1 and slower by its rate
}

TEST(Ranking, NothingFits) {
  const Ranking r = rank({simulated(10, 200)}, 100);
  EXPECT_TRUE(r.ranked.empty());
  EXPECT_TRUE(r.pareto.empty());
}

// 15T tokens at 1,000 tokens/s per GPU on 1,000 GPUs: 1.5e7 s, 4.17e6 GPU-hours.
TEST(TrainingTime, TokensOverThroughput) {
  const TrainingTime t = training_time(15e12, 1000, 1000, 2.5);
  EXPECT_DOUBLE_EQ(t.seconds, 1.5e7);
  EXPECT_DOUBLE_EQ(t.gpu_hours, 1.5e7 * 1000 / 3600);
  ASSERT_TRUE(t.cost.has_value());
  EXPECT_DOUBLE_EQ(*t.cost, t.gpu_hours * 2.5);
  EXPECT_FALSE(training_time(1e9, 1000, 8, std::nullopt).cost.has_value());
}

}  // namespace
}  // namespace ragged::tune
