// The whole command line with `run` executing in this process: ragged-run
// (cli/run_main.cpp) and the tests, through ragged::cli.

#include "cli/cli.hpp"
#include "cli/commands.hpp"

namespace ragged::cli {

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  return run_commands(argc, argv, out, err, add_run_command);
}

}  // namespace ragged::cli
