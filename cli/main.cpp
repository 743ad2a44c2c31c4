// ragged: every command; `ragged run` is handed to ragged-run
// (cli/run_forwarding.hpp), so this binary links no executor.

#include "cli/cli.hpp"
#include "cli/process_main.hpp"
#include "cli/run_forwarding.hpp"

int main(int argc, char** argv) {
  if (ragged::cli::is_run_command(argc, argv)) return ragged::cli::exec_run_binary(argc, argv);
  return ragged::cli::process_main(argc, argv, ragged::cli::run_without_executors);
}
