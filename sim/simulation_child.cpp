#include "sim/simulation_child.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"

namespace ragged::sim {

std::string serialize_result(const SimulationResult& result) {
  nlohmann::json stats = {{"mode", mode_name(result.stats.mode)},
                          {"simulated_nodes", result.stats.simulated_nodes},
                          {"flows", result.stats.flows},
                          {"rank", result.stats.representative_rank},
                          {"wall_seconds", result.stats.wall_seconds},
                          {"forced_full", result.stats.forced_full}};
  if (!result.stats.whatif.ranks.empty()) stats["whatif"] = straggler_to_json(result.stats.whatif);
  std::string trace = result.trace.SerializeAsString();
  return fmt::format("{}\n", trace.size()) + trace + stats.dump();
}

SimulationResult parse_result(const std::string& bytes) {
  SimulationResult result;
  const size_t newline = bytes.find('\n');
  RAGGED_ASSERT(newline != std::string::npos, "a simulation result starts with its trace size");
  const size_t size = std::stoull(bytes.substr(0, newline));
  RAGGED_ASSERT(result.trace.ParseFromString(bytes.substr(newline + 1, size)), "the simulation's trace must parse");
  nlohmann::json stats = nlohmann::json::parse(bytes.substr(newline + 1 + size));
  result.stats.mode = stats["mode"] == "symmetric" ? SimulationMode::kSymmetric
                      : stats["mode"] == "steps"   ? SimulationMode::kSteps
                                                   : SimulationMode::kFull;
  result.stats.simulated_nodes = stats["simulated_nodes"];
  result.stats.flows = stats["flows"];
  result.stats.representative_rank = stats["rank"];
  result.stats.wall_seconds = stats["wall_seconds"];
  result.stats.forced_full = stats["forced_full"];
  if (stats.contains("whatif")) result.stats.whatif = straggler_from_json(stats["whatif"]);
  return result;
}

namespace {

SimulationResult simulate_one_in_child(const planner::ResolvedScenario& resolved, const SimulationOptions& options,
                                       const ChildControl& control, ChildUsage* usage) {
  ChildControl with_progress = control;
  if (!with_progress.progress) with_progress.progress = options.progress;
  const std::string bytes = run_in_child(
      [&](const std::function<void(double)>& progress) {
        SimulationOptions in_child = options;
        in_child.progress = with_progress.progress ? progress : std::function<void(double)>{};
        if (in_child.progress) in_child.progress(0);  // started (the executor reports every 256 ops)
        std::string answer = serialize_result(simulate(resolved, in_child));
        if (in_child.progress) in_child.progress(1);
        return answer;
      },
      with_progress, usage);
  return parse_result(bytes);
}

}  // namespace

SimulationResult simulate_in_child(const planner::ResolvedScenario& resolved, const SimulationOptions& options,
                                   const ChildControl& control, ChildUsage* usage) {
  SimulationResult result = simulate_one_in_child(resolved, options, control, usage);
  if (!has_whatif(resolved.scenario())) return result;
  // The healthy cluster, simulated as asked (its own progress is not shown).
  SimulationOptions healthy_options = options;
  healthy_options.progress = {};
  ChildControl healthy_control = control;
  healthy_control.progress = {};
  const SimulationResult healthy = simulate_one_in_child(without_whatif(resolved), healthy_options, healthy_control, nullptr);
  result.stats.whatif.healthy_step_seconds = healthy.trace.summary().step_time_s();
  return result;
}

}  // namespace ragged::sim
