#pragma once
// Turns an executed step into the shared Trace schema: one event per op of
// the representative rank (carrying the op's id), its memory samples, and the
// summary defined in docs/METRICS.md.

#include <string>

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
};

traces::Trace build_trace(const TraceInputs& inputs);

}  // namespace ragged::sim
