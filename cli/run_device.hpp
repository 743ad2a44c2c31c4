#pragma once
// Where `ragged run` executes the Program: the host executor always, the CUDA
// executor only in ragged-run-cuda. Two definitions, one per binary
// (run_device_host.cpp in ragged-run and the tests, run_device_cuda.cpp in
// ragged-run-cuda), so that ragged-run loads no CUDA library: cuBLASLt's
// start-up alone costs a process about 0.4 s of CPU, paid by every rank of
// every host run.

#include "backend/communicator.hpp"
#include "backend/run.hpp"
#include "planner/resolved_scenario.hpp"

namespace ragged::cli {

// True in the binary that links the CUDA executor.
bool runs_cuda();

// Runs the resolved scenario on options.device ("cpu" or "cuda").
backend::RunResult run_on_device(const planner::ResolvedScenario& resolved, const backend::RunOptions& options,
                                 backend::Communicator& comm);

}  // namespace ragged::cli
