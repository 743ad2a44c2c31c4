#pragma once
// `ragged simulate --sensitivity`: each plausible input (plausible_inputs.hpp)
// re-simulated at its values, by the same `--set` overrides a user would
// type, and the prediction at the two ends: a real simulation per value,
// never a formula. Sorted by the relative spread of tokens/s per GPU over the
// values and the scenario's own, then by that of peak memory.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "planner/resolved_scenario.hpp"
#include "sim/plausible_inputs.hpp"
#include "sim/simulation.hpp"

namespace ragged::sim {

// One value of an input, simulated.
struct InputOutcome {
  std::string label;
  bool simulated = false;  // false: the scenario rejects the value (why)
  std::string why;
  double tokens_per_s_per_gpu = 0;
  int64_t peak_reserved_bytes = 0;
  bool oom = false;
};

struct InputSensitivity {
  PlausibleInput input;
  // One per input.values, in order; a choice's first is the scenario's own
  // value, its prediction not simulated again.
  std::vector<InputOutcome> outcomes;
  // The two ends: numeric inputs, the range's low and high values; choices,
  // the ones predicted slowest and fastest (the same when one was simulated).
  // Index into outcomes; -1 when none simulated.
  int low = -1;
  int high = -1;
  double tokens_effect = 0;  // (max - min) / the scenario's, over the outcomes and the scenario
  double memory_effect = 0;  // the same of peak reserved memory
  // The order of the list: the larger spread of tokens/s per GPU first (the
  // prediction a run is planned by), then of peak memory (the inputs that
  // move only memory come last, among themselves by it).
  bool ranks_before(const InputSensitivity& other) const {
    if (tokens_effect != other.tokens_effect) return tokens_effect > other.tokens_effect;
    return memory_effect > other.memory_effect;
  }
};

// The scenario's own prediction, the reference of every effect.
struct BasePrediction {
  double tokens_per_s_per_gpu = 0;
  int64_t peak_reserved_bytes = 0;
  bool oom = false;
};

// How one value is predicted; empty: simulate_summary_in_child. Tests count calls.
using VariantSimulator = std::function<InputOutcome(const planner::ResolvedScenario&)>;

// Every input of plausible_inputs(base) for which `wanted` is true
// (all when empty), each value simulated; sorted by InputSensitivity::ranks_before
// (ties keep plausible_inputs' order). `progress(done, total)` after each.
std::vector<InputSensitivity> sensitivity(const planner::ResolvedScenario& base, const BasePrediction& predicted,
                                          const SimulationOptions& options,
                                          const std::function<bool(const PlausibleInput&)>& wanted = {},
                                          const VariantSimulator& simulate = {},
                                          const std::function<void(size_t, size_t)>& progress = {});

}  // namespace ragged::sim
