#include "scenarios/field_locations.hpp"

#include <cctype>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::scenarios {

namespace {

std::string without_first_index(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    if (path.substr(i, 3) == "[0]") {
      i += 2;
      continue;
    }
    out.push_back(path[i]);
  }
  return out;
}

}  // namespace

void FieldLocations::add(const std::string& path, FieldLocation location) {
  by_path_.emplace(without_first_index(path), location);  // the first occurrence wins
}

void throw_too_deep(std::string_view origin, FieldLocation at) {
  throw InputError(fmt::format("{}{}:{}: blocks nested deeper than {} levels (a scenario nests at most 5); is a "
                               "closing brace missing?",
                               origin.empty() ? "" : std::string(origin) + ":", at.line, at.column, kMaxNesting));
}

std::optional<FieldLocation> FieldLocations::find(std::string_view path) const {
  std::string current = without_first_index(path);
  while (!current.empty()) {
    if (auto it = by_path_.find(current); it != by_path_.end()) return it->second;
    size_t cut = current.find_last_of(".[");
    if (cut == std::string::npos) break;
    current.resize(cut);
  }
  return std::nullopt;
}

std::optional<std::string> FieldLocations::path_at(FieldLocation location) const {
  std::optional<std::string> best;
  FieldLocation best_location{0, 0};
  auto before = [](FieldLocation a, FieldLocation b, bool or_equal) {
    return a.line < b.line || (a.line == b.line && (a.column < b.column || (or_equal && a.column == b.column)));
  };
  // Strictly later keys replace the best, so of paths at one spot ("a.b",
  // "a.b[0]") the first in order, without indices, is kept.
  for (const auto& [path, where] : by_path_) {
    if (before(where, location, true) && before(best_location, where, false)) {
      best = path;
      best_location = where;
    }
  }
  return best;
}

std::string to_snake_case(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 4);
  for (char c : name) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      out.push_back('_');
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace ragged::scenarios
