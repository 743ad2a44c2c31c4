// ragged simulate: predict step time, throughput, MFU, exposed communication
// and memory with the SimGrid simulator; --strategy all compares strategies,
// --sweep gpus=... tabulates scaling. Every prediction comes with its band
// (sim/prediction_band.hpp); --sensitivity re-simulates the plausible inputs. Each simulation runs in a child process
// (SimGrid allows one per process). A step out of memory leads the text
// report with what did not fit and which changes would (sim/memory_fit.hpp);
// --fail-on-oom makes it exit kExitOutOfMemory.

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/goodput_options.hpp"
#include "cli/goodput_report.hpp"
#include "cli/scenario_options.hpp"
#include "cli/simulate_report.hpp"
#include "cli/validators.hpp"
#include "common/errors.hpp"
#include "common/file_io.hpp"
#include "common/input_limits.hpp"
#include "common/progress_bar.hpp"
#include "planner/global_batch.hpp"
#include "planner/mesh.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/compute_breakdown.hpp"
#include "sim/memory_fit.hpp"
#include "sim/simulation_child.hpp"
#include "traces/chrome_trace.hpp"
#include "traces/trace_io.hpp"

namespace ragged::cli {
namespace {

struct SimulateOptions {
  ScenarioOptions scenario;
  std::string trace_path;
  std::string chrome_path;
  std::string sweep;
  std::string sweep_global_batch;  // --sweep-global-batch: tokens a step keeps at every GPU count
  std::string mode = "auto";
  std::string calibration;
  GoodputOptions goodput;
  bool no_gpu_sharing = false;
  bool no_host_path = false;
  bool breakdown = false;
  bool json = false;
  bool fail_on_oom = false;
  bool sensitivity = false;
};

// "gpus=64,256,1024" -> {64, 256, 1024}.
std::vector<int64_t> parse_sweep(const std::string& text, std::ostream& notes) {
  const std::string key = "gpus=";
  if (text.rfind(key, 0) != 0) throw InputError(fmt::format("--sweep '{}': write gpus=N1,N2,... (e.g. gpus=64,256,1024)", text));
  return parse_count_list(text.substr(key.size()), "--sweep", "GPU count", 1, INT64_MAX, &notes);
}

// --sweep-global-batch: the gradient accumulation steps that keep `tokens`
// a step at this GPU count (planner::accumulation_for_global_batch, as the
// dashboard's Sweep tab does).
void keep_global_batch(ScenarioOptions& at, const std::string& text) {
  const double tokens = parse_token_count(text, "--sweep-global-batch");
  const planner::ResolvedScenario r = at.resolve().front();
  const int64_t steps = planner::accumulation_for_global_batch(r.scenario(), tokens, "--sweep-global-batch " + text);
  at.sets.push_back(fmt::format("training.gradient_accumulation_steps={}", steps));
}

std::string label_of(const planner::ResolvedScenario& r) {
  const auto& s = r.scenario();
  const auto& t = s.training();
  const std::string mesh = planner::mesh_text(planner::mesh_of(t));
  return fmt::format("{}: {} on {} x {}, {}, {}shard group {}{}, batch {} x {} x {}", s.name(), r.model.name,
                     scenarios::total_gpus(s), s.cluster().gpu().preset(), scenarios::strategy_name(t.strategy()),
                     mesh.empty() ? "" : "mesh " + mesh + ", ", t.shard_group_size(),
                     t.replicate_group_size() > 1 ? fmt::format(" x {} replicas", t.replicate_group_size()) : "",
                     t.micro_batch_size(), t.sequence_length(), t.gradient_accumulation_steps());
}

sim::SimulationOptions sim_options_of(const SimulateOptions& options) {
  sim::SimulationOptions sim_options;
  sim_options.mode = sim::parse_mode(options.mode);
  if (!options.calibration.empty()) sim_options.calibration = options.calibration;
  sim_options.share_gpu = !options.no_gpu_sharing;
  sim_options.host_issue = !options.no_host_path;
  return sim_options;
}

SimulationReport simulate_one(const planner::ResolvedScenario& resolved, const SimulateOptions& options) {
  sim::SimulationOptions sim_options = sim_options_of(options);
  const std::string label = label_of(resolved);
  auto bar = std::make_shared<ProgressBar>(resolved.scenario().name() + " " +
                                           scenarios::strategy_name(resolved.scenario().training().strategy()));
  if (ProgressBar::wanted()) sim_options.progress = [bar](double fraction) { bar->update(fraction); };
  sim::ChildUsage usage;
  sim::SimulationResult result = sim::simulate_in_child(resolved, sim_options, {}, &usage);
  bar->finish();
  SimulationReport report{label, std::move(result), usage.max_rss_bytes, usage.added_rss_bytes(), resolved.scenario(), {}, {}, {}};
  const traces::Summary& summary = report.result.trace.summary();
  report.band = sim::prediction_band(resolved, summary, sim_options_of(options));
  if (options.sensitivity) {
    auto inputs_bar = std::make_shared<ProgressBar>("sensitivity");
    std::function<void(size_t, size_t)> progress;
    if (ProgressBar::wanted()) {
      progress = [inputs_bar](size_t done, size_t total) { inputs_bar->update(static_cast<double>(done) / total); };
    }
    report.sensitivity = sim::sensitivity(resolved, {summary.tokens_per_s_per_gpu(), summary.peak_reserved_bytes(), summary.oom()},
                                          sim_options_of(options), {}, {}, progress);
    inputs_bar->finish();
  }
  return report;
}

void run(const SimulateOptions& options, Context& context) {
  std::vector<planner::ResolvedScenario> configs;
  const bool sweeping = !options.sweep.empty();
  if (!options.sweep_global_batch.empty() && !sweeping) {
    throw InputError("--sweep-global-batch keeps the global batch of a --sweep: add --sweep gpus=N1,N2,...");
  }
  if (sweeping) {
    for (int64_t gpus : parse_sweep(options.sweep, context.err)) {
      ScenarioOptions at = options.scenario;
      at.gpus = gpus;
      if (!options.sweep_global_batch.empty()) keep_global_batch(at, options.sweep_global_batch);
      for (auto& r : at.resolve()) configs.push_back(std::move(r));
    }
  } else {
    configs = options.scenario.resolve();
  }
  options.scenario.warn_about_import(context.err);
  options.goodput.apply(configs);
  if ((!options.trace_path.empty() || !options.chrome_path.empty() || options.breakdown) && configs.size() != 1) {
    throw InputError(
        "--trace, --chrome-trace and --breakdown describe one simulation: drop --strategy all / --sweep, or pick one");
  }
  // Before the simulation: a path it cannot write is said now, not after minutes.
  for (const std::string& path : {options.trace_path, options.chrome_path}) {
    if (!path.empty()) check_output_target(path);
  }
  std::vector<SimulationReport> reports;
  std::vector<GoodputReport> goodputs;
  for (const auto& config : configs) {
    reports.push_back(simulate_one(config, options));
    if (options.goodput.requested()) goodputs.push_back(goodput_report(config, reports.back()));
  }
  std::vector<sim::UnitComputeParts> breakdown;
  if (options.breakdown) breakdown = sim::compute_breakdown(configs.front(), sim_options_of(options));
  if (!options.trace_path.empty()) traces::write_trace(reports.front().result.trace, options.trace_path);
  if (!options.chrome_path.empty()) traces::write_chrome_trace(reports.front().result.trace, options.chrome_path);

  if (options.json) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < reports.size(); ++i) {
      out.push_back(simulation_to_json(reports[i]));
      if (!goodputs.empty()) out.back()["goodput"] = goodput_to_json(goodputs[i]);
    }
    if (options.breakdown) out.front()["compute_breakdown"] = compute_breakdown_to_json(breakdown);
    context.out << (reports.size() == 1 ? out.front() : out).dump(2) << '\n';
  } else if (sweeping) {
    print_sweep(reports, context.out);
  } else if (reports.size() > 1) {
    print_simulation_comparison(reports, context.out);
  } else {
    SimulationReport& report = reports.front();
    if (report.result.trace.summary().oom()) {
      report.oom_advice = OutOfMemoryAdvice{sim::memory_parts_at_peak(configs.front()),
                                            sim::find_memory_fixes(configs.front(), sim_options_of(options))};
    }
    print_simulation(report, context.out);
    if (options.breakdown) print_compute_breakdown(breakdown, context.out);
  }
  if (!options.json) {
    for (const auto& g : goodputs) print_goodput(g, context.out << '\n');
  }
  const bool oom = std::any_of(reports.begin(), reports.end(),
                               [](const SimulationReport& r) { return r.result.trace.summary().oom(); });
  if (options.fail_on_oom && oom) throw QuietExit{kExitOutOfMemory};
}

}  // namespace

