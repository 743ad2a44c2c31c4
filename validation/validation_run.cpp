#include "validation/validation_run.hpp"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/task_pool.hpp"
#include "common/text_case.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/simulation_child.hpp"
#include "traces/metrics.hpp"
#include "traces/trace.pb.h"

namespace ragged::validation {
namespace {

Prediction prediction_of(const sim::SimulationSummary& simulated) {
  const traces::Summary& s = simulated.summary;
  Prediction p;
  p.mode = sim::mode_name(simulated.stats.mode);
  p.wall_seconds = simulated.stats.wall_seconds;
  p.tokens_per_s_per_gpu = s.tokens_per_s_per_gpu();
  p.step_time_s = s.step_time_s();
  p.mfu = s.mfu();
  p.compute_s = s.compute_s();
  p.comm_s = s.comm_s();
  p.exposed_comm_s = s.exposed_comm_s();
  p.peak_reserved_bytes = s.peak_reserved_bytes();
  p.peak_allocated_bytes = s.peak_allocated_bytes();
  for (const traces::StageFigures& stage : s.stages()) {
    p.stages.push_back({stage.rank(), stage.peak_reserved_bytes(), stage.peak_allocated_bytes()});
  }
  p.capacity_bytes = s.hbm_capacity_bytes();
  p.allocator_capacity_bytes = traces::allocator_capacity_of(s);
  p.oom = s.oom();
  return p;
}

}  // namespace

Prediction simulate_row(const planner::ResolvedScenario& resolved,
                        const std::optional<std::filesystem::path>& calibration) {
  sim::SimulationOptions options;
  options.calibration = calibration;
  return prediction_of(sim::simulate_summary_in_child(resolved, options));
}

planner::ResolvedScenario resolve_row(const ValidationSet& set, size_t index,
                                      const std::vector<scenarios::FieldOverride>& overrides) {
  const Run& run = set.runs[index];
  const bool shipped = run.scenario_source_case() == Run::kShippedScenario;
  try {
    scenarios::LoadedScenario loaded = shipped ? scenarios::load_scenario(run.shipped_scenario())
                                               : scenarios::load_scenario_file(set.scenario_path(run));
    return planner::resolve_scenario(scenarios::with_overrides(loaded, overrides));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{} (run '{}'): {}", set.where(index, shipped ? "shipped_scenario" : "scenario"),
                                 run.id(), e.what()));
  }
}

namespace {

// The row as its scenario describes it, before any simulation.
RowResult describe_row(const Run& run, const std::optional<planner::ResolvedScenario>& resolved,
                       const RunOptions& options) {
  RowResult row;
  row.run = run;
  if (!resolved) return row;
  const scenarios::Scenario& scenario = resolved->scenario();
  row.model = resolved->model.name;
  row.mixture_of_experts = resolved->model.arch.is_moe();
  row.gpus = scenarios::total_gpus(scenario);
  row.gpu = scenario.cluster().gpu().preset();
  row.gpu_memory_gib = scenario.cluster().gpu().hbm_capacity_gib();
  row.strategy = scenarios::strategy_name(scenario.training().strategy());
  row.checkpointing = lower_case(scenarios::Checkpointing_Name(scenario.training().activation_checkpointing()));
  row.sequence = scenario.training().sequence_length();
  row.attention = lower_case(scenarios::AttentionKernel_Name(scenario.training().attention()));
  row.calibrated = options.calibration.has_value() && row.gpu == options.calibrated_preset;
  return row;
}

void predict_row(RowResult& row, const planner::ResolvedScenario& resolved, const RunOptions& options) {
  const std::optional<std::filesystem::path> calibration =
      row.calibrated ? options.calibration : std::optional<std::filesystem::path>();
  try {
    row.predicted = options.simulate ? options.simulate(resolved, calibration) : simulate_row(resolved, calibration);
    row.status = RowStatus::kSimulated;
  } catch (const std::exception& e) {
    row.status = RowStatus::kFailed;
    row.failure = e.what();
  }
}

// The rows in the order to simulate them: the likely longest first, so that
// the jobs finish together instead of one pipeline row running alone at the
// end. A row's simulation grows with its micro-batches times its pipeline
// stages (each stage a node of its own that symmetric mode cannot fold). The
// repository's set, replayed on two jobs from the simulation_wall_s of its
// rows (`ragged validate --json`, 2026-12-02): 131 s in this order, the best
// any order gives, against 145 s in the file's. Results keep the file's order.
std::vector<size_t> longest_first(const std::vector<std::optional<planner::ResolvedScenario>>& resolved) {
  std::vector<int64_t> cost(resolved.size(), 0);
  for (size_t k = 0; k < resolved.size(); ++k) {
    if (!resolved[k]) continue;
    const scenarios::Training& training = resolved[k]->scenario().training();
    cost[k] = std::max<int64_t>(1, training.gradient_accumulation_steps()) * std::max(1, training.mesh().pp());
  }
  std::vector<size_t> order(resolved.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  return order;
}

}  // namespace

std::vector<RowResult> run_validation(const ValidationSet& set, const RunOptions& options) {
  std::vector<size_t> chosen;
  for (size_t i = 0; i < set.runs.size(); ++i) {
    if (set.runs[i].id().find(options.filter) != std::string::npos) chosen.push_back(i);
  }
  if (chosen.empty()) throw InputError(fmt::format("no run id of {} contains '{}'", set.origin, options.filter));

  // Every scenario first: bad input ends the run before any simulation.
  std::vector<std::optional<planner::ResolvedScenario>> resolved(chosen.size());
  for (size_t k = 0; k < chosen.size(); ++k) {
    const Run& run = set.runs[chosen[k]];
    if (!run.excluded().empty()) continue;
    resolved[k] = resolve_row(set, chosen[k], options.overrides);
    const int64_t gpus = scenarios::total_gpus(resolved[k]->scenario());
    if (run.published().has_memory_rank() && run.published().memory_rank() >= gpus) {
      throw InputError(fmt::format("{} (run '{}'): rank {} of a run on {} GPUs: give a rank from 0 to {}",
                                   set.where(chosen[k], "published.memory_rank"), run.id(),
                                   run.published().memory_rank(), gpus, gpus - 1));
    }
  }

  std::vector<RowResult> rows;
  rows.reserve(chosen.size());
  for (size_t k = 0; k < chosen.size(); ++k) rows.push_back(describe_row(set.runs[chosen[k]], resolved[k], options));

  // Each row writes only its own RowResult; the count and the progress
  // callback are shared.
  std::mutex finished;
  size_t done = 0;
  const auto predict = [&](size_t k) {
    if (resolved[k]) predict_row(rows[k], *resolved[k], options);
    const std::lock_guard lock(finished);
    ++done;
    if (options.progress) options.progress(done, rows.size(), rows[k]);
  };
  const std::vector<size_t> order = longest_first(resolved);
  for_each_index(order.size(), options.jobs, [&](size_t i) { predict(order[i]); });
  return rows;
}

}  // namespace ragged::validation
