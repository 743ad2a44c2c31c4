#include "gui/models/simulation_outcome.hpp"

#include <chrono>
#include <exception>

#include "sim/simulation_child.hpp"

namespace ragged::gui {

std::string run_state_name(RunState state) {
  switch (state) {
    case RunState::kQueued: return "queued";
    case RunState::kRunning: return "running";
    case RunState::kDone: return "done";
    case RunState::kFailed: return "failed";
    case RunState::kCancelled: return "cancelled";
  }
  return "?";
}

SimulationOutcome run_simulation(const planner::ResolvedScenario& resolved, const std::function<bool()>& cancelled,
                                 const std::function<void(double)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  SimulationOutcome outcome;
  sim::ChildControl control;
  control.cancelled = cancelled;
  control.progress = progress;
  control.nice = 10;  // the window stays responsive while children compute
  try {
    sim::SimulationResult result = sim::simulate_in_child(resolved, {}, control);
    outcome.trace = std::make_shared<const traces::Trace>(std::move(result.trace));
    if (sim::has_whatif(resolved.scenario())) {
      outcome.whatif = std::make_shared<const sim::StragglerReport>(std::move(result.stats.whatif));
    }
    outcome.state = RunState::kDone;
  } catch (const sim::Cancelled&) {
    outcome.state = RunState::kCancelled;
  } catch (const std::exception& e) {
    outcome.state = RunState::kFailed;
    outcome.error = e.what();
  }
  outcome.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

}  // namespace ragged::gui
