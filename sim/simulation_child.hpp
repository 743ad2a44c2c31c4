#pragma once
// One simulation in its own child process (SimGrid's engine runs once per
// process), its result sent back as bytes: what `ragged simulate`, its sweeps
// and the dashboard's background jobs run.

#include <string>

#include "sim/child_process.hpp"
#include "sim/simulation.hpp"

namespace ragged::sim {

// The child sends its result back as bytes: the trace, then the statistics.
std::string serialize_result(const SimulationResult& result);
SimulationResult parse_result(const std::string& bytes);

// simulate() in a child process. options.progress, if set, is called in the
// parent (through `control`'s channel, on the calling thread); a cancelled
// control kills the child and throws Cancelled. InputError in the child comes
// back as InputError, anything else as InternalError. A scenario with a
// what-if (has_whatif) is simulated twice, the second time without it, in
// its own child: stats.whatif.healthy_step_seconds.
SimulationResult simulate_in_child(const planner::ResolvedScenario& resolved, const SimulationOptions& options,
                                   const ChildControl& control = {}, ChildUsage* usage = nullptr);

// What a table of many simulations needs (validation rows, tuning
// candidates): the summary and the statistics, without the trace's events,
// which the child then never serializes. A what-if is simulated as it is,
// without the healthy twin simulate_in_child adds.
struct SimulationSummary {
  traces::Summary summary;
  SimulationStats stats;
};

SimulationSummary simulate_summary_in_child(const planner::ResolvedScenario& resolved,
                                            const SimulationOptions& options = {});

}  // namespace ragged::sim
