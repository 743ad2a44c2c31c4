#pragma once
// Runs the command line in-process (or the real binary) and captures output.

#include <string>
#include <vector>

namespace ragged::cli::testing {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

// In-process: `args` without the program name.
CliResult run_cli(const std::vector<std::string>& args);

// The built `ragged` executable through the shell; stdout and stderr captured.
CliResult run_binary(const std::string& args);

}  // namespace ragged::cli::testing
