#include "cli/validators.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cmath>
#include <optional>
#include <string>

#include "common/errors.hpp"
#include "common/units.hpp"

namespace ragged::cli {
namespace {

// A whole count written with a suffix (1Ki, 2K, 1.5k), as every count
// option takes it; none for a plain number or anything else.
std::optional<double> suffixed_whole(const std::string& text) {
  if (text.empty() || !std::isalpha(static_cast<unsigned char>(text.back()))) return std::nullopt;
  const std::optional<double> counted = suffixed_count(text);
  if (!counted || *counted != std::floor(*counted)) return std::nullopt;
  return counted;
}

}  // namespace

CLI::Validator whole_number(int64_t min, int64_t max) {
  const std::string range = fmt::format("a whole number from {} to {}", format_integer(min), format_integer(max));
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        int64_t value = 0;
        const char* begin = text.data() + (!text.empty() && text.front() == '+' ? 1 : 0);
        const auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
        if (error == std::errc::result_out_of_range || (error == std::errc() && end == text.data() + text.size() &&
                                                        (value < min || value > max))) {
          return fmt::format("{} is out of range: give {}", shortened(text), range);
        }
        if (error != std::errc() || end != text.data() + text.size()) {
          if (const std::optional<double> counted = suffixed_whole(text)) {
            if (*counted < static_cast<double>(min) || *counted > static_cast<double>(max)) {
              return fmt::format("{} is out of range: give {}", shortened(text), range);
            }
            text = std::to_string(static_cast<int64_t>(*counted));
            return "";
          }
          return fmt::format("'{}' is not a whole number: give {}", shortened(text), range);
        }
        return "";
      },
      range);
}

CLI::Validator number_between(double min, double max) {
  const std::string range = fmt::format("a number from {:g} to {:g}", min, max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        double value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        const std::optional<double> counted =
            error == std::errc() && end != text.data() + text.size() ? suffixed_count(text) : std::nullopt;
        if (counted) {
          value = *counted;  // 15T, 4Mi: a count with its suffix
          text = fmt::format("{}", value);
        } else if (error != std::errc() || end != text.data() + text.size()) {
          return fmt::format("'{}' is not a number: give {}", shortened(text), range);
        }
        if (!std::isfinite(value) || value < min || value > max) {
          return fmt::format("{} is out of range: give {}", shortened(text), range);
        }
        return "";
      },
      range);
}

std::vector<int64_t> parse_count_list(const std::string& text, const std::string& option, const std::string& what,
                                      int64_t min, int64_t max, std::ostream* notes) {
  std::vector<int64_t> values;
  std::vector<int64_t> repeated;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t value = 0;
    auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    const std::optional<double> counted = suffixed_whole(item);
    if (counted && *counted <= static_cast<double>(INT64_MAX)) {
      value = static_cast<int64_t>(*counted);
      end = item.data() + item.size();
      error = std::errc();
    }
    if (error != std::errc() || end != item.data() + item.size() || value < min) {
      throw InputError(min >= 1 ? fmt::format("{}: '{}' is not a positive {}", option, shortened(item), what)
                                : fmt::format("{}: '{}' is not a {}, {} or more", option, shortened(item), what, min));
    }
    if (value > max) throw InputError(fmt::format("{}: {} is over {}, the largest {}", option, value, max, what));
    if (std::find(values.begin(), values.end(), value) == values.end()) {
      values.push_back(value);
    } else if (std::find(repeated.begin(), repeated.end(), value) == repeated.end()) {
      repeated.push_back(value);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (!repeated.empty() && notes != nullptr) {
    // The first few named: 3,000 values each given twice made a 17,000-character line.
    constexpr size_t kNamed = 8;
    const std::string listed =
        repeated.size() <= kNamed
            ? fmt::format("{}", fmt::join(repeated, ", "))
            : fmt::format("{} values ({}, ...)", repeated.size(),
                          fmt::join(repeated.begin(), repeated.begin() + static_cast<ptrdiff_t>(kNamed), ", "));
    *notes << fmt::format("ragged: note: {} lists {} more than once; each is tried once\n", option, listed);
  }
  return values;
}

CLI::Validator count_and_fraction(int64_t max_count, double min_fraction) {
  const std::string form = fmt::format("N:F, N a whole number from 1 to {} and F a fraction from {:g} to 1 (e.g. 1:0.5)",
                                       format_integer(max_count), min_fraction);
  const CLI::Validator count = whole_number(1, max_count);
  const CLI::Validator fraction = number_between(min_fraction, 1);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const size_t colon = text.find(':');
        if (colon == std::string::npos) return fmt::format("'{}' is not N:F: give {}", shortened(text), form);
        std::string n = text.substr(0, colon), f = text.substr(colon + 1);
        if (std::string why = count(n); !why.empty()) return fmt::format("N: {}", why);
        if (std::string why = fraction(f); !why.empty()) return fmt::format("F: {}", why);
        text = n + ":" + f;  // a suffixed N (1K) as its number
        return "";
      },
      "N:F");
}

CountAndFraction parse_count_and_fraction(const std::string& text) {
  const size_t colon = text.find(':');
  CountAndFraction out;
  const char* begin = text.data() + (text.front() == '+' ? 1 : 0);
  std::from_chars(begin, text.data() + colon, out.count);
  std::from_chars(text.data() + colon + 1, text.data() + text.size(), out.fraction);
  return out;
}

}  // namespace ragged::cli
