#pragma once
// Searches over shard sizes and tensor orders for contiguous layouts, shared
// by the `ragged` and `vescale-paper` strategies.

#include <cstdint>
#include <optional>
#include <vector>

#include "planner/unit_layout.hpp"
#include "planner/unit_problem.hpp"

namespace ragged::planner {

struct ContiguousSolution {
  int64_t shard_size = 0;
  std::vector<int64_t> offsets;  // per tensor
};

// A shard size at which every tensor fits in shard 0 without crossing a
// boundary: always feasible.
int64_t trivially_feasible_shard_size(const UnitProblem& problem);

// The tensor orders the paper tries: model order, by granule (largest first),
// by size (largest first); sorts are stable.
std::vector<std::vector<int>> paper_orders(const UnitProblem& problem);

// The paper's heuristic: binary search over multiples of each running LCM of
// the granules, for each of paper_orders(), starting from the balanced bound.
ContiguousSolution vescale_paper_search(const UnitProblem& problem);

// Ours: from the lower bound, deficit-driven jumps per order and gap-filling
// variant, a refinement scan below the best found, and the paper's search as
// a floor so that we are never worse.
ContiguousSolution ragged_search(const UnitProblem& problem);

UnitLayout contiguous_layout(const UnitProblem& problem, const ContiguousSolution& solution);

}  // namespace ragged::planner
