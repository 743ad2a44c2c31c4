#pragma once
// What every Ragged binary's main does around its command line: SIGPIPE
// ignored and a report that did not reach standard output made an error,
// one line when a signal ends the command, no exception left uncaught.

#include <ostream>

namespace ragged::cli {

using CommandLine = int (*)(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

int process_main(int argc, char** argv, CommandLine command_line);

}  // namespace ragged::cli
