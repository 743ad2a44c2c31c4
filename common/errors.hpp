#pragma once
// Error types shared by every module. An InputError ends an operation because
// of something the user gave (a file, a flag, a scenario field): the CLI prints
// its message on one line and exits with code 2. Anything else that escapes is
// an internal error (exit code 1). Library code never calls exit() or abort().

#include <stdexcept>
#include <string>

namespace ragged {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A broken invariant inside Ragged: a bug, not bad input.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void throw_assertion(const char* condition, const char* file, int line,
                                  const std::string& message);

}  // namespace ragged

// Checks a programmer invariant; on failure throws InternalError naming file:line.
#define RAGGED_ASSERT(condition, message)                                      \
  do {                                                                         \
    if (!(condition)) ::ragged::throw_assertion(#condition, __FILE__, __LINE__, (message)); \
  } while (false)
