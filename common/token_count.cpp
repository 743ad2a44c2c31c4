#include "common/token_count.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/text_case.hpp"

namespace ragged {

namespace {

// The scale of a count's suffix, in any case: K = 1e3, M = 1e6, B or G =
// 1e9, T = 1e12; Ki, Mi, Gi binary (16Mi = 2,048 x 8,192). 0: not a suffix.
double suffix_scale(std::string_view typed) {
  const std::string suffix = lower_case(typed);
  if (suffix.empty()) return 1;
  if (suffix == "k") return 1e3;
  if (suffix == "m") return 1e6;
  if (suffix == "b" || suffix == "g") return 1e9;
  if (suffix == "t") return 1e12;
  if (suffix == "ki") return 0x1p10;
  if (suffix == "mi") return 0x1p20;
  if (suffix == "gi") return 0x1p30;
  return 0;
}

}  // namespace

std::optional<double> suffixed_count(const std::string& text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  const double scale = suffix_scale(std::string_view(end, static_cast<size_t>(text.data() + text.size() - end)));
  if (scale == 0 || !std::isfinite(value)) return std::nullopt;
  return value * scale;
}

double parse_token_count(const std::string& text, const std::string& option) {
  const std::optional<double> value = suffixed_count(text);
  if (!value || !std::isfinite(*value) || *value <= 0) {
    throw InputError(fmt::format("{} '{}': give a positive token count such as 4096, 4M, 16Mi (2^24), 1.5B or 15T",
                                 option, shortened(text)));
  }
  return *value;
}

}  // namespace ragged
