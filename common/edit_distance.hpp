#pragma once
// How far apart two names are, for "did you mean" suggestions.

#include <cstddef>
#include <string_view>

namespace ragged {

// Levenshtein distance: insertions, deletions and substitutions.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace ragged
