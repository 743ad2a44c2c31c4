#pragma once
// What `ragged simulate --goodput` adds to a simulation: the share of the
// wall time that trains under interruptions, checkpoints and restarts
// (planner/goodput.hpp), as text and as the "goodput" object of --json.

#include <cstdint>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/simulate_report.hpp"
#include "planner/goodput.hpp"

namespace ragged::cli {

struct GoodputReport {
  std::string label;  // "scenario, strategy, N GPUs"
  int64_t gpus = 0;
  double tokens_per_s_per_gpu = 0;  // the healthy step's
  planner::GoodputSettings settings;
  planner::GoodputEstimate estimate;
};

GoodputReport goodput_report(const planner::ResolvedScenario& resolved, const SimulationReport& simulation);
void print_goodput(const GoodputReport& report, std::ostream& out);
nlohmann::json goodput_to_json(const GoodputReport& report);

}  // namespace ragged::cli
