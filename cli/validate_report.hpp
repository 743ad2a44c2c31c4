#pragma once
// What `ragged validate` shows: every row predicted against published, the
// excluded and failed rows with their reasons, and the summary of each set
// (calibration and validation apart); the same as JSON.

#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "validation/validation_run.hpp"
#include "validation/validation_set.hpp"
#include "validation/validation_summary.hpp"

namespace ragged::cli {

// `options`: what every row ran with, named in the header: the --set fields
// and the calibration file with the GPU class it reached.
void print_validation(const validation::ValidationSet& set, const std::vector<validation::RowResult>& rows,
                      std::ostream& out, const validation::RunOptions& options = {});
nlohmann::json validation_to_json(const validation::ValidationSet& set, const std::vector<validation::RowResult>& rows,
                                  const validation::RunOptions& options = {});

}  // namespace ragged::cli
