#pragma once
// One candidate evaluated: planned and discarded when its memory floor
// (planner::memory_floor: the sharded state and the activations and
// workspaces one stream holds at once) exceeds the budget, or simulated in
// a child process (sim::simulate_summary_in_child). The floors and the
// simulation are read from the cache when it has them, and the verdict is
// the same as without the cache. The candidate's own problems never throw:
// a scenario that rejects the combination is kInvalid, a simulation that
// fails is kFailed, with the message.

#include "scenarios/scenario_loader.hpp"
#include "traces/metrics.hpp"
#include "tune/evaluation.hpp"
#include "tune/result_cache.hpp"

namespace ragged::tune {

struct EvaluateOptions {
  double headroom = traces::kPeakMemoryPredictionError;
  // Constraints::memory_band: a candidate fits only if its memory band's upper end does too.
  bool memory_band = false;
  const ResultCache* cache = nullptr;  // none: always plan and simulate
  // False: stop before the simulation; a candidate to simulate comes back
  // awaiting it (awaits_simulation) with its floors and step-time bound.
  bool simulate = true;
};

// `scenario` is the candidate's (candidate_scenario). A candidate that is
// simulated or awaits it carries its step-time bound (sim::step_time_lower_bound).
Evaluation evaluate(const scenarios::LoadedScenario& scenario, const EvaluateOptions& options);

// The planner's part alone: the floors, the static estimate, the capacity
// and the pruning verdict for `headroom` (kPruned, or kSimulated with no
// figures yet: it must be simulated). InputError when it cannot be planned.
Evaluation plan_and_prune(const scenarios::LoadedScenario& scenario, double headroom);

// What evaluate() returns without simulating a candidate that must be:
// kSimulated with no figures yet (a simulated step never takes 0 s).
inline bool awaits_simulation(const Evaluation& e) { return e.outcome == Outcome::kSimulated && e.step_time_s <= 0; }

}  // namespace ragged::tune
