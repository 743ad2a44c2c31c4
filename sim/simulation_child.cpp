#include "sim/simulation_child.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"

namespace ragged::sim {
namespace {

// A message as "<size of the first part>\n", the first part, then the statistics as JSON.
std::string with_stats(const std::string& first, const SimulationStats& s) {
  nlohmann::json stats = {{"mode", mode_name(s.mode)},
                          {"simulated_nodes", s.simulated_nodes},
                          {"flows", s.flows},
                          {"rank", s.representative_rank},
                          {"wall_seconds", s.wall_seconds},
                          {"forced_full", s.forced_full},
                          {"reported_stage", s.reported_stage}};
  if (!s.whatif.ranks.empty()) stats["whatif"] = straggler_to_json(s.whatif);
  return fmt::format("{}\n", first.size()) + first + stats.dump();
}

// Splits such a message into its first part and the statistics.
std::string split_stats(const std::string& bytes, SimulationStats& out) {
  const size_t newline = bytes.find('\n');
  RAGGED_ASSERT(newline != std::string::npos, "a simulation result starts with its size");
  const size_t size = std::stoull(bytes.substr(0, newline));
  nlohmann::json stats = nlohmann::json::parse(bytes.substr(newline + 1 + size));
  out.mode = stats["mode"] == "symmetric" ? SimulationMode::kSymmetric
             : stats["mode"] == "steps"   ? SimulationMode::kSteps
                                          : SimulationMode::kFull;
  out.simulated_nodes = stats["simulated_nodes"];
  out.flows = stats["flows"];
  out.representative_rank = stats["rank"];
  out.wall_seconds = stats["wall_seconds"];
  out.forced_full = stats["forced_full"];
  out.reported_stage = stats["reported_stage"];
  if (stats.contains("whatif")) out.whatif = straggler_from_json(stats["whatif"]);
  return bytes.substr(newline + 1, size);
}

}  // namespace

std::string serialize_result(const SimulationResult& result) {
  return with_stats(result.trace.SerializeAsString(), result.stats);
}

SimulationResult parse_result(const std::string& bytes) {
  SimulationResult result;
  RAGGED_ASSERT(result.trace.ParseFromString(split_stats(bytes, result.stats)), "the simulation's trace must parse");
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

SimulationSummary simulate_summary_in_child(const planner::ResolvedScenario& resolved, const SimulationOptions& options) {
  const std::string bytes = run_in_child([&] {
    const SimulationResult result = simulate(resolved, options);
    return with_stats(result.trace.summary().SerializeAsString(), result.stats);
  });
  SimulationSummary out;
  RAGGED_ASSERT(out.summary.ParseFromString(split_stats(bytes, out.stats)), "the simulation's summary must parse");
  return out;
}

}  // namespace ragged::sim
