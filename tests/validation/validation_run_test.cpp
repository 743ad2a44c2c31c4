// Rows through the simulator: every row is resolved before any simulation (a
// bad row is one error naming the run, the file and the field), a row whose
// simulation fails is reported and counted, excluded rows are not simulated.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "validation/validation_run.hpp"
#include "validation_test_util.hpp"

namespace ragged::validation {
namespace {

using testing::run_entry;
using testing::ScratchFolder;

TEST(ValidationRun, SimulatesEveryRowAndSkipsExcludedOnes) {
  ScratchFolder folder("run");
  folder.write("scenarios/s.textproto", testing::small_scenario());
  folder.write(kManifestName, run_entry("small") +
                                  run_entry("cal", "shipped_scenario: \"tiny-llama-4xcpu\"",
                                            "published { tokens_per_s_per_gpu: 1000 }") +
                                  run_entry("out", "", "published { tokens_per_s_per_gpu: 1 }", "  excluded: \"why\"\n"));
  const ValidationSet set = load_validation_set(folder.path());
  size_t calls = 0;
  RunOptions options;
  options.progress = [&](size_t done, size_t total, const RowResult&) {
    EXPECT_EQ(total, 3u);
    EXPECT_EQ(done, ++calls);
  };
  const std::vector<RowResult> rows = run_validation(set, options);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(calls, 3u);
  EXPECT_EQ(rows[0].status, RowStatus::kSimulated) << rows[0].failure;
  EXPECT_EQ(rows[0].model, "llama3-8b-2l");
  EXPECT_EQ(rows[0].gpus, 8);
  EXPECT_EQ(rows[0].strategy, "fsdp2");
  EXPECT_EQ(rows[0].checkpointing, "none");
  EXPECT_GT(rows[0].predicted.tokens_per_s_per_gpu, 0);
  EXPECT_GT(rows[0].predicted.peak_reserved_bytes, 0);
  EXPECT_EQ(rows[1].status, RowStatus::kSimulated) << rows[1].failure;
  EXPECT_EQ(rows[2].status, RowStatus::kExcluded);
}

// Rows simulated side by side come back in the set's order, each with its
// own prediction, the progress counted once per row: the first two rows'
// simulations wait for each other, so the run only ends if two ran at once.
TEST(ValidationRun, RowsSimulatedAtOnceComeBackInTheSetsOrder) {
  ScratchFolder folder("jobs");
  folder.write("scenarios/s.textproto", testing::small_scenario());
  std::string manifest;
  constexpr int kRows = 12;
  constexpr int kExcluded = 5;
  for (int i = 0; i < kRows; ++i) {
    manifest += run_entry("r" + std::to_string(i), "scenario: \"scenarios/s.textproto\"",
                          "published { tokens_per_s_per_gpu: 100 }", i == kExcluded ? "  excluded: \"why\"\n" : "");
  }
  folder.write(kManifestName, manifest);
  const ValidationSet set = load_validation_set(folder.path());
  std::mutex lock;
  std::condition_variable both;
  int started = 0, running = 0, most = 0;
  double next = 0;
  RunOptions options;
  options.jobs = 4;
  options.simulate = [&](const planner::ResolvedScenario&, const std::optional<std::filesystem::path>&) {
    std::unique_lock guard(lock);
    most = std::max(most, ++running);
    if (++started <= 2) {
      both.notify_all();
      EXPECT_TRUE(both.wait_for(guard, std::chrono::seconds(60), [&] { return started >= 2; }))
          << "no second row was simulated while the first was";
    }
    --running;
    Prediction p;
    p.tokens_per_s_per_gpu = ++next;
    return p;
  };
  size_t last_done = 0;
  options.progress = [&](size_t done, size_t total, const RowResult&) {
    EXPECT_EQ(total, static_cast<size_t>(kRows));
    EXPECT_EQ(done, ++last_done);
  };
  const std::vector<RowResult> rows = run_validation(set, options);
  ASSERT_EQ(rows.size(), static_cast<size_t>(kRows));
  EXPECT_EQ(last_done, static_cast<size_t>(kRows));
  std::set<double> predictions;
  for (int i = 0; i < kRows; ++i) {
    EXPECT_EQ(rows[i].run.id(), "r" + std::to_string(i));
    if (i == kExcluded) {
      EXPECT_EQ(rows[i].status, RowStatus::kExcluded);
      continue;
    }
    EXPECT_EQ(rows[i].status, RowStatus::kSimulated) << rows[i].failure;
    predictions.insert(rows[i].predicted.tokens_per_s_per_gpu);
  }
  EXPECT_EQ(predictions.size(), static_cast<size_t>(kRows - 1));  // each row its own prediction
  EXPECT_GE(most, 2);
  EXPECT_LE(most, 4);
}

// Options whose simulation only counts its calls.
RunOptions counting(size_t& simulated) {
  RunOptions options;
  options.simulate = [&simulated](const planner::ResolvedScenario&, const std::optional<std::filesystem::path>&) {
    ++simulated;
    return Prediction{};
  };
  return options;
}

TEST(ValidationRun, ABadScenarioNamesTheRunTheFileAndTheField) {
  ScratchFolder folder("bad");
  folder.write("scenarios/s.textproto", testing::small_scenario());
  folder.write("scenarios/bad.textproto", testing::small_scenario("no-such-model"));
  folder.write(kManifestName, run_entry("good") + run_entry("broken", "scenario: \"scenarios/bad.textproto\""));
  const ValidationSet set = load_validation_set(folder.path());
  size_t simulated = 0;
  RunOptions options = counting(simulated);
  try {
    run_validation(set, options);
    FAIL() << "a row with an unknown model must be an error";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_CONTAINS(message, ":10:3: runs[1].scenario (run 'broken'):");
    EXPECT_CONTAINS(message, "bad.textproto:1:9: model.catalog:");
    EXPECT_CONTAINS(message, "no-such-model");
  }
  EXPECT_EQ(simulated, 0u);  // nothing runs before every row resolves
}

TEST(ValidationRun, AMemoryRankBeyondTheRunsGpusIsBadInput) {
  ScratchFolder folder("memory-rank");
  folder.write("scenarios/s.textproto", testing::small_scenario());  // 8 GPUs
  const std::string scenario = "scenario: \"scenarios/s.textproto\"";
  folder.write(kManifestName,
               run_entry("last", scenario, "published { tokens_per_s_per_gpu: 1 peak_memory_gib: 9 memory_rank: 7 }") +
                   run_entry("beyond", scenario, "published { tokens_per_s_per_gpu: 1 peak_memory_gib: 9 memory_rank: 8 }"));
  const ValidationSet set = load_validation_set(folder.path());
  size_t simulated = 0;
  RunOptions options = counting(simulated);
  options.filter = "last";
  EXPECT_EQ(run_validation(set, options).size(), 1u);
  options.filter = "";
  try {
    run_validation(set, options);
    FAIL() << "rank 8 of 8 GPUs must be an error";
  } catch (const InputError& e) {
    EXPECT_CONTAINS(std::string(e.what()),
                    "runs[1].published.memory_rank (run 'beyond'): rank 8 of a run on 8 GPUs: give a rank from 0 to 7");
  }
  EXPECT_EQ(simulated, 1u);  // the second call simulated nothing
}

TEST(ValidationRun, AFailedSimulationIsReportedAndCounted) {
  ScratchFolder folder("fail");
  folder.write("scenarios/s.textproto", testing::small_scenario());
  folder.write(kManifestName, run_entry("first") + run_entry("second") + run_entry("third"));
  const ValidationSet set = load_validation_set(folder.path());
  RunOptions options;
  int call = 0;
  options.simulate = [&call](const planner::ResolvedScenario&, const std::optional<std::filesystem::path>&) {
    if (++call == 2) throw InternalError("the simulation process died with signal 11 (Segmentation fault)");
    Prediction p;
    p.tokens_per_s_per_gpu = 1100;
    return p;
  };
  const std::vector<RowResult> rows = run_validation(set, options);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].status, RowStatus::kSimulated);
  EXPECT_EQ(rows[1].status, RowStatus::kFailed);
  EXPECT_CONTAINS(rows[1].failure, "signal 11");
  EXPECT_EQ(rows[2].status, RowStatus::kSimulated);
  const SetSummary s = summarize(rows, VALIDATION);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.simulated, 2);
  EXPECT_NEAR(s.mean_abs_error, 0.10, 1e-12);
}

