// The summary arithmetic against expectations worked out by hand.

#include <algorithm>

#include <gtest/gtest.h>

#include "common/units.hpp"
#include "validation/validation_summary.hpp"

namespace ragged::validation {
namespace {

struct RowSpec {
  const char* id;
  Set set;
  double published;          // tokens/s; 0: the source reports OOM
  double predicted;          // tokens/s
  bool predicted_oom = false;
  double published_gib = 0;  // 0: not given
  double predicted_gib = 0;
  RowStatus status = RowStatus::kSimulated;
};

RowResult make_row(const RowSpec& spec) {
  RowResult row;
  row.run.set_id(spec.id);
  row.run.set_set(spec.set);
  if (spec.published > 0) row.run.mutable_published()->set_tokens_per_s_per_gpu(spec.published);
  else row.run.mutable_published()->set_ran(false);
  if (spec.published_gib > 0) row.run.mutable_published()->set_peak_memory_gib(spec.published_gib);
  row.status = spec.status;
  row.predicted.tokens_per_s_per_gpu = spec.predicted;
  row.predicted.oom = spec.predicted_oom;
  row.predicted.peak_reserved_bytes = static_cast<int64_t>(spec.predicted_gib * kGiB);
  return row;
}

std::vector<RowResult> rows() {
  const std::vector<RowSpec> specs = {
      {"a", VALIDATION, 1000, 1100},                            // +10%
      {"b", VALIDATION, 2000, 1700},                            // -15%, the worst
      {"c", VALIDATION, 500, 550, true},                        // +10%, a false OOM
      {"d", VALIDATION, 0, 80, true},                           // published OOM, predicted OOM: agree
      {"e", VALIDATION, 0, 90, false},                          // published OOM, predicted to fit: missed
      {"f", VALIDATION, 700, 0, false, 0, 0, RowStatus::kFailed},
      {"g", VALIDATION, 900, 0, false, 0, 0, RowStatus::kExcluded},
      {"h", VALIDATION, 400, 400, false, 50, 54},               // 0%, memory +8% (within 10%)
      {"i", VALIDATION, 300, 330, false, 40, 45},               // +10%, memory +12.5% (outside)
      {"j", CALIBRATION, 100, 95, false, 80, 84},               // -5%, memory +5%
  };
  std::vector<RowResult> out;
  for (const RowSpec& s : specs) out.push_back(make_row(s));
  return out;
}

// A source that publishes allocated memory is compared with the predicted
// peak allocated, not reserved.
TEST(ValidationSummary, AllocatedMemoryIsComparedWithPredictedAllocated) {
  RowResult row = make_row({"k", VALIDATION, 100, 100});
  row.run.mutable_published()->set_peak_allocated_gib(40);
  row.predicted.peak_reserved_bytes = static_cast<int64_t>(50 * kGiB);
  row.predicted.peak_allocated_bytes = static_cast<int64_t>(30 * kGiB);
  EXPECT_EQ(predicted_memory_bytes(row), row.predicted.peak_allocated_bytes);
  EXPECT_NEAR(*memory_error(row), -0.25, 1e-9);
  EXPECT_EQ(published_memory_text(row.run.published()), "40.0 alloc");
  const RowResult reserved = rows()[7];
  EXPECT_EQ(predicted_memory_bytes(reserved), reserved.predicted.peak_reserved_bytes);
  EXPECT_EQ(published_memory_text(reserved.run.published()), "50.0");
  EXPECT_EQ(published_memory_text(rows()[0].run.published()), "-");
}

// A pipeline's stages hold different memory: a source that names the rank it
// logs is compared with that rank's stage (stages run consecutive blocks of
// ranks), one that does not with the stage of the highest peak.
TEST(ValidationSummary, AMemoryRankIsComparedWithItsStage) {
  RowResult row = make_row({"p", VALIDATION, 100, 100});
  row.run.mutable_published()->set_peak_allocated_gib(40);
  row.predicted.peak_reserved_bytes = static_cast<int64_t>(70 * kGiB);
  row.predicted.peak_allocated_bytes = static_cast<int64_t>(60 * kGiB);  // the largest stage's
  const auto gib = [](double g) { return static_cast<int64_t>(g * kGiB); };
  row.predicted.stages = {{0, gib(50), gib(36)}, {8, gib(45), gib(44)}, {16, gib(70), gib(60)}};
  EXPECT_EQ(predicted_memory_bytes(row), gib(60));
  for (const auto& [rank, allocated] : std::vector<std::pair<int, double>>{{0, 36}, {7, 36}, {8, 44}, {23, 60}}) {
    row.run.mutable_published()->set_memory_rank(rank);
    EXPECT_EQ(predicted_memory_bytes(row), gib(allocated)) << rank;
  }
  row.run.mutable_published()->set_memory_rank(8);
  EXPECT_NEAR(*memory_error(row), 44.0 / 40 - 1, 1e-9);
  EXPECT_EQ(published_memory_text(row.run.published()), "40.0 alloc r8");
  row.run.mutable_published()->clear_peak_allocated_gib();
  row.run.mutable_published()->set_peak_memory_gib(50);
  EXPECT_EQ(predicted_memory_bytes(row), gib(45));  // reserved, of rank 8's stage
  row.predicted.stages.clear();                      // no stages: every rank alike
  EXPECT_EQ(predicted_memory_bytes(row), gib(70));
}

TEST(ValidationSummary, RowErrors) {
  const auto r = rows();
  EXPECT_NEAR(*throughput_error(r[0]), 0.10, 1e-12);
  EXPECT_NEAR(*throughput_error(r[1]), -0.15, 1e-12);
  EXPECT_FALSE(throughput_error(r[3]).has_value());  // no published throughput
  EXPECT_FALSE(throughput_error(r[5]).has_value());  // failed
  EXPECT_FALSE(throughput_error(r[6]).has_value());  // excluded
  EXPECT_NEAR(*memory_error(r[7]), 0.08, 1e-9);
  EXPECT_NEAR(*memory_error(r[8]), 0.125, 1e-9);
  EXPECT_FALSE(memory_error(r[0]).has_value());
  EXPECT_EQ(oom_agreement(r[0]), OomAgreement::kAgree);
  EXPECT_EQ(oom_agreement(r[2]), OomAgreement::kFalseOom);
  EXPECT_EQ(oom_agreement(r[3]), OomAgreement::kAgree);
  EXPECT_EQ(oom_agreement(r[4]), OomAgreement::kMissedOom);
  EXPECT_EQ(oom_agreement(r[5]), OomAgreement::kNotApplicable);
}

TEST(ValidationSummary, ValidationSet) {
  const SetSummary s = summarize(rows(), VALIDATION);
  EXPECT_EQ(s.rows, 8);        // a-f, h, i (g is excluded)
  EXPECT_EQ(s.excluded, 1);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.simulated, 7);
  EXPECT_EQ(s.throughput_rows, 5);  // a, b, c, h, i
  // (0.10 + 0.15 + 0.10 + 0 + 0.10) / 5
  EXPECT_NEAR(s.mean_abs_error, 0.09, 1e-12);
  EXPECT_NEAR(s.max_abs_error, 0.15, 1e-12);
  EXPECT_EQ(s.max_error_id, "b");
  EXPECT_EQ(s.oom_rows, 7);
  EXPECT_EQ(s.oom_agree, 5);  // a, b, d, h, i
  EXPECT_EQ(s.false_ooms, 1);
  EXPECT_EQ(s.missed_ooms, 1);
  EXPECT_EQ(s.memory_rows, 2);
  EXPECT_EQ(s.memory_within_tolerance, 1);
  EXPECT_NEAR(s.mean_abs_memory_error, (0.08 + 0.125) / 2, 1e-9);
}

// A fit is tight when the predicted peak / (1 - 5.5%) passes the allocator's
// capacity: 54 GiB of 56 is (54 / 0.945 = 57.1 GiB), 45 of 56 is not (47.6).
TEST(ValidationSummary, TightFitsAreCountedApartFromTheOomAgreement) {
  std::vector<RowResult> r = rows();
  for (RowResult& row : r) row.predicted.allocator_capacity_bytes = static_cast<int64_t>(56 * kGiB);
  EXPECT_TRUE(fits_tightly(r[7]));
  EXPECT_FALSE(fits_tightly(r[8]));
  EXPECT_FALSE(fits_tightly(r[2]));  // an OOM is not a fit
  EXPECT_FALSE(fits_tightly(r[5]));  // a failed row has no prediction
  const SetSummary s = summarize(r, VALIDATION);
  EXPECT_EQ(s.tight_fits, 1);
  EXPECT_EQ(s.oom_agree, 5);  // a tight fit still agrees with a run that ran
}

// A row its source measured again: the errors against each measurement, the
// spread of the measurements (max / min - 1) and whether the prediction lies
// between them; the summary's errors still use the published figure alone.
TEST(ValidationSummary, RemeasuredRowsReportTheSpreadOfTheirMeasurements) {
  std::vector<RowResult> r = rows();
  auto remeasure = [](RowResult& row, double tokens) {
    Remeasurement* m = row.run.add_remeasured();
    m->set_tokens_per_s_per_gpu(tokens);
  };
  remeasure(r[0], 1250);  // a: published 1000, predicted 1100: between them
  remeasure(r[1], 1900);  // b: published 2000, predicted 1700: below both
  remeasure(r[1], 2100);
  const std::vector<double> a = remeasured_errors(r[0]);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_NEAR(a[0], 1100.0 / 1250 - 1, 1e-12);
  EXPECT_NEAR(*published_spread(r[0].run), 0.25, 1e-12);
  EXPECT_NEAR(*published_spread(r[1].run), 2100.0 / 1900 - 1, 1e-12);
  EXPECT_TRUE(within_published_range(r[0]));
  EXPECT_FALSE(within_published_range(r[1]));
  EXPECT_FALSE(published_spread(r[2].run).has_value());
  EXPECT_TRUE(remeasured_errors(r[2]).empty());
  const SetSummary s = summarize(r, VALIDATION);
  EXPECT_EQ(s.remeasured_rows, 2);
  EXPECT_EQ(s.within_published_range, 1);
  EXPECT_NEAR(s.max_published_spread, 0.25, 1e-12);
  EXPECT_EQ(s.max_spread_id, "a");
  EXPECT_NEAR(s.mean_abs_error, 0.09, 1e-12);  // unchanged: the published figures alone
}

// Out of sample: a row's first prediction is compared with its published
// figure, and the summary sets it beside today's error over the same rows;
// rows without one (and rows whose throughput is not compared) count in
// neither; per source, the same.
TEST(ValidationSummary, FirstPredictionsAreSetBesideTodaysErrorOverTheSameRows) {
  std::vector<RowResult> r = rows();
  auto first = [](RowResult& row, double tokens, const char* source) {
    row.run.mutable_first_prediction()->set_tokens_per_s_per_gpu(tokens);
    row.run.mutable_first_prediction()->set_commit("abc1234");
    row.run.mutable_source()->set_title(source);
  };
  first(r[0], 1300, "paper");  // a: published 1000, first +30%, now +10%
  first(r[1], 1900, "paper");  // b: published 2000, first -5%, now -15%
  first(r[5], 800, "paper");   // f: failed to simulate: not compared
  r[7].run.mutable_source()->set_title("blog");  // h: no first prediction
  EXPECT_NEAR(*first_prediction_error(r[0]), 0.30, 1e-12);
  EXPECT_FALSE(first_prediction_error(r[5]).has_value());
  EXPECT_FALSE(first_prediction_error(r[7]).has_value());
  const SetSummary s = summarize(r, VALIDATION);
  EXPECT_EQ(s.first_prediction_rows, 2);
  EXPECT_NEAR(s.first_mean_abs_error, (0.30 + 0.05) / 2, 1e-12);
  EXPECT_NEAR(s.first_max_abs_error, 0.30, 1e-12);
  EXPECT_NEAR(s.current_mean_abs_error_of_first, (0.10 + 0.15) / 2, 1e-12);
  EXPECT_NEAR(s.mean_abs_error, 0.09, 1e-12);  // unchanged: today's figures over every compared row
  const std::vector<SourceSummary> sources = summarize_by_source(r, VALIDATION);
  ASSERT_GE(sources.size(), 2u);
  const auto paper = std::find_if(sources.begin(), sources.end(), [](const SourceSummary& x) { return x.source == "paper"; });
  ASSERT_NE(paper, sources.end());
  EXPECT_EQ(paper->throughput_rows, 2);
  EXPECT_EQ(paper->first_prediction_rows, 2);
  EXPECT_NEAR(paper->first_mean_abs_error, 0.175, 1e-12);
  EXPECT_GE(sources.front().throughput_rows, sources.back().throughput_rows);  // largest first
}

// A run whose throughput is left out (its source does not state the GPU)
// still counts in the memory and OOM figures, and in no throughput one.
TEST(ValidationSummary, ThroughputExcludedRowsCountOnMemoryAndOomOnly) {
  std::vector<RowResult> r = rows();
  r.push_back(make_row({"k", VALIDATION, 100, 250, false, 40, 46}));  // +150%, memory +15%
  r.push_back(make_row({"l", VALIDATION, 0, 90, false}));              // published OOM, predicted to fit
  for (size_t i = r.size() - 2; i < r.size(); ++i) r[i].run.set_throughput_excluded("GPU not stated");
  Remeasurement* again = r[r.size() - 2].run.add_remeasured();
  again->set_tokens_per_s_per_gpu(240);
  EXPECT_FALSE(throughput_compared(r[r.size() - 2]));
  EXPECT_TRUE(throughput_compared(r[0]));
  EXPECT_FALSE(throughput_error(r[r.size() - 2]).has_value());
  EXPECT_TRUE(remeasured_errors(r[r.size() - 2]).empty());
  EXPECT_FALSE(within_published_range(r[r.size() - 2]));
  EXPECT_NEAR(*memory_error(r[r.size() - 2]), 0.15, 1e-9);
  const SetSummary s = summarize(r, VALIDATION);
  EXPECT_EQ(s.rows, 10);
  EXPECT_EQ(s.simulated, 9);
  EXPECT_EQ(s.throughput_excluded, 2);
  EXPECT_EQ(s.throughput_rows, 5);              // unchanged: a, b, c, h, i
  EXPECT_NEAR(s.mean_abs_error, 0.09, 1e-12);   // unchanged
  EXPECT_NEAR(s.max_abs_error, 0.15, 1e-12);    // b, not k's +150%
  EXPECT_EQ(s.remeasured_rows, 0);
  EXPECT_EQ(s.oom_rows, 9);
  EXPECT_EQ(s.missed_ooms, 2);                  // e and l
  EXPECT_EQ(s.memory_rows, 3);                  // h, i and k
  EXPECT_EQ(s.memory_within_tolerance, 1);
}

TEST(ValidationSummary, CalibrationSetApart) {
  const SetSummary s = summarize(rows(), CALIBRATION);
  EXPECT_EQ(s.rows, 1);
  EXPECT_EQ(s.throughput_rows, 1);
  EXPECT_NEAR(s.mean_abs_error, 0.05, 1e-12);
  EXPECT_NEAR(s.max_abs_error, 0.05, 1e-12);
  EXPECT_EQ(s.memory_within_tolerance, 1);
}

TEST(ValidationSummary, EmptySetIsZero) {
  const SetSummary s = summarize({}, VALIDATION);
  EXPECT_EQ(s.rows, 0);
  EXPECT_EQ(s.throughput_rows, 0);
  EXPECT_EQ(s.mean_abs_error, 0);
  EXPECT_EQ(s.max_error_id, "");
}

}  // namespace
}  // namespace ragged::validation
