// Issue 48: every validation run added since Run.first_prediction exists
// records its first prediction (the out-of-sample figure). The rows before it
// are a closed list, so a new row without one fails here.

#include <gtest/gtest.h>

#include <filesystem>

#include "validation/validation_set.hpp"

namespace ragged::validation {
namespace {

// Validation rows without a first prediction when the field was added
// (262 runs, 8 of them with one: the mesh and pipeline rows of 2026-11-28).
constexpr int kRowsBeforeTheField = 254;

TEST(FirstPrediction, RowsAddedSinceTheFieldRecordTheirFirstPrediction) {
  const ValidationSet set = load_validation_set(std::filesystem::path(RAGGED_SOURCE_DIR) / "validation");
  int without = 0, with = 0;
  for (const validation::Run& run : set.runs) {
    if (run.has_first_prediction()) {
      ++with;
      EXPECT_FALSE(run.first_prediction().commit().empty()) << run.id();
    } else {
      ++without;
    }
  }
  EXPECT_LE(without, kRowsBeforeTheField)
      << "a run added without first_prediction { tokens_per_s_per_gpu commit date }: simulate it before changing "
         "anything for it and record what the simulator said (ragged validate --filter ID "
         "--record-first-predictions COMMIT)";
  EXPECT_GE(with, 8);
}

}  // namespace
}  // namespace ragged::validation
