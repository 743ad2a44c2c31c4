// ragged-run and the tests: the host executor only. `--device cuda` reaches
// here only where ragged-run-cuda is not built beside ragged-run
// (cli/run_forwarding.hpp hands it over otherwise).

#include "cli/run_device.hpp"

#include "common/errors.hpp"

namespace ragged::cli {

bool runs_cuda() { return false; }

backend::RunResult run_on_device(const planner::ResolvedScenario& resolved, const backend::RunOptions& options,
                                 backend::Communicator& comm) {
  if (options.device == "cpu") return backend::run(resolved, options, comm);
  throw InputError(
      "--device cuda: this binary has no CUDA executor, and ragged-run-cuda, which has, is not built beside it "
      "(CMake found no CUDA toolkit with NCCL; CUDA lives under /usr/local/cuda); rebuild there, or use --device cpu");
}

}  // namespace ragged::cli
