#pragma once
// Error types shared by every module. An InputError ends an operation because
// of something the user gave (a file, a flag, a scenario field): the CLI prints
// its message on one line and exits with code 2. Anything else that escapes is
// an internal error (exit code 1); a failed check is exit code 3. Library code never calls exit() or abort().

#include <stdexcept>
#include <string>

namespace ragged {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input in one field of a structured input (a scenario): `path` names the
// field with proto field names ("training.granularity.default_spec"), so the
// caller that knows the file can add its line and column.
class FieldError : public InputError {
 public:
  FieldError(std::string path, const std::string& message) : InputError(message), path_(std::move(path)) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A run that completed but failed a check it was asked to pass (the
// reference, the collectives, finite numbers): not bad input and not a bug
// in Ragged, but a verdict; the CLI exits with code 3.
// Bad input every process of a job finds alike (an agreement check): the
// first rank reports it, the others end quietly with the same exit code.
class AgreedInputError : public InputError {
 public:
  using InputError::InputError;
};

class CheckFailure : public std::runtime_error {
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

// Input echoed in a message, cut to at most 24 characters ("..." marking
// the cut) so that a 300-digit number or a 30,000-character string does not
// become the line.
inline std::string shortened(const std::string& text) {
  return text.size() <= 24 ? text : text.substr(0, 20) + "...";
}
// A library's message quoting input, cut to a line's worth (200 characters).
inline std::string clipped(const std::string& text) {
  return text.size() <= 200 ? text : text.substr(0, 196) + "...";
}

}  // namespace ragged

// Checks a programmer invariant; on failure throws InternalError naming file:line.
#define RAGGED_ASSERT(condition, message)                                      \
  do {                                                                         \
    if (!(condition)) ::ragged::throw_assertion(#condition, __FILE__, __LINE__, (message)); \
  } while (false)
