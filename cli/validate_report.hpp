#pragma once
// What `ragged validate` shows: every row predicted against published, the
// excluded and failed rows with their reasons, and the summary of each set
// (calibration and validation apart); the same as JSON.

#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/scenario_override.hpp"
#include "validation/validation_set.hpp"
#include "validation/validation_summary.hpp"

namespace ragged::cli {

// `overrides`: the --set fields every row ran with, named in the header.
void print_validation(const validation::ValidationSet& set, const std::vector<validation::RowResult>& rows,
                      std::ostream& out, const std::vector<scenarios::FieldOverride>& overrides = {});
nlohmann::json validation_to_json(const validation::ValidationSet& set, const std::vector<validation::RowResult>& rows,
                                  const std::vector<scenarios::FieldOverride>& overrides = {});

}  // namespace ragged::cli
