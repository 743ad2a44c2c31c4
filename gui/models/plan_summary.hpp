#pragma once
// What the Explore tab shows the moment a setting changes, before any
// simulation: the plan's padding and shard size, the bytes its copies move,
// and one rank's static memory from the Program. No Qt here.

#include <cstdint>
#include <string>

#include "planner/memory_breakdown.hpp"
#include "planner/resolved_scenario.hpp"

namespace ragged::gui {

struct PlanSummary {
  std::string strategy;
  std::string model;
  int64_t gpus = 0;
  int64_t shard_ranks = 0;
  int64_t params = 0;
  int64_t padded_params = 0;
  double padding_ratio = 0;              // (padded - params) / params
  double lower_bound_padding_ratio = 0;  // the best any contiguous layout could do
  int64_t max_shard_elements = 0;        // the largest S over the units
  int64_t copy_elements_per_step = 0;    // copy-in/out around the collectives, every unit once
  planner::MemoryBreakdown memory;       // one rank, static (the Program's peak)
  int64_t hbm_bytes = 0;
  int64_t allocator_bytes = 0;  // the HBM less the CUDA context and NCCL: what the verdict is judged against
  double plan_seconds = 0;

  bool fits() const { return memory.peak_total() <= allocator_bytes; }
};

PlanSummary summarize_plan(const planner::ResolvedScenario& resolved);

// A padding ratio as the plan line and the Layout tab write it: "0.590%".
std::string padding_percent(double ratio);

// One line for the status bar: "padding 0.010% of the parameters (bound 0.000%), S 12.3M, static memory 41.2 GiB of the
// allocator's 78.5 GiB (HBM 79.6 GiB)".
std::string plan_summary_line(const PlanSummary& summary);

}  // namespace ragged::gui
