#pragma once
// The Validation tab's arithmetic, without Qt: which runs a filter keeps, and
// what the kept runs say of the simulator (how many were compared, the mean
// error, the share within 10%, the worst). The rows are the validation
// residuals compiled into the binary (sim::shipped_residual_table, from
// `ragged validate --write-residuals validation/residuals.tsv`).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/residual_table.hpp"

namespace ragged::gui {

// Every whitespace-separated word of `filter` appears, in any case, in the
// run's id, stack, GPU, strategy or checkpointing; an empty filter keeps all.
bool row_matches(const sim::ResidualRow& row, std::string_view filter);

struct ValidationSummary {
  int rows = 0;
  int compared = 0;             // rows whose tokens/s was compared (throughput_error present)
  double mean_abs_error = 0;    // over the compared rows
  double within_ten_percent = 0;  // share of the compared rows with |error| <= 10%
  std::string worst_id;         // the compared row with the largest |error|
  double worst_error = 0;
  int memory_compared = 0;
  double mean_abs_memory_error = 0;
};

ValidationSummary summarize(const std::vector<const sim::ResidualRow*>& rows);
// "36 runs; tokens/s compared on 36: mean |error| 9.6%, 58% within 10%, worst <id> (+21.5%); memory on 0"
std::string summary_text(const ValidationSummary& summary);
// "+5.1%", "-12.0%", or "-" when absent.
std::string error_text(const std::optional<double>& error);

// What Explore opens for a validation run: its scenario file in `folder` (a
// validation folder: runs.textproto and its scenarios), or its shipped
// scenario's name. Throws InputError naming the folder when it cannot be
// read, or the run when the folder does not hold it.
std::string run_scenario(const std::string& folder, const std::string& run_id);

}  // namespace ragged::gui