TEST(ValidationRun, FilterKeepsMatchingIdsAndRejectsNone) {
  ScratchFolder folder("filter");
  folder.write("scenarios/s.textproto", testing::small_scenario());
  folder.write(kManifestName, run_entry("alpha") + run_entry("beta"));
  const ValidationSet set = load_validation_set(folder.path());
  RunOptions options;
  options.simulate = [](const planner::ResolvedScenario&, const std::optional<std::filesystem::path>&) {
    return Prediction{};
  };
  options.filter = "bet";
  const auto rows = run_validation(set, options);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].run.id(), "beta");
  options.filter = "gamma";
  EXPECT_THROW(run_validation(set, options), InputError);
}

TEST(ValidationRun, OverridesReachEveryRowsScenario) {
  ScratchFolder folder("overrides");
  folder.write("scenarios/s.textproto", testing::small_scenario());
  folder.write(kManifestName, run_entry("alpha") + run_entry("beta"));
  const ValidationSet set = load_validation_set(folder.path());
  RunOptions options;
  std::vector<int> prefetch;
  options.simulate = [&](const planner::ResolvedScenario& resolved, const std::optional<std::filesystem::path>&) {
    prefetch.push_back(resolved.scenario().training().prefetch_depth());
    return Prediction{};
  };
  options.overrides = {scenarios::parse_override("training.prefetch_depth=3")};
  const auto rows = run_validation(set, options);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(prefetch, (std::vector<int>{3, 3}));
  options.overrides = {scenarios::parse_override("training.prefetch_depth=99")};
  EXPECT_THROW(run_validation(set, options), InputError);
}

