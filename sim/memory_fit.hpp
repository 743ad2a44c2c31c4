#pragma once
// What did not fit, and what would: for a step predicted out of memory, the
// largest parts of its peak (the planner's memory breakdown), and the changes
// a planner types first (activation checkpointing, a smaller micro-batch with
// the same tokens per step, more GPUs), each one checked. A change whose
// memory floor (planner::memory_floor: no execution peaks lower) already
// exceeds the allocator's capacity is discarded without simulating it; the
// others are simulated like `ragged simulate` with those flags, so "fits"
// is the simulator's own verdict. What `ragged simulate` leads its report
// with, and what the dashboard can show beside an OOM.

#include <cstdint>
#include <string>
#include <vector>

#include "planner/resolved_scenario.hpp"
#include "sim/simulation.hpp"

namespace ragged::sim {

struct MemoryPart {
  std::string what;  // "activations", "optimizer states", ...
  int64_t bytes = 0;
};

// The planner's static peak split by what holds it (persistent state, and
// what is live at the transient peak), largest first, zero parts left out;
// of a pipeline, the stage with the highest peak.
std::vector<MemoryPart> memory_parts_at_peak(const planner::ResolvedScenario& resolved);

struct MemoryFix {
  std::string flags;   // what to add to the command line: "--checkpointing full"
  bool simulated = false;  // false: discarded by its memory floor
  int64_t floor_bytes = 0;  // planner::memory_floor of its scenario
  // Simulated:
  int64_t peak_reserved_bytes = 0;
  bool oom = true;
  // Fits with less room than the simulator's peak-memory error
  // (traces::fits_tightly), or only by releasing the allocator's cache.
  bool tight = false;
  double tokens_per_s_per_gpu = 0;

  bool fits() const { return simulated && !oom; }
};

struct MemoryFixes {
  int64_t capacity_bytes = 0;  // the allocator's (scenarios::allocator_capacity_bytes)
  // Every change tried, in the order tried; along each kind of change the
  // tries stop at the first that fits with room (the mildest one), a tight
  // fit being kept and the next, stronger change tried too.
  std::vector<MemoryFix> tried;
  std::vector<MemoryFix> fitting() const;
};

// Tries the changes for `resolved`, the scenario simulated (its strategy and
// settings kept; a what-if block left out, it does not move memory).
// `options` as the original simulation's (progress is ignored).
MemoryFixes find_memory_fixes(const planner::ResolvedScenario& resolved, const SimulationOptions& options);

}  // namespace ragged::sim
