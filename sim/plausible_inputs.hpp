#pragma once
// The inputs of a scenario whose plausible range can move its prediction,
// each with the values to simulate it at (`ragged simulate --sensitivity`,
// and the widening of a prediction band by the hardware a scenario leaves to
// the defaults). Each value is a set of `--set` overrides on the scenario as
// written; the ranges and why they are plausible are in plausible_inputs.cpp
// and docs/SIMULATOR.md section 13.

#include <string>
#include <vector>

#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_override.hpp"

namespace ragged::sim {

struct InputValue {
  std::string label;  // "200 Gb/s", "triton_flash_attention"
  std::vector<scenarios::FieldOverride> overrides;
};

struct PlausibleInput {
  std::string name;       // "NIC bandwidth"
  std::string field;      // "cluster.nics.bandwidth_gbits_per_s"
  std::string simulated;  // the value the scenario simulates, as a label
  // The scenario does not write it: the value is the preset's or Ragged's default.
  bool left_to_default = false;
  // The cluster's (NICs, power): a scenario that leaves one to the default
  // may run on any value of its range, so the band widens by it. A
  // software choice (kernels, allocator) is what the simulated run does.
  bool hardware = false;
  bool numeric = false;             // values are the range's two ends, low first
  std::vector<InputValue> values;   // numeric: the ends; else every other choice
  bool widens_band() const { return hardware && left_to_default; }
};

// The inputs that apply to `resolved` (NICs only across nodes, GPU inputs
// only on a GPU preset, FlashAttention-3 only on Hopper, the router's load
// only for a mixture of experts, the kv heads' copies only for grouped-query
// attention, the fused projections only where the checkpoint keeps them
// apart), in a fixed order.
std::vector<PlausibleInput> plausible_inputs(const planner::ResolvedScenario& resolved);

}  // namespace ragged::sim
