#pragma once
// Counts of tokens as people write them, shared by the command's options
// (--global-batch-tokens, --sweep-global-batch, --seq-len) and the dashboard.

#include <optional>
#include <string>

namespace ragged {

// A count of tokens with an optional suffix, in any case: 4096, 4M, 4m,
// 1.5B, 15T (K = 1e3, M = 1e6, B or G = 1e9, T = 1e12) or binary 16Ki,
// 4Mi, 1Gi; InputError naming `option` when it is not one or is not positive.
double parse_token_count(const std::string& text, const std::string& option);
// The same reading without the checks: the value, or none when `text` is not
// a number with an optional suffix.
std::optional<double> suffixed_count(const std::string& text);

}  // namespace ragged
