#include "common/checked_math.hpp"

#include <fmt/format.h>

namespace ragged {

void throw_overflow(std::string_view field, std::string_view operation, int64_t a, int64_t b) {
  throw FieldError(std::string(field),
                   fmt::format("{} {} {} in {} does not fit in 64 bits; use smaller values (docs/RELIABILITY.md, "
                               "\"Input limits\")", a, operation, b, field));
}

int64_t checked_count(double value, std::string_view field) {
  if (!std::isfinite(value) || value < 0 || value > static_cast<double>(kMaxExactCount)) {
    throw FieldError(std::string(field), fmt::format("{} in {} is not a count from 0 to 2^53; use a smaller value "
                                                     "(docs/RELIABILITY.md, \"Input limits\")", value, field));
  }
  return static_cast<int64_t>(value);
}

}  // namespace ragged
