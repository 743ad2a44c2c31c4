#pragma once
// The validation residuals as the table prediction bands read
// (sim/residual_table.hpp): one row per simulated row of the validation set
// (calibration rows left out), with its regime and its errors. Written by
// `ragged validate --write-residuals FILE` (through a temporary file renamed
// into place), checked into validation/residuals.tsv.

#include <filesystem>
#include <string>
#include <vector>

#include "sim/residual_table.hpp"
#include "validation/validation_summary.hpp"

namespace ragged::validation {

// The training stack a source describes, one name for its tables
// ("MosaicML llm-foundry" for the README and the micro-batch sweep).
std::string stack_of(const Run& run);

// The simulated validation rows of `rows`, in their order.
std::vector<sim::ResidualRow> residual_rows(const std::vector<RowResult>& rows);

// Writes the table with a header saying what produced it: `command` as typed
// and today's date. Throws InputError when the file cannot be written.
void write_residual_table(const std::filesystem::path& path, const std::vector<RowResult>& rows,
                          const std::string& command);

}  // namespace ragged::validation
