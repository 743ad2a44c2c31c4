#pragma once
// One simulated training step of a resolved scenario: plan, Program for the
// representative rank, SimGrid platform, execution, and the predicted Trace
// (events of that rank, its memory samples, the summary). SimGrid's engine is
// a process-wide singleton: simulate() runs at most once per process
// (run_in_child_process runs one per child for sweeps and comparisons).

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "planner/resolved_scenario.hpp"
#include "sim/collective_engine.hpp"
#include "traces/trace.pb.h"

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
};

inline constexpr int64_t kFullModeMaxNodes = 64;

struct SimulationStats {
  SimulationMode mode = SimulationMode::kFull;
  int64_t simulated_nodes = 0;
  int64_t flows = 0;
  int representative_rank = 0;
  double wall_seconds = 0;
};

struct SimulationResult {
  traces::Trace trace;
  SimulationStats stats;
};

SimulationResult simulate(const planner::ResolvedScenario& resolved, const SimulationOptions& options);

// Parses "auto", "full", "symmetric", "steps"; throws InputError otherwise.
ModeChoice parse_mode(const std::string& text);
std::string mode_name(SimulationMode mode);

}  // namespace ragged::sim
