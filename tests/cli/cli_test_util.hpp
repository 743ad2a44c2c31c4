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
// `program` (a path) with `args` through the shell, likewise.
CliResult run_program(const std::string& program, const std::string& args);

// `err` without the warning a sanitized build's runtime prints once per
// process when SimGrid switches stacks ("==<pid>==WARNING: ASan is ignoring
// requested __asan_handle_no_return" and its two lines of advice): not
// Ragged's output. run_program applies it; anything else is kept.
std::string without_sanitizer_notes(const std::string& err);

// Bad input as the CLI reports it: exit code 2, nothing on stdout, one line
// "ragged: error: ..." on stderr containing `needle` (gtest expectations).
void expect_one_line_error(const CliResult& result, const std::string& needle);

// `ragged run` on `device` (in-process) refuses a loop that computes metrics
// over the logits: they are simulated, not run, on either executor.
void expect_logit_metrics_refused(const std::string& device);

}  // namespace ragged::cli::testing
