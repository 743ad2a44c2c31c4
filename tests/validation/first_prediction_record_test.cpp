// `ragged validate --record-first-predictions`: every simulated row without a
// first prediction gets one, as the last field of its block, stamped with the
// commit and the day; rows that have one, excluded and failed rows are left
// alone; the rest of the file (comments, layout) is untouched; a second run
// records nothing.

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "validation/first_prediction_record.hpp"
#include "validation/validation_run.hpp"
#include "validation_test_util.hpp"

namespace ragged::validation {
namespace {

using testing::run_entry;
using testing::ScratchFolder;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::vector<RowResult> predicted(const ValidationSet& set, double tokens, double peak_gib, bool fail_second = false) {
  RunOptions options;
  int call = 0;
  options.simulate = [&](const planner::ResolvedScenario&, const std::optional<std::filesystem::path>&) {
    if (++call == 2 && fail_second) throw InternalError("the simulation process died");
    Prediction p;
    p.tokens_per_s_per_gpu = tokens;
    p.peak_reserved_bytes = static_cast<int64_t>(peak_gib * kGiB);
    p.peak_allocated_bytes = p.peak_reserved_bytes;
    return p;
  };
  return run_validation(set, options);
}

const std::string kManifest =
    "# A comment that must survive.\n" +
    run_entry("new") +
    run_entry("new-memory", "scenario: \"scenarios/s.textproto\"",
              "published { tokens_per_s_per_gpu: 1000 peak_memory_gib: 40 }",
              "  remeasured { source { title: \"T2\" url: \"u\" table: \"t\" row: \"r\" } "
              "tokens_per_s_per_gpu: 990 }\n") +
    run_entry("old", "scenario: \"scenarios/s.textproto\"", "published { tokens_per_s_per_gpu: 1000 }",
              "  first_prediction { tokens_per_s_per_gpu: 5 oom: false commit: \"abcdef0\" date: \"2026-01-01\" }\n") +
    run_entry("left-out", "", "published { tokens_per_s_per_gpu: 1 }", "  excluded: \"why\"\n");

TEST(FirstPredictionRecord, EveryNewSimulatedRowGetsOneAndNothingElseChanges) {
  ScratchFolder folder("record");
  folder.write("scenarios/s.textproto", testing::small_scenario());
  folder.write(kManifestName, kManifest);
  const ValidationSet set = load_validation_set(folder.path());
  const std::vector<RowResult> rows = predicted(set, 1234.56, 31.25);
  const std::vector<RecordedPrediction> recorded = record_first_predictions(set, rows, {"1a2b3c4", "2026-12-01"});
  ASSERT_EQ(recorded.size(), 2u);
  EXPECT_EQ(recorded[0].id, "new");
  EXPECT_EQ(recorded[0].field,
            "first_prediction { tokens_per_s_per_gpu: 1235 oom: false commit: \"1a2b3c4\" date: \"2026-12-01\" }");
  EXPECT_EQ(recorded[1].id, "new-memory");

  const std::string text = read_file(folder.path() / kManifestName);
  const ValidationSet after = load_validation_set(folder.path());
  const validation::Run& fresh = after.runs[after.index_of("new")];
  ASSERT_TRUE(fresh.has_first_prediction());
  EXPECT_EQ(fresh.first_prediction().tokens_per_s_per_gpu(), 1235);
  EXPECT_EQ(fresh.first_prediction().commit(), "1a2b3c4");
  EXPECT_EQ(fresh.first_prediction().date(), "2026-12-01");
  EXPECT_FALSE(fresh.first_prediction().has_peak_memory_gib());
  // A row that publishes memory records the peak it is compared with; its
  // nested block before the insertion stays whole.
  const validation::Run& memory = after.runs[after.index_of("new-memory")];
  EXPECT_DOUBLE_EQ(memory.first_prediction().peak_memory_gib(), 31.25);
  EXPECT_EQ(memory.remeasured_size(), 1);
  EXPECT_EQ(after.runs[after.index_of("old")].first_prediction().tokens_per_s_per_gpu(), 5);
  EXPECT_FALSE(after.runs[after.index_of("left-out")].has_first_prediction());

  // Removing the two inserted lines gives the file back as it was.
  std::string back = text;
  for (const RecordedPrediction& r : recorded) back.erase(back.find("  " + r.field + "\n"), r.field.size() + 3);
  EXPECT_EQ(back, kManifest);

  // Nothing is left to record; a new prediction does not replace the first.
  EXPECT_TRUE(record_first_predictions(after, predicted(after, 99, 1), {"fedcba9", "2026-12-02"}).empty());
  EXPECT_EQ(read_file(folder.path() / kManifestName), text);
}

TEST(FirstPredictionRecord, AFailedRowGetsNone) {
  ScratchFolder folder("record_failed");
  folder.write("scenarios/s.textproto", testing::small_scenario());
  folder.write(kManifestName, run_entry("first") + run_entry("second"));
  const ValidationSet set = load_validation_set(folder.path());
  const std::vector<RowResult> rows = predicted(set, 50.5, 1, /*fail_second=*/true);
  const std::vector<RecordedPrediction> recorded = record_first_predictions(set, rows, {"1a2b3c4", "2026-12-01"});
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].id, "first");
  EXPECT_CONTAINS(recorded[0].field, "tokens_per_s_per_gpu: 50.500 ");
  const ValidationSet after = load_validation_set(folder.path());
  EXPECT_FALSE(after.runs[after.index_of("second")].has_first_prediction());
}

TEST(FirstPredictionRecord, TheCommitIsHexDigits) {
  for (const char* bad : {"HEAD", "1a2b3c", "1A2B3C4", "1a2b3c4z", ""}) {
    try {
      check_commit(bad, "--record-first-predictions");
      FAIL() << bad;
    } catch (const InputError& e) {
      EXPECT_CONTAINS(std::string(e.what()), "7 to 40 lower-case hex digits (git rev-parse --short HEAD)");
    }
  }
  EXPECT_NO_THROW(check_commit("7334365", "--record-first-predictions"));
  EXPECT_EQ(today_utc().size(), 10u);
}

}  // namespace
}  // namespace ragged::validation
