#pragma once
// A lower bound on the shard size S of any contiguous, granule-respecting
// layout of a unit (whatever the tensor order), from necessary conditions:
//  - balance: m*S holds every element, S a multiple of the collective alignment;
//  - a granule never straddles a shard: S >= min(g_t, e_t);
//  - a tensor crossing one boundary spans at most S + g*floor(S/g) elements,
//    so a longer one crosses several and then needs g | S;
//  - whole tensors (a single granule) are bin packing: of the j*m + 1 largest,
//    some shard holds j + 1.
// The smallest S meeting all of them is found by monotone jumps.

#include <cstdint>

#include "planner/unit_problem.hpp"

namespace ragged::planner {

int64_t lower_bound_shard_size(const UnitProblem& problem);

// True when S satisfies the per-tensor necessary conditions above.
bool meets_tensor_conditions(const UnitProblem& problem, int64_t shard_size);

}  // namespace ragged::planner