void add_simulate_command(CLI::App& app, Context& context) {
  auto options = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand("simulate", "Predict step time, throughput, MFU and memory with the SimGrid simulator");
  options->scenario.add_to(cmd, true);
  options->scenario.add_optimizer_to(cmd);
  options->scenario.add_whatif_to(cmd);
  cmd->add_option("--trace", options->trace_path, "Write the predicted trace (.pb, .json or .textproto)");
  cmd->add_option("--chrome-trace", options->chrome_path, "Write a Chrome trace JSON that Perfetto opens");
  cmd->add_option("--sweep", options->sweep,
                  "Scaling table over GPU counts: gpus=64,256,1024 (each GPU keeps its micro-batch: the global batch "
                  "grows with the GPUs)");
  cmd->add_option("--sweep-global-batch", options->sweep_global_batch,
                  "Keep the sweep's global batch at this many tokens (4Mi): the accumulation steps follow the GPUs");
  cmd->add_option("--mode", options->mode, "Network simulation: auto (full up to 64 nodes, else symmetric), full, symmetric, steps")
      ->capture_default_str();
  cmd->add_option("--calibration", options->calibration, "Compute calibration file measured by `ragged run` on a GPU");
  cmd->add_flag("--no-gpu-sharing", options->no_gpu_sharing,
               "Leave out NCCL's kernels taking SMs and HBM bandwidth from concurrent work (docs/SIMULATOR.md 6b)");
  cmd->add_flag("--no-host-path", options->no_host_path,
                "Leave out the CPU thread that issues the ops (docs/SIMULATOR.md, the CPU issue path)");
  cmd->add_flag("--breakdown", options->breakdown,
                "Where each unit's compute time goes: GEMMs, attention, element-wise traffic and launches, with "
                "their rates (before sharing the GPU with collectives)");
  options->goodput.add_to(cmd);
  cmd->add_flag("--sensitivity", options->sensitivity,
                "Re-simulate the scenario with each input whose plausible range moves the prediction (NICs, their "
                "bandwidth, the GPU's power limit and memory variant, kernels, the allocator, a mixture of experts' "
                "router load) at both ends, largest effect on tokens/s first, then on peak memory");
  cmd->add_flag("--json", options->json, "Print JSON (an array for several simulations)");
  cmd->add_flag("--fail-on-oom", options->fail_on_oom,
                fmt::format("Exit with code {} (after the report) when a simulation predicts out of memory",
                            kExitOutOfMemory));
  cmd->callback([&context, options] { run(*options, context); });
}

}  // namespace ragged::cli
