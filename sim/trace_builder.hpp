#pragma once
// Turns an executed step into the shared Trace schema: one event per op of
// the representative rank (carrying the op's id), its memory samples, and the
// summary defined in docs/METRICS.md. A pipeline's trace holds every stage's
// rank (the reported stage's first in traced_ranks; the summary is its).

#include <string>
#include <vector>

#include "planner/program.hpp"
#include "planner/resolved_scenario.hpp"
#include "sim/program_run.hpp"
#include "traces/trace.pb.h"

namespace ragged::sim {

struct TraceInputs {
  const planner::ResolvedScenario* resolved = nullptr;
  const planner::Program* program = nullptr;
  const ProgramRun* run = nullptr;
  std::string device;
  // A pipeline's: each simulated rank's Program and global rank, in the
  // order of run->rank_timings (program is the reported one's).
  std::vector<const planner::Program*> stage_programs;
  std::vector<int64_t> stage_ranks;
};

traces::Trace build_trace(const TraceInputs& inputs);

}  // namespace ragged::sim
