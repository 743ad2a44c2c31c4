#include "planner/zero3_fetch.hpp"

namespace ragged::planner {

std::vector<std::vector<int>> zero3_fetch_groups(const UnitProblem& problem, int64_t prefetch_elements) {
  std::vector<int> fetched;
  for (size_t t = 0; t < problem.tensors.size(); ++t) {
    if (!zero3_persistent(problem.tensors[t])) fetched.push_back(static_cast<int>(t));
  }
  std::vector<std::vector<int>> groups;
  size_t next = 0;
  // The first module's hook gathers its own parameters in one call.
  if (!fetched.empty()) {
    groups.push_back({fetched[next++]});
    while (next < fetched.size() && !problem.tensors[static_cast<size_t>(fetched[next])].starts_module) {
      groups.back().push_back(fetched[next++]);
    }
  }
  // Every later fetch finds its module in flight and prefetches one set.
  std::vector<int> set;
  int64_t elements = 0;
  for (; next < fetched.size(); ++next) {
    set.push_back(fetched[next]);
    elements += problem.tensors[static_cast<size_t>(fetched[next])].elements;
    if (elements >= prefetch_elements) {
      groups.push_back(std::move(set));
      set.clear();
      elements = 0;
    }
  }
  if (!set.empty()) groups.push_back(std::move(set));
  return groups;
}

}  // namespace ragged::planner
