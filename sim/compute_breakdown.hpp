#pragma once
// Where each unit's compute time goes, by what runs it (GEMMs, attention,
// element-wise traffic, kernel launches): the compute model's costs of the
// representative rank's Program, before any sharing with collectives. What
// `ragged simulate --breakdown` prints, so that a surprising prediction can
// be traced to the rates behind it.

#include <string>
#include <vector>

#include "planner/resolved_scenario.hpp"
#include "sim/compute_model.hpp"
#include "sim/simulation.hpp"

namespace ragged::sim {

struct UnitComputeParts {
  std::string unit;  // "embed", "head", or "layers (mean of 32)"
  std::string pass;  // "forward", "backward" or "recompute"
  int units = 1;     // units averaged into the row
  ComputeParts parts;  // per step: every micro-batch's op summed, averaged over the units (kernels too)
};

// Rows in unit order, each unit's passes in forward, recompute, backward
// order; blocks named "layers.N" averaged into one row per pass.
std::vector<UnitComputeParts> compute_breakdown(const planner::ResolvedScenario& resolved,
                                                const SimulationOptions& options);

}  // namespace ragged::sim
