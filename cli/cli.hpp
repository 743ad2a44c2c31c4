#pragma once
// The `ragged` command line as a function, so tests drive it in-process.

#include <ostream>
#include <string>
#include <string_view>

namespace ragged::cli {

// Exit codes: 0 success, 1 internal error, 2 bad input (file, flag, field),
// 3 a check of `ragged run` failed, 4 a rank was lost (backend/watchdog.hpp),
// 5 `ragged simulate --fail-on-oom` predicted out of memory, 6 the report
// could not be written to standard output (main.cpp).
inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitCheckFailed = 3;  // ragged run: a check it ran failed
inline constexpr int kExitOutOfMemory = 5;
inline constexpr int kExitOutputFailed = 6;

// Ends a command with `code` and nothing printed: another process of the
// same job reports the error (ragged run under mpirun, AgreedInputError).
struct QuietExit {
  int code = kExitBadInput;
};

// Every command, `run` executing in this process (ragged-run and the tests:
// link ragged::cli).
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);
// Every command but `run`'s execution (the light ragged: ragged::cli_commands,
// no executor, CBLAS or CUDA): `run` is listed and answers with how to get
// ragged-run.
int run_without_executors(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// An error message as one line: runs of white space (newlines included)
// become one space, every other control byte, byte that is not UTF-8 or
// character that steers the terminal is escaped (common/utf8.hpp's
// printable: "\x1b", "\xff"), and a word longer than 80 characters keeps its
// first 32 and last 24 ("...(5000 characters)..." between them). Every line
// Ragged prints on stderr that may quote an input goes through it.
std::string one_line(std::string_view text);
// An input error as one_line lines: the first problem, then each further one
// an InputError lists ("\n  and ...": scenario_loader's few more problems)
// on its own line, five lines at most.
std::string error_lines(std::string_view text);

}  // namespace ragged::cli
