#include "cli/process_main.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include <unistd.h>

#include <iostream>

#include "backend/communicator.hpp"
#include "cli/cli.hpp"
#include "common/heap_policy.hpp"

namespace ragged::cli {
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
  return code == kExitOk ? kExitOutputFailed : code;
}

// Under mpirun the launcher ends every other rank with SIGTERM once one
// fails or is interrupted: rank 0 says so, once, not each of N ranks.
bool g_say_stopped = true;

// A command ended by SIGHUP (its terminal went away), SIGTERM or SIGINT
// says so in one line before it ends as the signal asks (what it was writing
// is removed by common/file_io.cpp's own handler, which chains to this one).
// write(2) only: async-signal-safe.
void say_stopped(int signal) {
  const char* line = signal == SIGHUP    ? "ragged: stopped by SIGHUP (the terminal went away); no output written\n"
                     : signal == SIGTERM ? "ragged: stopped by SIGTERM; no output written\n"
                                         : "ragged: interrupted; no output written\n";
  if (g_say_stopped) {
    const ssize_t ignored = ::write(STDERR_FILENO, line, std::strlen(line));
    (void)ignored;
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

int process_main(int argc, char** argv, CommandLine command_line) {
  keep_freed_memory_in_the_heap();
  g_say_stopped = backend::launcher_rank() <= 0;
  std::signal(SIGPIPE, SIG_IGN);
  for (int signal : {SIGHUP, SIGTERM, SIGINT}) std::signal(signal, say_stopped);
  try {
    return finish_standard_output(command_line(argc, argv, std::cout, std::cerr));
  } catch (...) {
    std::cerr << "ragged: internal error: unexpected exception\n";
    return kExitInternal;
  }
}

}  // namespace ragged::cli
