#pragma once
// How far apart two names are, for "did you mean" suggestions.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ragged {

// Levenshtein distance: insertions, deletions and substitutions.
size_t edit_distance(std::string_view a, std::string_view b);

// How many characters `a` and `b` end with in common.
size_t shared_suffix(std::string_view a, std::string_view b);

// The candidate nearest `name`: the smallest edit distance, and among those
// the one ending like it (names end with what tells them apart, a model's
// size: "llama3-405b" finds "llama3.1-405b" before "llama3-70b", both two
// edits away), then the first. Empty when there is no candidate.
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace ragged
