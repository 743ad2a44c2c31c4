#pragma once
// Arithmetic shared by the baseline layout strategies (fsdp1, fsdp2, zero3,
// megatron): rounding, the common parts of a UnitLayout, and whether the
// shard cuts of a layout fall on granule boundaries. Internal to planner/.

#include <cstdint>

#include "common/errors.hpp"
#include "planner/unit_layout.hpp"
#include "planner/unit_problem.hpp"

namespace ragged::planner::baseline {

inline int64_t ceil_div(int64_t value, int64_t divisor) { return (value + divisor - 1) / divisor; }

inline int64_t round_up(int64_t value, int64_t multiple) { return ceil_div(value, multiple) * multiple; }

// A layout with the fields every baseline sets the same way; slots are pushed by the strategy.
inline UnitLayout start_layout(const UnitProblem& problem, Placement placement) {
  RAGGED_ASSERT(problem.ranks >= 1, "a unit needs at least one rank");
  RAGGED_ASSERT(problem.tensor_align >= 1 && problem.collective_align >= 1, "alignments are positive");
  UnitLayout layout;
  layout.ranks = problem.ranks;
  layout.placement = placement;
  layout.slots.reserve(problem.tensors.size());
  return layout;
}

// Places the tensors one after the other in the unit's order, each starting
// on a multiple of `align` elements; returns where the last one ends.
inline int64_t place_in_order(const UnitProblem& problem, UnitLayout& layout, int64_t align) {
  int64_t end = 0;
  for (const PlanTensor& t : problem.tensors) {
    const int64_t offset = round_up(end, align);
    layout.slots.push_back({offset, t.elements});
    end = offset + t.elements;
  }
  return end;
}

// Sets S; the baselines do not round S to the collective alignment, they report whether it is.
inline void set_shard_size(UnitLayout& layout, const UnitProblem& problem, int64_t shard) {
  layout.shard_size = shard;
  layout.aligned_shards = shard % problem.collective_align == 0;
}

// Whether every shard boundary k*S strictly inside [offset, offset + elements)
// lies a multiple of `granule` from offset. The boundaries are b, b+S, ...: all
// are on granules iff b is, and S is too or b is the only one. O(1).
inline bool cuts_on_granules(int64_t offset, int64_t elements, int64_t granule, int64_t shard) {
  if (granule <= 1 || shard <= 0) return true;
  const int64_t end = offset + elements;
  const int64_t first = (offset / shard + 1) * shard;
  if (first >= end) return true;
  if ((first - offset) % granule != 0) return false;
  return first + shard >= end || shard % granule == 0;
}

// Contiguous placement: every tensor's cuts by the shard boundaries, for this instance.
inline bool contiguous_honours_granularity(const UnitProblem& problem, const UnitLayout& layout) {
  for (size_t i = 0; i < problem.tensors.size(); ++i) {
    const PlanTensor& t = problem.tensors[i];
    if (!cuts_on_granules(layout.slots[i].offset, t.elements, t.granule, layout.shard_size)) return false;
  }
  return true;
}

// Rank-major placement: a tensor whose data spans more than one rank is cut
// every chunk (slot.length) elements from its start; one that fits a chunk is not cut.
inline bool chunks_honour_granularity(const UnitProblem& problem, const UnitLayout& layout) {
  for (size_t i = 0; i < problem.tensors.size(); ++i) {
    const PlanTensor& t = problem.tensors[i];
    const int64_t chunk = layout.slots[i].length;
    if (t.granule > 1 && t.elements > chunk && chunk % t.granule != 0) return false;
  }
  return true;
}

}  // namespace ragged::planner::baseline
