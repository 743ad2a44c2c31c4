#pragma once
// The measured trace of a run: this rank's events of every measured step
// (each with its Program op id, so it joins the predicted trace op by op, and
// its step index), its memory samples, and the summary: every figure per step
// (traces::StepFigures), averaged over the measured steps.

#include <string>
#include <vector>

#include "backend/communicator.hpp"
#include "backend/measured_step.hpp"
#include "planner/program.hpp"
#include "planner/resolved_scenario.hpp"
#include "traces/trace.pb.h"

namespace ragged::backend {

// `device` describes where it ran ("cpu (...), 4 mpi ranks").
traces::Trace measured_trace(const planner::ResolvedScenario& resolved, const planner::Program& program,
                             const std::vector<MeasuredStep>& steps, Communicator& comm, const std::string& device);

}  // namespace ragged::backend
