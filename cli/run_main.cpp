// ragged-run (the host executor) and ragged-run-cuda (the host and CUDA
// executors): every command, `run` executing here. The light ragged execs the
// one a run needs with the same argv; ragged-run started by hand with
// --device cuda hands itself to ragged-run-cuda where that is built.

#include <string_view>

#include "cli/cli.hpp"
#include "cli/process_main.hpp"
#include "cli/run_device.hpp"
#include "cli/run_forwarding.hpp"

int main(int argc, char** argv) {
  using namespace ragged::cli;
  if (!runs_cuda() && run_binary_for(argc, argv) == std::string_view(kCudaRunBinaryName)) {
    return exec_run_binary(argc, argv);
  }
  return process_main(argc, argv, run);
}
