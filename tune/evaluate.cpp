#include "tune/evaluate.hpp"

#include <algorithm>
#include <optional>

#include "common/errors.hpp"
#include "planner/checkpoint_cost.hpp"
#include "planner/memory_breakdown.hpp"
#include "planner/program_builder.hpp"
#include "planner/scenario_plan.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/prediction_band.hpp"
#include "sim/simulation_child.hpp"
#include "sim/step_time_bound.hpp"

namespace ragged::tune {
namespace {

void add_simulation(Evaluation& e, const scenarios::Scenario& scenario, const sim::SimulationSummary& simulated) {
  const traces::Summary& s = simulated.summary;
  const sim::PredictionBand band = sim::regime_band(scenario, s);
  e.band_tokens_low = band.tokens_low;
  e.band_tokens_high = band.tokens_high;
  e.band_rows = band.throughput.rows;
  e.band_memory_low_bytes = band.memory_low;
  e.band_peak_bytes = band.memory_high;
  e.outcome = Outcome::kSimulated;
  e.step_time_s = s.step_time_s();
  e.tokens_per_s_per_gpu = s.tokens_per_s_per_gpu();
  e.mfu = s.mfu();
  e.exposed_comm_s = s.exposed_comm_s();
  e.compute_s = s.compute_s();
  e.comm_s = s.comm_s();
  e.peak_reserved_bytes = s.peak_reserved_bytes();
  e.peak_allocated_bytes = s.peak_allocated_bytes();
  e.oom = s.oom();
  e.alloc_retries = s.alloc_retries();
  e.mode = sim::mode_name(simulated.stats.mode);
  e.simulation_wall_s = simulated.stats.wall_seconds;
}

// The planner's figures of a resolved scenario (outcome left to the verdict):
// a pipeline's are its most loaded stage's.
Evaluation floors(const planner::ResolvedScenario& resolved, const planner::ScenarioPrograms& built) {
  const std::vector<planner::Program>& programs = built.programs;
  const int rank = built.rank;
  Evaluation e;
  e.capacity_bytes = scenarios::allocator_capacity_bytes(resolved.scenario());
  for (const planner::Program& program : programs) {
    const planner::MemoryFloor floor = planner::memory_floor(program);
    const planner::MemoryBreakdown breakdown = planner::memory_breakdown(program);
    if (floor.total() < e.floor_bytes) continue;
    e.persistent_bytes = floor.persistent;
    e.floor_bytes = floor.total();
    e.static_peak_bytes = breakdown.peak_total();
    // Rank 0's, as `ragged simulate --goodput` counts it.
    e.checkpoint_bytes_per_gpu = rank == 0 ? planner::checkpoint_bytes_per_gpu(breakdown.persistent)
                                           : planner::checkpoint_bytes_per_gpu(resolved);
  }
  return e;
}

// Only the floors of `known`, pruned or to be simulated under `headroom`.
Evaluation verdict(const Evaluation& known, double headroom) {
  Evaluation e;
  e.persistent_bytes = known.persistent_bytes;
  e.floor_bytes = known.floor_bytes;
  e.static_peak_bytes = known.static_peak_bytes;
  e.capacity_bytes = known.capacity_bytes;
  e.checkpoint_bytes_per_gpu = known.checkpoint_bytes_per_gpu;
  e.cached = known.cached;
  const int64_t budget = memory_budget(e.capacity_bytes, headroom);
  e.outcome = e.floor_bytes > budget ? Outcome::kPruned : Outcome::kSimulated;
  if (e.persistent_bytes > budget)
    e.prune_reason = PruneReason::kPersistentState;
  else if (e.floor_bytes > budget)
    e.prune_reason = PruneReason::kActivations;
  return e;
}

Evaluation invalid(const std::string& message) {
  Evaluation e;
  e.outcome = Outcome::kInvalid;
  e.message = message;
  return e;
}

// The candidate's figures (the cache's, else planned and simulated), before
// the search's fit rules are set on them (evaluate).
Evaluation evaluate_figures(const scenarios::LoadedScenario& scenario, const EvaluateOptions& options) {
  const ResultCache* cache = options.cache;
  const std::string key = cache != nullptr ? cache_key(scenario) : "";
  const std::optional<Evaluation> known = cache != nullptr ? cache->load(key) : std::nullopt;
  if (known && known->outcome == Outcome::kInvalid) return *known;

  std::optional<planner::ResolvedScenario> resolved;
  // Built once: the floors read them and the simulation runs them.
  std::optional<planner::ScenarioPrograms> built;
  Evaluation planned;
  try {
    if (known) {
      planned = *known;
    } else {
      resolved = planner::resolve_scenario(scenario);
      built = planner::build_scenario_programs(*resolved);
      planned = floors(*resolved, *built);
    }
  } catch (const InputError& error) {
    Evaluation e = invalid(error.what());
    if (cache != nullptr) cache->store(key, e);
    return e;
  }
  Evaluation e = verdict(planned, options.headroom);
  if (e.outcome == Outcome::kPruned) {
    if (cache != nullptr && !known) cache->store(key, e);
    return e;
  }
  if (known && known->outcome == Outcome::kSimulated) return *known;
  try {
    if (!resolved) resolved = planner::resolve_scenario(scenario);
    if (!built) built = planner::build_scenario_programs(*resolved);
    sim::SimulationOptions simulation;
    simulation.programs = &*built;
    e.step_time_bound_s = sim::step_time_lower_bound(*resolved, *built, simulation);
    for (const planner::Program& program : built->programs)
      e.tokens_per_step = std::max(e.tokens_per_step, program.tokens_per_step);
    if (!options.simulate) return e;
    add_simulation(e, scenario.scenario, sim::simulate_summary_in_child(*resolved, simulation));
  } catch (const std::exception& error) {
    e.outcome = Outcome::kFailed;
    e.message = error.what();
    return e;  // a failure may be this machine's (fork, memory): never cached
  }
  e.cached = false;
  if (cache != nullptr) cache->store(key, e);
  return e;
}

}  // namespace

Evaluation plan_and_prune(const scenarios::LoadedScenario& scenario, double headroom) {
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenario);
  return verdict(floors(resolved, planner::build_scenario_programs(resolved)), headroom);
}

Evaluation evaluate(const scenarios::LoadedScenario& scenario, const EvaluateOptions& options) {
  Evaluation e = evaluate_figures(scenario, options);
  // The search's rules, whoever simulated or cached the figures.
  e.band_rule = options.memory_band;
  if (e.capacity_bytes > 0) e.own_budget_bytes = memory_budget(e.capacity_bytes, options.headroom);
  return e;
}

}  // namespace ragged::tune
