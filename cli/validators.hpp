#pragma once
// Range checks for command-line numbers with short messages: the input is
// echoed shortened (a 300-digit number does not fill the line) and the range
// is written as people write it.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "common/token_count.hpp"  // parse_token_count, shared with the dashboard

namespace ragged::cli {

// A whole number from `min` to `max` (decimal, no sign for positives needed).
CLI::Validator whole_number(int64_t min, int64_t max);

// A finite number from `min` to `max`.
CLI::Validator number_between(double min, double max);

// "64,256,1024" -> {64, 256, 1024}: whole numbers from `min` to `max`
// separated by commas; InputError "<option>: '<item>' is not a positive
// <what>" (or "a <what>, 0 or more", or "... is over <max>") otherwise. A value
// listed twice is kept once, with a note on `notes` (each is work to do).
std::vector<int64_t> parse_count_list(const std::string& text, const std::string& option, const std::string& what,
                                      int64_t min = 1, int64_t max = INT64_MAX, std::ostream* notes = nullptr);

// "N:F": a whole number N from 1 to `max_count` and a fraction F from
// `min_fraction` to 1 (--slow-gpus, --slow-links).
CLI::Validator count_and_fraction(int64_t max_count, double min_fraction);
struct CountAndFraction {
  int64_t count = 0;
  double fraction = 1;
};
// Parses text that count_and_fraction accepted.
CountAndFraction parse_count_and_fraction(const std::string& text);

// The largest count a command-line option takes (GPUs, steps, layers): the
// scenario's own limits apply after it.
inline constexpr int64_t kMaxCount = 2147483647;

}  // namespace ragged::cli
