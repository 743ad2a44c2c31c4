#include "sim/sensitivity.hpp"

#include <algorithm>
#include <mutex>
#include <optional>

#include <google/protobuf/util/message_differencer.h>

#include "common/errors.hpp"
#include "common/task_pool.hpp"
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

// Full mode is asked for where a cluster's nodes may differ; symmetric mode
// gives the same step to the bit where they do not and falls back to full
// where they do (docs/SIMULATOR.md, "Symmetric vs full"), so a variant asks
// for it: a 16,384-GPU variant then takes a second, not the full mode's 20.
InputOutcome simulate_value(const planner::ResolvedScenario& resolved, const SimulationOptions& options) {
  SimulationOptions quiet = options;
  quiet.progress = {};
  if (quiet.mode == ModeChoice::kFull) quiet.mode = ModeChoice::kSymmetric;
  const SimulationSummary result = simulate_summary_in_child(resolved, quiet);
  InputOutcome out;
  out.simulated = true;
  out.tokens_per_s_per_gpu = result.summary.tokens_per_s_per_gpu();
  out.peak_reserved_bytes = result.summary.peak_reserved_bytes();
  out.oom = result.summary.oom();
  return out;
}

// A value to predict: its variant of the scenario, or why there is none.
struct Variant {
  InputSensitivity* input;
  size_t outcome;  // index into input->outcomes
  std::optional<planner::ResolvedScenario> scenario;
};

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
  // Every value's variant first, its outcome in place; a value the scenario
  // already has (a range's end at the default) is its prediction, not
  // simulated again.
  std::vector<Variant> variants;
  for (InputSensitivity& s : out) {
    if (!s.input.numeric) {  // a choice's ends may be the scenario's own
      s.outcomes.push_back({s.input.simulated + " (as simulated)", true, "", predicted.tokens_per_s_per_gpu,
                            predicted.peak_reserved_bytes, predicted.oom});
    }
    for (const InputValue& value : s.input.values) {
      InputOutcome outcome;
      outcome.label = value.label;
      std::optional<planner::ResolvedScenario> variant;
      try {
        variant = with_value(base, value);
      } catch (const InputError& e) {
        outcome.why = e.what();
      }
      if (variant && google::protobuf::util::MessageDifferencer::Equals(variant->scenario(), base.scenario())) {
        outcome = {value.label, true, "", predicted.tokens_per_s_per_gpu, predicted.peak_reserved_bytes, predicted.oom};
        variant.reset();
      }
      s.outcomes.push_back(std::move(outcome));
      variants.push_back({&s, s.outcomes.size() - 1, std::move(variant)});
    }
  }

  std::mutex finished;
  size_t done = 0;
  const auto predict = [&](Variant& v) {
    InputOutcome outcome = v.input->outcomes[v.outcome];
    if (v.scenario) {
      try {
        const std::string label = outcome.label;
        outcome = simulate ? simulate(*v.scenario) : simulate_value(*v.scenario, options);
        outcome.label = label;
      } catch (const InputError& e) {
        outcome.simulated = false;
        outcome.why = e.what();
      }
    }
    const std::lock_guard lock(finished);
    v.input->outcomes[v.outcome] = std::move(outcome);
    if (progress) progress(++done, variants.size());
  };
  // Each simulation is a child process: the default runs them side by side.
  // A given simulator (the tests') is called one value at a time.
  for_each_index(variants.size(), simulate ? 1 : hardware_threads(), [&](size_t i) { predict(variants[i]); });
  for (InputSensitivity& s : out) find_ends(s, predicted);
  std::stable_sort(out.begin(), out.end(),
                   [](const InputSensitivity& a, const InputSensitivity& b) { return a.ranks_before(b); });
  return out;
}

}  // namespace ragged::sim
