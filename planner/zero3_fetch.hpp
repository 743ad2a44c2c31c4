#pragma once
// DeepSpeed ZeRO-3's fetches of one unit's parameters
// (runtime/zero/partitioned_param_coordinator.py, fetch_sub_module): the hook
// of each sub-module gathers that module's parameters not yet in flight, then
// prefetches the next parameters of the trace until prefetch_bucket_size
// elements are on their way (the one that crosses it included). Each call is
// one collective: a single parameter is gathered straight into its own
// storage (partition_parameters.py, no copy), several into one flat buffer
// that is then copied into each parameter's storage. Small parameters
// (<= param_persistence_threshold) stay gathered and are never fetched.

#include <cstdint>
#include <vector>

#include "planner/unit_problem.hpp"

namespace ragged::planner {

// zero/config.py: stage3_param_persistence_threshold and
// stage3_prefetch_bucket_size (elements).
inline constexpr int64_t kZero3PersistenceThreshold = 100'000;
inline constexpr int64_t kZero3PrefetchBucketElements = 50'000'000;

inline bool zero3_persistent(const PlanTensor& tensor) { return tensor.elements <= kZero3PersistenceThreshold; }

// The unit's fetched tensors (indices into problem.tensors) grouped by the
// collective that gathers them, in trace order: the first module's
// parameters, then prefetch sets of at least `prefetch_elements` elements
// each (the last may hold fewer). The trace is taken unit by unit: a set does
// not reach into the next unit, whose first module starts a group of its own.
std::vector<std::vector<int>> zero3_fetch_groups(const UnitProblem& problem,
                                                 int64_t prefetch_elements = kZero3PrefetchBucketElements);

}  // namespace ragged::planner
