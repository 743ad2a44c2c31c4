#pragma once
// Counts of tokens as people write them, shared by the command's options
// (--global-batch-tokens, --sweep-global-batch, --seq-len) and the dashboard.

#include <string>

namespace ragged {

// A count of tokens with an optional suffix: 4096, 4M, 1.5B, 15T (K = 1e3,
// M = 1e6, B or G = 1e9, T = 1e12) or binary 16Ki, 4Mi, 1Gi; InputError
// naming `option` when it is not one or is not positive.
double parse_token_count(const std::string& text, const std::string& option);

}  // namespace ragged
