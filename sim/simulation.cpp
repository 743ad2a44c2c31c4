#include "sim/simulation.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

#include <fmt/format.h>
#include <simgrid/version.h>

#include "common/errors.hpp"
#include "planner/program_builder.hpp"
#include "planner/scenario_plan.hpp"
#include "scenarios/gpu_presets.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/program_run.hpp"
#include "sim/trace_builder.hpp"

namespace ragged::sim {

namespace {

// A cluster whose nodes differ needs every node: full mode, or the
// step-level rings when asked for.
SimulationMode resolve_mode(ModeChoice choice, const ClusterSpec& cluster, const ClusterHealth& health) {
  switch (choice) {
    case ModeChoice::kFull: return SimulationMode::kFull;
    case ModeChoice::kSymmetric: return health.breaks_symmetry() ? SimulationMode::kFull : SimulationMode::kSymmetric;
    case ModeChoice::kSteps: return SimulationMode::kSteps;
    case ModeChoice::kAuto: break;
  }
  return cluster.nodes <= kFullModeMaxNodes || health.breaks_symmetry() ? SimulationMode::kFull : SimulationMode::kSymmetric;
}

ClusterSpec cluster_spec(const scenarios::Scenario& scenario) {
  ClusterSpec cluster = ClusterSpec::from_scenario(scenario.cluster());
  if (scenario.whatif().has_spine_oversubscription()) cluster.oversubscription = scenario.whatif().spine_oversubscription();
  return cluster;
}

}  // namespace

// A calibration measured on the device already includes its clocks; the
// default tables are at the TDP, so a lower power limit slows them. Either
// is one GPU's: the cluster runs at the pace of its slowest.
ComputeModel compute_model_of(const scenarios::Scenario& scenario, const SimulationOptions& options) {
  const scenarios::Gpu& gpu = scenario.cluster().gpu();
  const double slowest = slowest_gpu_clock(gpu.clock_spread(), scenarios::total_gpus(scenario));
  if (options.calibration) {
    // A calibration without SM and CTA counts takes the preset's.
    ComputeModel calibrated = ComputeModel::from_calibration(*options.calibration, gpu.preset());
    if (calibrated.spec().sms == 0) {
      const GpuComputeSpec* table = find_gpu_table(gpu.preset());
      calibrated = calibrated.with_contention(table != nullptr ? *table : *find_gpu_table("h100"));
    }
    return calibrated.with_clock_factor(calibrated.spec().clock_factor * slowest);
  }
  const double power = power_limited_clock(gpu.tdp_watts(), gpu.power_limit_watts());
  ComputeModel model =
      ComputeModel::defaults(gpu.preset(), scenarios::peak_bf16_flops(gpu), gpu.hbm_bandwidth_gbytes_per_s() * 1e9)
          .with_clock_factor(power * slowest);
  if (options.sustained_clock) model = model.with_sustained_clock(*options.sustained_clock);
  // A clock locked below where the GPU would settle under load holds on every
  // GPU: the tables' bursts ran at the maximum clock, and neither the
  // sustained share nor the spread applies. Above that point the power limit
  // throttles it as if free.
  if (gpu.has_locked_clock_mhz()) {
    const scenarios::GpuPreset* preset = scenarios::gpu_preset_or_null(gpu.preset());
    const double locked = gpu.locked_clock_mhz() / preset->max_clock_mhz;  // a preset that knows it (validated)
    if (locked < model.spec().sustained_clock * power * slowest) {
      model = model.with_clock_factor(locked).with_sustained_clock(1.0);
    }
  }
  return model;
}

ModeChoice parse_mode(const std::string& text) {
  if (text == "auto") return ModeChoice::kAuto;
  if (text == "full") return ModeChoice::kFull;
  if (text == "symmetric") return ModeChoice::kSymmetric;
  if (text == "steps") return ModeChoice::kSteps;
  throw InputError(fmt::format("unknown simulation mode '{}': use auto, full, symmetric or steps", text));
}

std::string mode_name(SimulationMode mode) {
  switch (mode) {
    case SimulationMode::kFull: return "full";
    case SimulationMode::kSymmetric: return "symmetric";
    case SimulationMode::kSteps: return "steps";
  }
  return "?";
}

bool has_whatif(const scenarios::Scenario& scenario) {
  if (!scenario.has_whatif()) return false;
  const scenarios::WhatIf& w = scenario.whatif();
  return w.has_slow_gpus() || w.has_slow_links() || w.jitter().relative_stddev() > 0 || w.has_spine_oversubscription();
}

planner::ResolvedScenario without_whatif(const planner::ResolvedScenario& resolved) {
  planner::ResolvedScenario healthy = resolved;
  healthy.loaded.scenario.clear_whatif();
  healthy.loaded.written.clear_whatif();
  return healthy;
}

SimulationResult simulate(const planner::ResolvedScenario& resolved, const SimulationOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const scenarios::Scenario& scenario = resolved.scenario();
  const scenarios::Training& training = scenario.training();

  // A pipeline runs one Program per stage, each on its stage's rank 0;
  // otherwise every rank runs the representative rank's.
  std::optional<planner::ScenarioPrograms> own;
  const planner::ScenarioPrograms& built =
      options.programs != nullptr ? *options.programs : own.emplace(planner::build_scenario_programs(resolved));
  const std::vector<planner::Program>& programs = built.programs;
  const int rank = built.rank;
  const int64_t stages = std::max(1, training.mesh().pp());

  ProgramRunOptions run_options;
  run_options.cluster = cluster_spec(scenario);
  if (scenario.has_whatif()) {
    run_options.health = ClusterHealth(scenario.whatif(), scenarios::total_gpus(scenario), scenario.cluster().nodes());
  }
  run_options.mode = resolve_mode(options.mode, run_options.cluster, run_options.health);
  run_options.ranks = simulated_ranks(run_options.health, scenarios::total_gpus(scenario));
  if (stages > 1) {
    // Each stage's first rank runs its Program. Symmetric mode folds each
    // stage's collectives into the stage's first nodes; that needs whole
    // nodes per stage, and stages starting on a leaf boundary when they span
    // more than two leaves (else full mode).
    const int64_t stage_ranks = scenarios::total_gpus(scenario) / stages;
    const ClusterSpec& c = run_options.cluster;
    const int64_t stage_nodes = stage_ranks / c.gpus_per_node;
    const bool foldable = stage_ranks % c.gpus_per_node == 0 &&
                          (stage_nodes <= 2 * c.nodes_per_leaf || stage_nodes % c.nodes_per_leaf == 0);
    if (run_options.mode == SimulationMode::kSymmetric && !foldable) run_options.mode = SimulationMode::kFull;
    run_options.ranks.clear();
    for (int64_t s = 0; s < stages; ++s) run_options.ranks.push_back({s * stage_ranks, 1.0});
  }
  run_options.free_policy.defer_gathered_frees =
      training.strategy() == scenarios::FSDP1 || training.strategy() == scenarios::FSDP2;
  run_options.capacity = scenarios::allocator_capacity_bytes(scenario);
  run_options.expandable_segments = training.allocator().expandable_segments();
  run_options.progress = options.progress;
  run_options.share_gpu = options.share_gpu;
  // Eager PyTorch's CPU thread issues a GPU rank's ops; a CPU rank's host
  // backend issues from C++ and its time is the compute model's already.
  run_options.host = host_costs_of(scenario, options.host_issue);
  const ComputeModel compute = compute_model_of(scenario, options);
  if (compute.spec().driver_calls) run_options.free_policy.driver_calls = *compute.spec().driver_calls;
  // A kernel the compute model has no rates for (a calibration file that
  // measures attention gives FlashAttention-2's) is refused by name.
  const GpuComputeSpec& spec = compute.spec();
  const models::AttentionKernel kernel = resolved.model.kernels.attention;
  const bool flash3 = kernel == models::AttentionKernel::kFlash3;
  if ((flash3 && !(spec.flash3_forward_efficiency > 0 && spec.flash3_backward_efficiency > 0)) ||
      (kernel == models::AttentionKernel::kCudnn &&
       !(spec.cudnn_forward_efficiency > 0 && spec.cudnn_backward_efficiency > 0))) {
    throw InputError(fmt::format(
        "training.attention is {} but the compute model '{}' has no rates for it ({}; a calibration file that "
        "measures attention gives FlashAttention-2's): use FLASH_ATTENTION_2, or simulate without --calibration",
        flash3 ? "FLASH_ATTENTION_3" : "CUDNN_ATTENTION", spec.name,
        flash3 ? "FlashAttention-3 runs on Hopper GPUs" : "SDPA's cuDNN backend is measured on Hopper and Blackwell"));
  }
  std::vector<const planner::Program*> per_rank;
  for (size_t r = 0; r < run_options.ranks.size(); ++r) per_rank.push_back(&programs[std::min(r, programs.size() - 1)]);
  const ProgramRun run = run_programs(per_rank, compute, run_options);
  const planner::Program& program = *per_rank[run.reported];

  SimulationResult result;
  result.stats.mode = run_options.mode;
  result.stats.forced_full = options.mode == ModeChoice::kSymmetric && run_options.mode != SimulationMode::kSymmetric;
  result.stats.reported_stage = program.stage;
  if (has_whatif(scenario)) result.stats.whatif = analyse_stragglers(run.ranks, run.collectives, run_options.health);
  result.stats.simulated_nodes = run.simulated_nodes;
  result.stats.flows = run.flows;
  result.stats.representative_rank =
      stages > 1 ? static_cast<int>(run_options.ranks[run.reported].rank) : rank;
  TraceInputs trace_inputs{&resolved, &program, &run, "", {}, {}};
  if (stages > 1) {
    trace_inputs.stage_programs = per_rank;
    for (const SimulatedRank& r : run_options.ranks) trace_inputs.stage_ranks.push_back(r.rank);
  }
  trace_inputs.device = fmt::format("simgrid {}.{}, {} x {} ({} mode)", SIMGRID_VERSION_MAJOR, SIMGRID_VERSION_MINOR,
                                    scenarios::total_gpus(scenario), scenario.cluster().gpu().preset(),
                                    mode_name(run_options.mode));
  result.trace = build_trace(trace_inputs);
  result.stats.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace ragged::sim
