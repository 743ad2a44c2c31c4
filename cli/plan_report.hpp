#pragma once
// What `ragged plan` shows: a strategy's layout per unit, its padding against
// the lower bound, the bytes its collectives and copies move per step, and
// the memory of one rank.

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/memory_breakdown.hpp"
#include "planner/plan.hpp"
#include "planner/program.hpp"
#include "planner/resolved_scenario.hpp"

namespace ragged::cli {

struct StepBytes {
  int64_t all_gather = 0;
  int64_t reduce_scatter = 0;
  int64_t all_reduce = 0;
  int64_t all_to_all = 0;
  int64_t copies = 0;  // copy-in, copy-out and casts (read + write)
  // The mesh's tp, cp and ep collectives (the buffers; an all-to-all's
  // share of its group); the others are FSDP's (and the optimizer's).
  int64_t mesh = 0;
  int64_t pipeline = 0;  // sent to and received from the neighbouring stages
};

// One pipeline stage (training.mesh.pp > 1): its units' plan, its Program
// (rank 0 of the stage), its memory and bytes.
struct StagePlan {
  planner::Plan plan;
  planner::Program program;
  planner::MemoryBreakdown memory;
  StepBytes bytes;
  std::vector<int64_t> blocks;  // transformer blocks per model chunk it runs
};

// Without pipeline stages, plan, program, memory and bytes are every rank's;
// with them, the stage's with the highest memory peak (`reported_stage`),
// every stage in `stages`.
struct PlanReport {
  planner::ResolvedScenario resolved;
  planner::Plan plan;
  planner::Program program;
  planner::MemoryBreakdown memory;
  StepBytes bytes;
  std::vector<StagePlan> stages;
  size_t reported_stage = 0;
  std::string schedule;  // the pipeline's, e.g. "1F1B"
};

PlanReport make_plan_report(planner::ResolvedScenario resolved);

void print_plan(const PlanReport& report, std::ostream& out);
void print_plan_comparison(const std::vector<PlanReport>& reports, std::ostream& out);
nlohmann::json plan_to_json(const PlanReport& report);

}  // namespace ragged::cli
