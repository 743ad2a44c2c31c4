// Every bad-input path of a validation folder is one error naming the file,
// the line and column, and the field path, with the fix.

#include <gtest/gtest.h>

#include "validation_test_util.hpp"

namespace ragged::validation {
namespace {

using testing::read_error;
using testing::run_entry;
using testing::ScratchFolder;

class ValidationSetTest : public ::testing::Test {
 protected:
  ValidationSetTest() : folder_("set") { folder_.write("scenarios/s.textproto", testing::small_scenario()); }
  std::string error(const std::string& manifest) { return read_error(folder_, manifest); }
  // The error of a one-run set ("a", the scratch scenario) whose published block is `published`.
  std::string published_error(const std::string& published) {
    return error(run_entry("a", "scenario: \"scenarios/s.textproto\"", published));
  }
  std::string manifest_path() const { return (folder_.path() / kManifestName).string(); }
  ScratchFolder folder_;
};

TEST_F(ValidationSetTest, ValidFolderReads) {
  EXPECT_EQ(error(run_entry("a") + run_entry("b")), "");
  const ValidationSet set = load_validation_set(folder_.path());
  ASSERT_EQ(set.runs.size(), 2u);
  EXPECT_EQ(set.runs[1].id(), "b");
  EXPECT_EQ(set.scenario_path(set.runs[0]), folder_.path() / "scenarios/s.textproto");
  EXPECT_EQ(set.origin, manifest_path());
  EXPECT_EQ(set.index_of("b"), 1u);
  EXPECT_THROW(set.index_of("c"), InternalError);
}

TEST_F(ValidationSetTest, UnknownFieldNamesLineColumnAndTheFieldsOfRun) {
  std::string text = run_entry("a", "scenario: \"scenarios/s.textproto\"", "published { tokens_per_s_per_gpu: 1 }",
                               "  sett: VALIDATION\n");
  std::string e = error(text);
  EXPECT_CONTAINS(e, manifest_path() + ":7:3:");
  EXPECT_CONTAINS(e, "unknown field 'sett'");
  EXPECT_CONTAINS(e, "shipped_scenario");
}

// Reports print a run's notes and reasons: a byte that is not UTF-8 ended
// `ragged validate --json` in nlohmann's type_error (internal error), an ESC
// reached the terminal.
TEST_F(ValidationSetTest, TextThatIsNotUtf8OrSteersTheTerminalIsRefusedAtItsField) {
  const std::string manifest = manifest_path();
  EXPECT_CONTAINS(error(run_entry("a", "scenario: \"scenarios/s.textproto\"", "published { tokens_per_s_per_gpu: 1 }",
                                  "  excluded: \"\\377 not modelled\"\n")),
                  manifest + ":7:3: runs[0].excluded: excluded is not valid UTF-8 (byte 1 of 14)");
  EXPECT_CONTAINS(error(run_entry("a") + run_entry("b", "scenario: \"scenarios/s.textproto\"",
                                                   "published { tokens_per_s_per_gpu: 1 }",
                                                   "  notes: \"red \\x1b[31m\"\n")),
                  manifest + ":14:3: runs[1].notes: notes holds the control character \\x1b (byte 5 of 9)");
  EXPECT_EQ(error(run_entry("a", "scenario: \"scenarios/s.textproto\"", "published { tokens_per_s_per_gpu: 1 }",
                            "  notes: \"two\\nlines\"\n")),
            "");
}

TEST_F(ValidationSetTest, SyntaxErrorNamesLine) {
  std::string e = error("runs {\n  id: \"a\"\n");
  EXPECT_CONTAINS(e, manifest_path() + ":3:");
  EXPECT_CONTAINS(e, "closing '}'");
}

TEST_F(ValidationSetTest, EmptyFileHasNoRuns) { EXPECT_CONTAINS(error("# nothing\n"), "no runs"); }

TEST_F(ValidationSetTest, MissingSetPointsAtTheRun) {
  std::string text = run_entry("a");
  text.replace(text.find("  set: VALIDATION\n"), 18, "");
  std::string e = error(text);
  EXPECT_CONTAINS(e, manifest_path() + ":1:1: runs[0].set: missing");
  EXPECT_CONTAINS(e, "set: VALIDATION");
}

TEST_F(ValidationSetTest, DuplicateIdNamesBothRuns) {
  std::string e = error(run_entry("a") + run_entry("b") + run_entry("a"));
  EXPECT_CONTAINS(e, ":16:3: runs[2].id: 'a' is already the id of runs[0]");
}

TEST_F(ValidationSetTest, FirstPredictionNeedsAPositiveValueItsCommitAndADate) {
  auto with = [](const std::string& first) {
    return run_entry("a", "scenario: \"scenarios/s.textproto\"", "published { tokens_per_s_per_gpu: 1 }",
                     "  first_prediction { " + first + " }\n");
  };
  EXPECT_EQ(error(with("tokens_per_s_per_gpu: 2 commit: \"abc1234\" date: \"2026-11-29\"")), "");
  EXPECT_CONTAINS(error(with("tokens_per_s_per_gpu: 0 commit: \"abc1234\"")),
                  "runs[0].first_prediction.tokens_per_s_per_gpu: must be positive");
  EXPECT_CONTAINS(error(with("tokens_per_s_per_gpu: 2")), "runs[0].first_prediction.commit: missing");
  EXPECT_CONTAINS(error(with("tokens_per_s_per_gpu: 2 commit: \"abc\" date: \"29.11.2026\"")),
                  "runs[0].first_prediction.date: '29.11.2026' is not a date: write YYYY-MM-DD");
}

TEST_F(ValidationSetTest, AFirstMemoryPredictionNeedsAPublishedMemoryFigure) {
  auto with = [](const std::string& published) {
    return run_entry("a", "scenario: \"scenarios/s.textproto\"", "published { tokens_per_s_per_gpu: 1 " + published + " }",
                     "  first_prediction { tokens_per_s_per_gpu: 2 commit: \"abc1234\" peak_memory_gib: 40 }\n");
  };
  EXPECT_EQ(error(with("peak_allocated_gib: 50")), "");
  EXPECT_CONTAINS(error(with("")), "runs[0].first_prediction.peak_memory_gib: no published memory to compare it with");
  EXPECT_CONTAINS(error(run_entry("a", "scenario: \"scenarios/s.textproto\"", "published { tokens_per_s_per_gpu: 1 }",
                                  "  first_prediction { tokens_per_s_per_gpu: 2 commit: \"abc\" peak_memory_gib: 0 }\n")),
                  "runs[0].first_prediction.peak_memory_gib: must be positive");
}

TEST_F(ValidationSetTest, IdWithSpaces) { EXPECT_CONTAINS(error(run_entry("a b")), "runs[0].id: 'a b' has characters"); }

TEST_F(ValidationSetTest, MissingScenarioFile) {
  std::string e = error(run_entry("a", "scenario: \"scenarios/nope.textproto\""));
  EXPECT_CONTAINS(e, ":3:3: runs[0].scenario: 'scenarios/nope.textproto' is not a file");
  EXPECT_CONTAINS(e, "relative to the folder");
}

TEST_F(ValidationSetTest, UnknownShippedScenario) {
  EXPECT_CONTAINS(error(run_entry("a", "shipped_scenario: \"nope\"")),
                  ":3:3: runs[0].shipped_scenario: 'nope' is not a shipped scenario");
  EXPECT_EQ(error(run_entry("a", "shipped_scenario: \"llama3-8b-8xh100\"")), "");
}

TEST_F(ValidationSetTest, NoScenarioNeedsAnExclusion) {
  EXPECT_CONTAINS(error(run_entry("a", "")), "runs[0].scenario: missing");
  EXPECT_EQ(error(run_entry("a", "", "published { tokens_per_s_per_gpu: 1 }", "  excluded: \"not expressible\"\n")), "");
}

// A run compared on memory alone must publish memory (or an OOM) and is not
// also excluded.
TEST_F(ValidationSetTest, ThroughputExclusionKeepsSomethingToCompare) {
  const std::string scenario = "scenario: \"scenarios/s.textproto\"";
  const std::string reason = "  throughput_excluded: \"GPU not stated\"\n";
  EXPECT_EQ(error(run_entry("a", scenario, "published { tokens_per_s_per_gpu: 1 peak_allocated_gib: 4 }", reason)), "");
  EXPECT_EQ(error(run_entry("a", scenario, "published { ran: false }", reason)), "");
  EXPECT_CONTAINS(error(run_entry("a", scenario, "published { tokens_per_s_per_gpu: 1 }", reason)),
                  "runs[0].throughput_excluded: the run publishes no memory and ran");
  EXPECT_CONTAINS(error(run_entry("a", scenario, "published { tokens_per_s_per_gpu: 1 peak_memory_gib: 4 }",
                                  reason + "  excluded: \"not expressible\"\n")),
                  "runs[0].throughput_excluded: given with excluded");
}

TEST_F(ValidationSetTest, SourceFieldsAreRequired) {
  std::string text = run_entry("a");
  text.replace(text.find("url: \"https://example.org\" "), 27, "");
  EXPECT_CONTAINS(error(text), ":5:3: runs[0].source.url: missing");
  std::string no_source = run_entry("a");
  no_source.replace(no_source.find("  source {"), no_source.find("\n  published") - no_source.find("  source {") + 1, "");
  EXPECT_CONTAINS(error(no_source), "runs[0].source: missing");
}

TEST_F(ValidationSetTest, PublishedNeedsAThroughputOrRanFalse) {
  EXPECT_CONTAINS(published_error("published { peak_memory_gib: 3 }"), ":6:3: runs[0].published: no throughput");
  EXPECT_CONTAINS(published_error(""), "runs[0].published: missing");
  EXPECT_EQ(published_error("published { ran: false }"), "");
}

TEST_F(ValidationSetTest, RanFalseWithAThroughputContradicts) {
  EXPECT_CONTAINS(published_error("published { tokens_per_s_per_gpu: 5 ran: false }"),
                  ":6:39: runs[0].published.ran: false, but a throughput is given");
}

TEST_F(ValidationSetTest, NumbersMustBePositive) {
  EXPECT_CONTAINS(published_error("published { tokens_per_s_per_gpu: -3 }"),
                  "runs[0].published.tokens_per_s_per_gpu: must be positive (got -3)");
  EXPECT_CONTAINS(published_error("published { tokens_per_s_per_gpu: 3 peak_memory_gib: 0 }"),
                  "runs[0].published.peak_memory_gib: must be positive");
  EXPECT_CONTAINS(published_error("published { tokens_per_s_per_gpu: 3 peak_allocated_gib: -1 }"),
                  "runs[0].published.peak_allocated_gib: must be positive (got -1)");
}

TEST_F(ValidationSetTest, OneMemoryFigureReservedOrAllocated) {
  EXPECT_CONTAINS(published_error("published { tokens_per_s_per_gpu: 3 peak_memory_gib: 5 peak_allocated_gib: 4 }"),
                  "runs[0].published.peak_allocated_gib: give one memory figure");
  EXPECT_EQ(published_error("published { tokens_per_s_per_gpu: 3 peak_allocated_gib: 4 }"), "");
}

TEST_F(ValidationSetTest, AMemoryRankIsARankOfAMemoryFigure) {
  EXPECT_EQ(published_error("published { tokens_per_s_per_gpu: 3 peak_allocated_gib: 4 memory_rank: 0 }"), "");
  EXPECT_CONTAINS(published_error("published { tokens_per_s_per_gpu: 3 peak_memory_gib: 4 memory_rank: -1 }"),
                  "runs[0].published.memory_rank: must be a rank, 0 or more (got -1)");
  EXPECT_CONTAINS(published_error("published { tokens_per_s_per_gpu: 3 memory_rank: 2 }"),
                  "runs[0].published.memory_rank: names the rank of a memory figure");
}

TEST_F(ValidationSetTest, TflopsNeedTheSourcesFlopsPerTokenAndConvention) {
  EXPECT_CONTAINS(published_error("published { tflops { per_gpu: 150 convention: \"6N\" } }"),
                  "runs[0].published.tflops.flops_per_token: must be positive (got 0)");
  EXPECT_CONTAINS(published_error("published { tflops { per_gpu: 150 flops_per_token: 5e10 } }"),
                  "runs[0].published.tflops.convention: missing");
}

// Another measurement of the run's configuration names its own source, a
// positive throughput, and needs the run's published throughput beside it.
TEST_F(ValidationSetTest, RemeasurementsNeedASourceAndAPositiveThroughput) {
  const std::string scenario = "scenario: \"scenarios/s.textproto\"";
  const std::string published = "published { tokens_per_s_per_gpu: 1000 }";
  const std::string source = "source { title: \"T\" url: \"u\" table: \"t\" row: \"r\" } ";
  EXPECT_EQ(error(run_entry("a", scenario, published,
                            "  remeasured { " + source + "tokens_per_s_per_gpu: 900 differs: \"image\" }\n")),
            "");
  EXPECT_CONTAINS(error(run_entry("a", scenario, published, "  remeasured { " + source + "}\n")),
                  ":7:3: runs[0].remeasured[0].tokens_per_s_per_gpu: must be positive (got 0)");
  EXPECT_CONTAINS(error(run_entry("a", scenario, published,
                                  "  remeasured { " + source + "tokens_per_s_per_gpu: 9 }\n"
                                  "  remeasured { source { title: \"T\" url: \"u\" row: \"r\" } "
                                  "tokens_per_s_per_gpu: 9 }\n")),
                  "runs[0].remeasured[1].source.table: missing");
  EXPECT_CONTAINS(error(run_entry("a", scenario, published, "  remeasured { tokens_per_s_per_gpu: 9 }\n")),
                  "runs[0].remeasured[0].source: missing");
  EXPECT_CONTAINS(error(run_entry("a", scenario, "published { ran: false }",
                                  "  remeasured { " + source + "tokens_per_s_per_gpu: 9 }\n")),
                  "runs[0].remeasured[0]: the run publishes no throughput");
}

TEST_F(ValidationSetTest, MissingFolderAndManifest) {
  try {
    load_validation_set(folder_.path() / "nope");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "not a folder");
  }
  try {
    load_validation_set(folder_.path() / "scenarios");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "no runs.textproto in this folder");
  }
}

