#include "common/edit_distance.hpp"

#include <algorithm>
#include <vector>

namespace ragged {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

size_t shared_suffix(std::string_view a, std::string_view b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[a.size() - 1 - n] == b[b.size() - 1 - n]) ++n;
  return n;
}

std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  size_t best_distance = 0, best_shared = 0;
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(name, candidate);
    const size_t shared = shared_suffix(name, candidate);
    if (best == nullptr || distance < best_distance || (distance == best_distance && shared > best_shared)) {
      best = &candidate;
      best_distance = distance;
      best_shared = shared;
    }
  }
  return best ? *best : std::string();
}

}  // namespace ragged
