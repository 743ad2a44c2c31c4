// ragged-run-cuda: the host executor and the CUDA one.

#include "cli/run_device.hpp"

#include "backend/cuda/cuda_run.hpp"

namespace ragged::cli {

bool runs_cuda() { return true; }

backend::RunResult run_on_device(const planner::ResolvedScenario& resolved, const backend::RunOptions& options,
                                 backend::Communicator& comm) {
  if (options.device == "cpu") return backend::run(resolved, options, comm);
  return backend::gpu::run_on_gpu(resolved, options, comm);
}

}  // namespace ragged::cli
