// `ragged run` is executed by ragged-run beside ragged (cli/run_forwarding.hpp):
// the light binary hands the command line over unchanged, and one without
// ragged-run beside it says how to build it.

#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli.hpp"
#include "cli_test_util.hpp"

namespace ragged::cli {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::expect_one_line_error;
using testing::run_binary;
using testing::run_program;

TEST(CliRunForwarding, HelpListsRunAndRunHelpIsRunsOwn) {
  const CliResult listed = run_binary("--help");
  EXPECT_EQ(listed.code, 0) << listed.err;
  EXPECT_NE(listed.out.find("  run "), std::string::npos) << listed.out;
  // Only ragged-run knows run's options: its help came through the forwarder.
  const CliResult help = run_binary("run --help");
  EXPECT_EQ(help.code, 0) << help.err;
  EXPECT_NE(help.out.find("Usage: ragged run"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--verify-collectives"), std::string::npos) << help.out;
}

TEST(CliRunForwarding, RunsBadInputIsRunsOwnError) {
  expect_one_line_error(run_binary("run tiny-llama-4xcpu --steps 0"), "--steps");
}

TEST(CliRunForwarding, WithoutRunBinaryBesideItSaysHowToBuildIt) {
  const fs::path folder = fs::temp_directory_path() / ("ragged_light_" + std::to_string(::getpid()));
  fs::create_directories(folder);
  fs::copy_file(fs::path(RAGGED_BINARY_DIR) / "ragged", folder / "ragged", fs::copy_options::overwrite_existing);
  const CliResult result = run_program((folder / "ragged").string(), "run tiny-llama-4xcpu");
  fs::remove_all(folder);
  expect_one_line_error(result, "--target ragged-run");
  EXPECT_NE(result.err.find("not built beside ragged in " + folder.string()), std::string::npos) << result.err;
}

// --device cuda goes to ragged-run-cuda where it is built (the CUDA
// executor's own refusal of Muon shows it got there), and says that it is
// not built where it is not; ragged-run started by hand hands it over alike.
TEST(CliRunForwarding, CudaRunsInItsOwnBinary) {
  const std::string line = "run tiny-llama-4xcpu --gpus 1 --optimizer muon --device cuda";
  const std::string ragged_run = (fs::path(RAGGED_BINARY_DIR) / "ragged-run").string();
  for (const CliResult& result : {run_binary(line), run_program(ragged_run, line)}) {
#ifdef RAGGED_HAVE_CUDA
    expect_one_line_error(result, "training.optimizer");
    EXPECT_EQ(result.err.find("ragged-run-cuda"), std::string::npos) << result.err;
#else
    expect_one_line_error(result, "ragged-run-cuda, which has, is not built beside it");
#endif
  }
}

// The host binary loads no CUDA library: their start-up would cost every rank
// of every host run (cli/run_device.hpp).
TEST(CliRunForwarding, TheHostRunBinaryLinksNoCudaLibrary) {
  const fs::path folder(RAGGED_BINARY_DIR);
  const CliResult host = run_program("ldd", (folder / "ragged-run").string());
  ASSERT_EQ(host.code, 0) << host.err;
  for (const char* library : {"libcudart", "libcublas", "libnccl"}) {
    EXPECT_EQ(host.out.find(library), std::string::npos) << library << " in\n" << host.out;
  }
#ifdef RAGGED_HAVE_CUDA
  const CliResult cuda = run_program("ldd", (folder / "ragged-run-cuda").string());
  ASSERT_EQ(cuda.code, 0) << cuda.err;
  EXPECT_NE(cuda.out.find("libcublas"), std::string::npos) << cuda.out;
#endif
}

TEST(CliRunForwarding, InProcessLightCommandLineNamesRunBinary) {
  const std::vector<const char*> argv = {"ragged", "run", "tiny-llama-4xcpu"};
  std::ostringstream out, err;
  CliResult result;
  result.code = run_without_executors(static_cast<int>(argv.size()), argv.data(), out, err);
  result.out = out.str();
  result.err = err.str();
  expect_one_line_error(result, "--target ragged-run");
}

}  // namespace
}  // namespace ragged::cli
