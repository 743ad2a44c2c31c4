// ragged-run: every command, `run` executing here on the host or CUDA
// executor. The light ragged execs it for `ragged run ...` with the same argv.

#include "cli/cli.hpp"
#include "cli/process_main.hpp"

int main(int argc, char** argv) { return ragged::cli::process_main(argc, argv, ragged::cli::run); }
