#include "cli_test_util.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "cli/cli.hpp"
#include "common/file_io.hpp"

namespace ragged::cli::testing {

CliResult run_cli(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"ragged"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliResult result;
  result.code = run(static_cast<int>(argv.size()), argv.data(), out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

CliResult run_binary(const std::string& args) { return run_program(std::string(RAGGED_BINARY_DIR) + "/ragged", args); }

CliResult run_program(const std::string& program, const std::string& args) {
  namespace fs = std::filesystem;
  fs::path err_file = fs::temp_directory_path() / ("ragged_cli_err_" + std::to_string(::getpid()));
  std::string command = program + " " + args + " 2>" + err_file.string();
  CliResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  int status = ::pclose(pipe);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.err = without_sanitizer_notes(read_file(err_file));
  fs::remove(err_file);
  return result;
}

std::string without_sanitizer_notes(const std::string& err) {
  static const std::regex note(
      R"(==[0-9]+==WARNING: ASan is ignoring requested __asan_handle_no_return[^\n]*\n)"
      R"((False positive error reports may follow\n)?(For details see [^\n]*\n)?)");
  return std::regex_replace(err, note, "");
}

void expect_one_line_error(const CliResult& result, const std::string& needle) {
  EXPECT_EQ(result.code, 2) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_EQ(result.err.rfind("ragged: error: ", 0), 0u) << result.err;
  EXPECT_NE(result.err.find(needle), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
}

void expect_logit_metrics_refused(const std::string& device) {
  const CliResult metrics = run_cli(
      {"run", "tiny-llama-4xcpu", "--gpus", "1", "--device", device, "--set", "training.outputs.logits=true", "--set",
       "training.outputs.held_until_next_forward=true", "--set", "training.outputs.metric_cross_entropies=2"});
  EXPECT_EQ(metrics.code, 2) << device;
  EXPECT_NE(metrics.err.find("training.outputs.metric_cross_entropies: 2: `ragged run` computes the loss only"),
            std::string::npos)
      << device << ": " << metrics.err;
}

}  // namespace ragged::cli::testing
