#include "common/token_count.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged {

double parse_token_count(const std::string& text, const std::string& option) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string suffix(end, text.data() + text.size());
  double scale = 0;
  if (suffix.empty()) scale = 1;
  else if (suffix == "K" || suffix == "k") scale = 1e3;
  else if (suffix == "M") scale = 1e6;
  else if (suffix == "B" || suffix == "G") scale = 1e9;
  else if (suffix == "T") scale = 1e12;
  // Binary multiples, as batch sizes are usually written (16Mi = 2,048 x 8,192).
  else if (suffix == "Ki") scale = 0x1p10;
  else if (suffix == "Mi") scale = 0x1p20;
  else if (suffix == "Gi") scale = 0x1p30;
  if (error != std::errc() || scale == 0 || !std::isfinite(value) || value <= 0) {
    throw InputError(fmt::format("{} '{}': give a positive token count such as 4096, 4M, 16Mi (2^24), 1.5B or 15T",
                                 option, shortened(text)));
  }
  return value * scale;
}

}  // namespace ragged
