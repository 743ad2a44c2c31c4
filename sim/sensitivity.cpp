#include "sim/sensitivity.hpp"

#include <algorithm>

#include "common/errors.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::sim {
namespace {

// `base` with one value's overrides set on what it was written as; its
// strategy stays the simulated one (`--strategy` sets it after loading).
planner::ResolvedScenario with_value(const planner::ResolvedScenario& base, const InputValue& value) {
  scenarios::LoadedScenario loaded = scenarios::with_overrides(base.loaded, value.overrides);
  loaded.scenario.mutable_training()->set_strategy(base.scenario().training().strategy());
  return planner::resolve_scenario(std::move(loaded));
}

InputOutcome simulate_value(const planner::ResolvedScenario& resolved, const SimulationOptions& options) {
  SimulationOptions quiet = options;
  quiet.progress = {};
  const SimulationSummary result = simulate_summary_in_child(resolved, quiet);
  InputOutcome out;
  out.simulated = true;
  out.tokens_per_s_per_gpu = result.summary.tokens_per_s_per_gpu();
  out.peak_reserved_bytes = result.summary.peak_reserved_bytes();
  out.oom = result.summary.oom();
  return out;
}

double spread(double base, double lowest, double highest) {
  return base > 0 ? (std::max(base, highest) - std::min(base, lowest)) / base : 0.0;
}

void find_ends(InputSensitivity& s, const BasePrediction& predicted) {
  double lowest = predicted.tokens_per_s_per_gpu, highest = lowest;
  double least = static_cast<double>(predicted.peak_reserved_bytes), most = least;
  for (size_t i = 0; i < s.outcomes.size(); ++i) {
    const InputOutcome& o = s.outcomes[i];
    if (!o.simulated) continue;
    const int index = static_cast<int>(i);
    if (s.input.numeric) {
      if (s.low < 0) s.low = index;
      s.high = index;
    } else {
      if (s.low < 0 || o.tokens_per_s_per_gpu < s.outcomes[static_cast<size_t>(s.low)].tokens_per_s_per_gpu) s.low = index;
      if (s.high < 0 || o.tokens_per_s_per_gpu >= s.outcomes[static_cast<size_t>(s.high)].tokens_per_s_per_gpu) s.high = index;
    }
    lowest = std::min(lowest, o.tokens_per_s_per_gpu);
    highest = std::max(highest, o.tokens_per_s_per_gpu);
    least = std::min(least, static_cast<double>(o.peak_reserved_bytes));
    most = std::max(most, static_cast<double>(o.peak_reserved_bytes));
  }
  s.tokens_effect = spread(predicted.tokens_per_s_per_gpu, lowest, highest);
  s.memory_effect = spread(static_cast<double>(predicted.peak_reserved_bytes), least, most);
}

}  // namespace

std::vector<InputSensitivity> sensitivity(const planner::ResolvedScenario& base, const BasePrediction& predicted,
                                          const SimulationOptions& options,
                                          const std::function<bool(const PlausibleInput&)>& wanted,
                                          const VariantSimulator& simulate,
                                          const std::function<void(size_t, size_t)>& progress) {
  std::vector<InputSensitivity> out;
  for (PlausibleInput& input : plausible_inputs(base)) {
    if (!wanted || wanted(input)) out.push_back({std::move(input), {}});
  }
  size_t total = 0, done = 0;
  for (const InputSensitivity& s : out) total += s.input.values.size();
  for (InputSensitivity& s : out) {
    if (!s.input.numeric) {  // a choice's ends may be the scenario's own
      s.outcomes.push_back({s.input.simulated + " (as simulated)", true, "", predicted.tokens_per_s_per_gpu,
                            predicted.peak_reserved_bytes, predicted.oom});
    }
    for (const InputValue& value : s.input.values) {
      InputOutcome outcome;
      try {
        const planner::ResolvedScenario variant = with_value(base, value);
        outcome = simulate ? simulate(variant) : simulate_value(variant, options);
      } catch (const InputError& e) {
        outcome.simulated = false;
        outcome.why = e.what();
      }
      outcome.label = value.label;
      s.outcomes.push_back(std::move(outcome));
      if (progress) progress(++done, total);
    }
    find_ends(s, predicted);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const InputSensitivity& a, const InputSensitivity& b) { return a.ranks_before(b); });
  return out;
}

}  // namespace ragged::sim
