// The margin behind "fits, tightly" (traces::kPeakMemoryPredictionError) is
// the simulator's largest peak-memory error on its calibration runs: the
// test simulates them and fails when a model change moves that error away
// from the constant, in either direction, so the margin never claims more or
// less than the calibration shows.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "traces/metrics.hpp"
#include "validation/validation_run.hpp"

namespace ragged::validation {
namespace {

TEST(TightFit, MarginIsTheCalibrationSetsLargestMemoryError) {
  const ValidationSet set = load_validation_set(std::filesystem::path(RAGGED_SOURCE_DIR) / "validation");
  RunOptions options;
  options.filter = "torchtitan-paper";  // the calibration runs' ids
  double largest = 0;
  int rows = 0;
  for (const RowResult& row : run_validation(set, options)) {
    if (row.run.set() != CALIBRATION) continue;
    ASSERT_EQ(row.status, RowStatus::kSimulated) << row.run.id() << ": " << row.failure;
    const std::optional<double> error = memory_error(row);
    ASSERT_TRUE(error.has_value()) << row.run.id() << " publishes its peak memory";
    std::printf("%-45s memory error %+.2f%%\n", row.run.id().c_str(), 100 * *error);
    largest = std::max(largest, std::fabs(*error));
    ++rows;
  }
  ASSERT_EQ(rows, 4);
  std::printf("largest |memory error| %.2f%%, margin %.2f%%\n", 100 * largest,
              100 * traces::kPeakMemoryPredictionError);
  EXPECT_GE(traces::kPeakMemoryPredictionError, largest);
  EXPECT_LT(traces::kPeakMemoryPredictionError, largest + 0.005) << "the margin is the error rounded up to 0.5%";
}

}  // namespace
}  // namespace ragged::validation
