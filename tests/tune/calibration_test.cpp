// The quality bar on the calibration rows of validation/ (the
// TorchTitan Llama-3-8B runs the simulator was checked against): the
// published configuration is in the search space, fits, and the tuner's
// pick is at least as fast by prediction. A reduced space around it (three
// strategies, its shard group, prefetch 1) keeps the test to seconds;
// docs/results/tune.md ranks the full space (scripts/bench-tune).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "scenarios/scenario_rules.hpp"
#include "tune/candidate_scenario.hpp"
#include "tune/tuner.hpp"
#include "validation/validation_set.hpp"

namespace ragged::tune {
namespace {

// The configuration a scenario trains, as a candidate.
Candidate published_candidate(const scenarios::Scenario& s) {
  const scenarios::Training& t = s.training();
  return {t.strategy(),
          t.shard_group_size(),
          t.micro_batch_size(),
          t.gradient_accumulation_steps(),
          t.activation_checkpointing(),
          t.prefetch_depth(),
          t.reshard_after_forward(),
          ""};
}

TEST(Calibration, TunersPickIsAtLeastAsFastAsThePublishedConfiguration) {
  const validation::ValidationSet set = validation::load_validation_set(validation::default_validation_dir());
  int rows = 0;
  for (const validation::Run& run : set.runs) {
    if (run.set() != validation::CALIBRATION) continue;
    ++rows;
    const scenarios::LoadedScenario base = run.has_shipped_scenario()
                                               ? scenarios::load_scenario(run.shipped_scenario())
                                               : scenarios::load_scenario_file(set.scenario_path(run));
    const Candidate published = published_candidate(base.scenario);
    TuneOptions options;
    options.constraints.strategies = {published.strategy, scenarios::RAGGED, scenarios::MEGATRON};
    options.constraints.shard_groups = {published.shard_group};
    options.constraints.prefetch_depths = {published.prefetch};
    options.constraints.tps = {1};  // the published runs are FSDP alone
    const Tuner tuner(base, options);
    LocalTaskPool pool([&](const std::string& task) { return tuner.run_task(task); }, 2);
    const int64_t gpus = scenarios::total_gpus(base.scenario);
    const SearchResult r = tuner.search(pool, gpus);

    const auto it = std::find(r.candidates.begin(), r.candidates.end(), published);
    if (it == r.candidates.end()) {
      ADD_FAILURE() << run.id() << ": the published configuration is not in the space: " << describe(published, gpus);
      continue;
    }
    const Evaluation& mine = r.evaluations[static_cast<size_t>(it - r.candidates.begin())];
    EXPECT_TRUE(mine.fits(r.budget_bytes)) << run.id();
    if (!r.any_fits()) {
      ADD_FAILURE() << run.id() << ": nothing fits";
      continue;
    }
    const Evaluation& best = r.evaluations[r.best()];
    const auto rank =
        std::find(r.ranking.ranked.begin(), r.ranking.ranked.end(), static_cast<size_t>(it - r.candidates.begin())) -
        r.ranking.ranked.begin() + 1;
    std::printf("%s: published %s: %.0f tokens/s/GPU (rank %ld of %zu); pick %s: %.0f tokens/s/GPU\n", run.id().c_str(),
                describe(published, gpus).c_str(), mine.tokens_per_s_per_gpu, static_cast<long>(rank),
                r.ranking.ranked.size(), describe(r.candidates[r.best()], gpus).c_str(), best.tokens_per_s_per_gpu);
    EXPECT_GE(best.tokens_per_s_per_gpu, mine.tokens_per_s_per_gpu) << run.id();
  }
  EXPECT_EQ(rows, 4);  // TorchTitan's 8 and 128 GPU points, eager and compiled
}

}  // namespace
}  // namespace ragged::tune
