#pragma once
// A step time that no simulation of a scenario's Programs undercuts: what
// `ragged tune` skips a candidate by when even this step would be too slow
// to enter its top k (branch and bound). The bound is the longest path
// through the constraints the executor (sim/executor.cpp) always obeys, each
// op at the least time it can take:
//  - an op starts after its dependencies and after the op before it on its
//    stream end, and (with the CPU issue path) after the host thread issued
//    it; the host thread issues the ops in Program order, each after its
//    host waits end, spending host_seconds on each;
//  - a compute, copy or optimizer op takes at least its time alone
//    (ComputeModel::cost: SM and HBM sharing only slow it), and ends no
//    sooner than its last kernel's issue plus that kernel's share;
//  - collectives, allocations and pipeline sends take at least nothing;
//    a pipeline receive ends no sooner than its send (Op::message) starts
//    on the neighbouring stage, so the pipeline's bubble comes out of the
//    stages' op orders.
// The step ends when the last op of any stage ends.

#include <vector>

#include "planner/program.hpp"
#include "planner/resolved_scenario.hpp"
#include "sim/compute_model.hpp"
#include "sim/host_model.hpp"
#include "sim/simulation.hpp"

namespace ragged::planner {
struct ScenarioPrograms;
}

namespace ragged::sim {

// Seconds; `stages` holds one Program per pipeline stage (or the one
// Program every rank runs). 0 when the ops' constraints form a cycle (a
// Program that could not run: nothing to bound).
double step_time_lower_bound(const std::vector<planner::Program>& stages, const ComputeModel& compute,
                             const HostCosts& host);

// The bound for what simulate(resolved, options) runs from `built`: its
// compute model and host costs. 0 for a scenario with a what-if: a
// jittered GPU may run faster than its table.
double step_time_lower_bound(const planner::ResolvedScenario& resolved, const planner::ScenarioPrograms& built,
                             const SimulationOptions& options = {});

}  // namespace ragged::sim
