#pragma once
// Independent verification of a UnitLayout against its problem: what the
// property tests and `ragged plan --check` rely on. Returns every violated
// constraint as a readable line; empty means the layout is valid.

#include <string>
#include <vector>

#include "planner/unit_layout.hpp"
#include "planner/unit_problem.hpp"

namespace ragged::planner {

std::vector<std::string> layout_problems(const UnitProblem& problem, const UnitLayout& layout);

// Elements a rank-major chunk of tensor `t` must hold under `rule` for m ranks.
int64_t chunk_elements(const PlanTensor& t, int64_t ranks, ChunkRule rule);

}  // namespace ragged::planner
