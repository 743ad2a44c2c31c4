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

// `device` describes where it ran ("cpu (...), 4 mpi ranks"). MFU is over
// `device_peak_flops` (the dense bf16 peak of the GPU the run used) when it is
// positive, else over the scenario GPU's peak.
traces::Trace measured_trace(const planner::ResolvedScenario& resolved, const planner::Program& program,
                             const std::vector<MeasuredStep>& steps, Communicator& comm, const std::string& device,
                             double device_peak_flops = 0);

// What the host executor holds differently from the Program's persistent
// state: ZeRO-3's and Megatron-FSDP's persistent compute-dtype shard, ZeRO-3's
// persistent small parameters (gathered with their unit instead).
std::vector<std::string> host_executor_notes(const planner::Program& program);

}  // namespace ragged::backend
