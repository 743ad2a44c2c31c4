#pragma once
// The planning problem of one FSDP unit (one communication group), in the
// terms of ../shared/reference/vescale.md: ordered tensors with e_t elements
// and a non-shardable granule of g_t elements, m ranks, and the alignment a
// shard size must have for the collectives. Every layout strategy solves it.

#include <cstdint>
#include <string>
#include <vector>

namespace ragged::planner {

struct PlanTensor {
  int64_t elements = 0;  // e_t
  int64_t granule = 1;   // g_t: shard boundaries inside the tensor fall on multiples of it from its start
  int64_t dim0 = 1;      // size of dim 0 (row-wise baselines shard over it)
  int64_t dim0_stride = 1;  // elements per dim-0 slice (elements / dim0)
  // The first parameter of its module (a Linear's weight; its bias follows
  // in the same module): ZeRO-3 fetches a module's parameters together.
  bool starts_module = true;
};

struct UnitProblem {
  std::vector<PlanTensor> tensors;  // in model (execution) order
  int64_t ranks = 1;                // m
  int64_t collective_align = 1;     // S must be a multiple of this many elements (16 bytes of the compute dtype)
  int64_t tensor_align = 1;         // every contiguous tensor starts on a multiple of this many elements

  int64_t total_elements() const;
};

// Identity of a problem for caching: units with equal tensors plan alike.
std::string problem_signature(const UnitProblem& problem);

}  // namespace ragged::planner
