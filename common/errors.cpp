#include "common/errors.hpp"

#include <fmt/format.h>

namespace ragged {

void throw_assertion(const char* condition, const char* file, int line,
                     const std::string& message) {
  throw InternalError(fmt::format("{}:{}: assertion '{}' failed: {}", file, line, condition, message));
}

}  // namespace ragged