// `ragged validate --calibration`: the file measured on one GPU class reaches
// the rows on that class only, and the rows say which used it.
TEST(ValidationRun, ACalibrationFileReachesTheRowsOfItsGpuClassOnly) {
  ScratchFolder folder("calibrated");
  folder.write("scenarios/s.textproto", testing::small_scenario());  // h100
  folder.write(kManifestName, run_entry("on-h100") + run_entry("on-cpu", "shipped_scenario: \"tiny-llama-4xcpu\"",
                                                                 "published { tokens_per_s_per_gpu: 1000 }"));
  const ValidationSet set = load_validation_set(folder.path());
  RunOptions options;
  options.calibration = folder.path() / "calibration-h100.json";
  options.calibrated_preset = "h100";
  std::vector<std::string> given;
  options.simulate = [&](const planner::ResolvedScenario&, const std::optional<std::filesystem::path>& calibration) {
    given.push_back(calibration ? calibration->filename().string() : "defaults");
    return Prediction{};
  };
  const auto rows = run_validation(set, options);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(given, (std::vector<std::string>{"calibration-h100.json", "defaults"}));
  EXPECT_TRUE(rows[0].calibrated);
  EXPECT_FALSE(rows[1].calibrated);
  options.calibrated_preset = "h200";  // no row on it: every row on the defaults
  given.clear();
  run_validation(set, options);
  EXPECT_EQ(given, (std::vector<std::string>{"defaults", "defaults"}));
}

}  // namespace
}  // namespace ragged::validation
