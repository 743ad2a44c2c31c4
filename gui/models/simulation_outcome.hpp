#pragma once
// One background simulation as the dashboard sees it: what was asked
// (strategy, GPUs), and the predicted trace or why there is none. The trace
// is shared, read-only, between the models that show it. No Qt here.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "planner/resolved_scenario.hpp"
#include "sim/straggler_report.hpp"
#include "traces/trace.pb.h"

namespace ragged::gui {

enum class RunState { kQueued, kRunning, kDone, kFailed, kCancelled };

std::string run_state_name(RunState state);  // "queued", "running", "done", "failed", "cancelled"

struct SimulationOutcome {
  RunState state = RunState::kQueued;
  std::shared_ptr<const traces::Trace> trace;  // kDone only
  std::string error;                           // kFailed: the error's one line
  double wall_seconds = 0;
  // kDone with a what-if (sim::has_whatif): who set the pace, and the healthy step.
  std::shared_ptr<const sim::StragglerReport> whatif;
};

// simulate_in_child with `cancelled` polled every 20 ms and `progress`
// called on this thread; never throws: errors come back as kFailed, a
// cancellation as kCancelled.
SimulationOutcome run_simulation(const planner::ResolvedScenario& resolved, const std::function<bool()>& cancelled,
                                 const std::function<void(double)>& progress);

}  // namespace ragged::gui
