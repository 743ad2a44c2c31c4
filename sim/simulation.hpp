#pragma once
// One simulated training step of a resolved scenario: plan, Program for the
// representative rank (for a pipeline, one per stage), SimGrid platform,
// execution, and the predicted Trace (events of that rank, or of the stage
// with the highest memory peak; its memory samples; the summary). SimGrid's engine is
// a process-wide singleton: simulate() runs at most once per process
// (run_in_child_process runs one per child for sweeps and comparisons).

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "planner/resolved_scenario.hpp"
#include "sim/collective_engine.hpp"
#include "sim/compute_model.hpp"
#include "sim/straggler_report.hpp"
#include "traces/trace.pb.h"

namespace ragged::planner {
struct ScenarioPrograms;
}

namespace ragged::sim {

enum class ModeChoice { kAuto, kFull, kSymmetric, kSteps };

struct SimulationOptions {
  ModeChoice mode = ModeChoice::kAuto;  // auto: full up to kFullModeMaxNodes nodes, symmetric above
  std::optional<std::filesystem::path> calibration;  // a compute calibration file from the backend
  std::function<void(double)> progress;              // fraction of the step's ops done
  // The mechanisms of docs/SIMULATOR.md section 6b and "The CPU issue path"
  // (both on by default; off to see what each contributes).
  bool share_gpu = true;   // NCCL's kernels take SMs and HBM bandwidth from concurrent work
  bool host_issue = true;  // no op starts before the framework's CPU thread has issued it
  // Set: the GPU table's sustained clock replaced (the calibration report's
  // fit of Hopper's, docs/results/calibration.md); unset: the table's.
  std::optional<double> sustained_clock;
  // planner::build_scenario_programs(resolved), when the caller has built it
  // already (tune's memory floor): simulate() runs these instead of building
  // them again. Null: simulate() builds them.
  const planner::ScenarioPrograms* programs = nullptr;
};

inline constexpr int64_t kFullModeMaxNodes = 64;

struct SimulationStats {
  SimulationMode mode = SimulationMode::kFull;
  bool forced_full = false;  // the symmetric mode was asked for, the what-if or the pipeline needs every node
  int reported_stage = 0;    // a pipeline's: the stage whose timeline and memory the trace holds
  int64_t simulated_nodes = 0;
  int64_t flows = 0;
  int representative_rank = 0;
  double wall_seconds = 0;
  // With a what-if (scenario.whatif): who set the pace. Empty ranks: none.
  StragglerReport whatif;
};

struct SimulationResult {
  traces::Trace trace;
  SimulationStats stats;
};

SimulationResult simulate(const planner::ResolvedScenario& resolved, const SimulationOptions& options);

// The compute model a simulation of the scenario's GPUs runs: the calibration
// file's, or the GPU class's default table at the preset's power limit; both
// at the clock of the slowest of the cluster's GPUs (cluster.gpu.clock_spread).
ComputeModel compute_model_of(const scenarios::Scenario& scenario, const SimulationOptions& options);

// Whether the scenario's what-if block changes anything (a slow GPU or link,
// jitter, a spine oversubscription): then its step is compared with the
// healthy cluster's (simulation_child.hpp).
bool has_whatif(const scenarios::Scenario& scenario);
// The same scenario without its what-if block.
planner::ResolvedScenario without_whatif(const planner::ResolvedScenario& resolved);

// Parses "auto", "full", "symmetric", "steps"; throws InputError otherwise.
ModeChoice parse_mode(const std::string& text);
std::string mode_name(SimulationMode mode);

}  // namespace ragged::sim
