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
