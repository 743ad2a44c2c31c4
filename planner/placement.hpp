#pragma once
// The exact feasibility check of a contiguous layout at a fixed tensor order
// and shard size S (../shared/reference/vescale.md): placing each tensor at
// its earliest valid start at or after the cursor is optimal for that order,
// because the earliest valid start is monotone in the cursor.

#include <cstdint>
#include <span>
#include <vector>

#include "planner/unit_problem.hpp"

namespace ragged::planner {

inline constexpr int64_t kNoStart = -1;

// The earliest start s >= cursor, s a multiple of `align`, at which tensor t
// can lie when shards are S long: every shard boundary strictly inside
// [s, s + e) is a multiple of g from s. kNoStart when no position works.
// `align` must divide S.
int64_t earliest_start(int64_t cursor, const PlanTensor& t, int64_t shard_size, int64_t align);

// Places the tensors in `order` greedily; returns the end of the last tensor,
// or kNoStart if some tensor fits nowhere. `offsets` (indexed by tensor) is
// filled when given.
int64_t place_in_order(const UnitProblem& problem, std::span<const int> order, int64_t shard_size,
                       std::vector<int64_t>* offsets);

// Like place_in_order, but when a large tensor must leave a gap before its
// start, fills the gap with not-yet-placed small tensors (largest first) that
// fit entirely inside it. `order` ranks the large tensors; tensors smaller than
// `small_below` elements are the fillers.
int64_t place_filling_gaps(const UnitProblem& problem, std::span<const int> order, int64_t shard_size,
                           int64_t small_below, std::vector<int64_t>* offsets);

// Best fit over tensor classes (equal size and granule, e.g. the experts of a
// layer): at every step, place next the class whose earliest start leaves the
// smallest gap after the cursor (ties: the larger tensor, then model order).
// With `rigid_first`, any class whose gap is below its own granule counts as a
// fit, and of those the largest granule (the least flexible) goes first: the
// flexible tensors are saved for the spots only they can fill.
int64_t place_best_fit(const UnitProblem& problem, int64_t shard_size, bool rigid_first, std::vector<int64_t>* offsets);

int64_t round_up(int64_t value, int64_t multiple);

}  // namespace ragged::planner
