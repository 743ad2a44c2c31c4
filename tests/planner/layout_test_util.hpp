#pragma once
// Tensors for the layout tests: a rows x row_size matrix and a vector, each
// with the granule (the smallest block a shard may cut) the test asks for.

#include <cstdint>

#include "planner/layout_strategy.hpp"

namespace ragged::planner::layout_test {

inline PlanTensor matrix(int64_t rows, int64_t row_size, int64_t granule = 1) {
  return {rows * row_size, granule, rows, row_size};
}

inline PlanTensor vec(int64_t n, int64_t granule = 1) { return {n, granule, n, 1}; }

}  // namespace ragged::planner::layout_test
