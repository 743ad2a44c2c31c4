#pragma once
// Runs a validation set through the simulator: every row's scenario is read
// and resolved first (a bad scenario or unknown model ends the run with an
// InputError naming the row, the file and the field), then each row is
// simulated in its own child process (sim/child_process), `jobs` of them at
// once. A row whose simulation fails is reported as failed, with the reason;
// the other rows still run. The rows come back in the set's order whatever
// the jobs.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_override.hpp"
#include "validation/validation_set.hpp"
#include "validation/validation_summary.hpp"

namespace ragged::validation {

struct RunOptions {
  std::string filter;  // only the runs whose id contains this text; "" = all
  // Set on every row's scenario before it is resolved (`--set`): a hypothesis
  // tried on the whole set, e.g. training.prefetch_depth=0.
  std::vector<scenarios::FieldOverride> overrides;
  // Called after each row (simulated, failed or excluded), one call at a
  // time, in the order the rows finish: rows done, rows in all.
  std::function<void(size_t done, size_t total, const RowResult& row)> progress;
  // Rows simulated at once, each in its own child process from its own
  // thread (1: one after the other). With more than one, `simulate` is
  // called from several threads at once.
  int jobs = 1;
  // A compute calibration file measured on a GPU (`ragged validate
  // --calibration`): the rows whose GPU preset is `calibrated_preset` are
  // simulated with it, the others with the default tables.
  std::optional<std::filesystem::path> calibration;
  std::string calibrated_preset;
  // How a row is predicted, given the calibration file it is to use (none:
  // the default tables); empty: sim::simulate in a child process. Any
  // exception it throws marks the row failed, with the exception's message.
  std::function<Prediction(const planner::ResolvedScenario&, const std::optional<std::filesystem::path>&)> simulate;
};

// Reads and resolves run `index`'s scenario with `overrides` set; a problem
// is an InputError that names the row, then the scenario file's own location
// and field.
planner::ResolvedScenario resolve_row(const ValidationSet& set, size_t index,
                                      const std::vector<scenarios::FieldOverride>& overrides = {});

// The default `simulate`: the SimGrid simulator in a child process, with the
// calibration file when one is given.
Prediction simulate_row(const planner::ResolvedScenario& resolved,
                        const std::optional<std::filesystem::path>& calibration = std::nullopt);

std::vector<RowResult> run_validation(const ValidationSet& set, const RunOptions& options = {});

}  // namespace ragged::validation