TEST(ValidationPublished, TokensAsPublishedOrFromTflopsInTheSourcesConvention) {
  Published p;
  p.set_tokens_per_s_per_gpu(2973);
  EXPECT_EQ(published_tokens_per_s(p), 2973.0);
  EXPECT_TRUE(published_ran(p));
  // 150 TFLOP/s at 5e10 FLOPs per token: 150e12 / 5e10 = 3000 tokens/s.
  p.mutable_tflops()->set_per_gpu(150);
  p.mutable_tflops()->set_flops_per_token(5e10);
  EXPECT_DOUBLE_EQ(*published_tokens_per_s(p), 3000.0);
  Published oom;
  oom.set_ran(false);
  EXPECT_FALSE(published_tokens_per_s(oom).has_value());
  EXPECT_FALSE(published_ran(oom));
}

TEST(ValidationShippedSet, TheRepositorySetReads) {
  const ValidationSet set = load_validation_set(default_validation_dir());
  EXPECT_GE(set.runs.size(), 40u);
  int calibration = 0;
  for (const validation::Run& run : set.runs) calibration += run.set() == CALIBRATION;
  EXPECT_EQ(calibration, 4);  // TorchTitan's 8 and 128 GPU points, eager and compiled
}

}  // namespace
}  // namespace ragged::validation
