#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include <unistd.h>
#include <iostream>

#include "cli/cli.hpp"

namespace {

// A report that did not reach its reader is a failed command: a full disk,
// a closed pipe (`| head`) or a terminal gone. SIGPIPE is ignored so that
// the command runs to its end (a trace it writes is not lost) and the
// failure is seen here, once, as an error.
int finish_standard_output(int code) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  int error = errno;
  if (flushed && std::cout && !std::ferror(stdout)) return code;
  // The failed write's errno is gone by now; what failed it (a full
  // device, a closed pipe) persists, so one more byte tells the reason.
  if (error == 0 && ::write(STDOUT_FILENO, "\n", 1) < 0) error = errno;
  std::cerr << "ragged: error: cannot write the report to standard output"
            << (error != 0 ? std::string(": ") + std::strerror(error) : std::string()) << "\n";
  return code == ragged::cli::kExitOk ? ragged::cli::kExitOutputFailed : code;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return finish_standard_output(ragged::cli::run(argc, argv, std::cout, std::cerr));
  } catch (...) {
    std::cerr << "ragged: internal error: unexpected exception\n";
    return ragged::cli::kExitInternal;
  }
}
