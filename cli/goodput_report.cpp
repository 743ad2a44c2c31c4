#include "cli/goodput_report.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/units.hpp"

namespace ragged::cli {
namespace {

std::string percent(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

// Storage bandwidths in the decimal units their fields use.
std::string rate(double bytes_per_s) {
  if (bytes_per_s >= 1e12) return fmt::format("{:g} TB/s", bytes_per_s / 1e12);
  return fmt::format("{:g} GB/s", bytes_per_s / 1e9);
}

std::string checkpoint_line(const GoodputReport& r) {
  const planner::CheckpointCost& c = r.estimate.checkpoint;
  const std::string binds = c.aggregate_bound ? fmt::format("the cluster's {} storage cap binds", rate(r.settings.storage_aggregate_bytes_per_s))
                                              : fmt::format("{} per node", rate(r.settings.storage_bytes_per_s_per_node));
  const std::string pause = r.settings.async_checkpoint
                                ? fmt::format("asynchronous: training pauses {} for the copy to host memory", format_duration(c.pause_s))
                                : fmt::format("synchronous: training pauses {}", format_duration(c.pause_s));
  return fmt::format("{} ({} per GPU), written in {} ({}); {}", format_bytes(c.total_bytes),
                     format_bytes(static_cast<double>(c.bytes_per_gpu)), format_duration(c.write_s), binds, pause);
}

std::string interval_line(const GoodputReport& r) {
  const planner::GoodputEstimate& e = r.estimate;
  if (e.interval_steps == 0) return "none: no interruptions expected, no checkpoint needed";
  const std::string optimum = std::isinf(e.daly_interval_s)
                                  ? "no interruptions: no optimum"
                                  : fmt::format("Daly's optimum {}, Young's {}", format_duration(e.daly_interval_s),
                                                format_duration(e.young_interval_s));
  return fmt::format("every {} step{} = {} of training ({}{})", format_integer(e.interval_steps), e.interval_steps == 1 ? "" : "s",
                     format_duration(e.interval_s), r.settings.checkpoint_interval_s > 0 ? "as asked; " : "", optimum);
}

}  // namespace

GoodputReport goodput_report(const planner::ResolvedScenario& resolved, const SimulationReport& simulation) {
  const traces::Summary& s = simulation.result.trace.summary();
  GoodputReport r;
  const traces::Metadata& meta = simulation.result.trace.metadata();
  r.gpus = meta.world_size();
  r.label = fmt::format("{}, {}, {} GPUs", meta.scenario_name(), meta.strategy(), format_integer(r.gpus));
  r.tokens_per_s_per_gpu = s.tokens_per_s_per_gpu();
  r.settings = planner::goodput_settings(resolved.scenario().goodput());
  r.estimate = planner::estimate_goodput(resolved, s.step_time_s(), s.tokens_per_s_per_gpu());
  return r;
}

void print_goodput(const GoodputReport& r, std::ostream& out) {
  const planner::GoodputEstimate& e = r.estimate;
  out << fmt::format("{}: goodput under interruptions (docs/SIMULATOR.md section 9)\n", r.label);
  out << fmt::format("  goodput            {} of the wall time trains\n", percent(e.goodput));
  const std::string mtbf = std::isinf(e.job_mtbf_s) ? "none expected"
                                                     : fmt::format("one every {} on {} GPUs (the job's MTBF)",
                                                                   format_duration(e.job_mtbf_s), format_integer(r.gpus));
  out << fmt::format("  interruptions      {:.3g} per GPU-hour: {}\n", r.settings.interruptions_per_gpu_hour, mtbf);
  out << fmt::format("  checkpoint         {}\n", checkpoint_line(r));
  out << fmt::format("  interval           {}\n", interval_line(r));
  if (!std::isinf(e.job_mtbf_s)) {
    out << fmt::format("  per interruption   {} relaunch + {} checkpoint load + {} of work redone on average\n",
                       format_duration(r.settings.relaunch_s), format_duration(e.checkpoint.load_s), format_duration(e.lost_work_s));
  }
  out << fmt::format("  tokens/s per GPU   {} effective, of {} on a healthy cluster\n",
                     format_rounded(e.effective_tokens_per_s_per_gpu), format_rounded(r.tokens_per_s_per_gpu));
  if (r.settings.train_tokens > 0) {
    out << fmt::format("  time to train      {} for {} tokens\n", format_duration(e.days_to_train * 86400), format_count(r.settings.train_tokens));
  }
  for (const std::string& warning : e.warnings) out << "  warning: " << warning << '\n';
}

nlohmann::json goodput_to_json(const GoodputReport& r) {
  const planner::GoodputEstimate& e = r.estimate;
  const planner::CheckpointCost& c = e.checkpoint;
  // JSON has no infinity: an MTBF or interval that never ends is null.
  auto finite = [](double v) { return std::isinf(v) ? nlohmann::json() : nlohmann::json(v); };
  return {
      {"goodput", e.goodput},
      {"interruptions_per_gpu_hour", r.settings.interruptions_per_gpu_hour},
      {"job_mtbf_s", finite(e.job_mtbf_s)},
      {"checkpoint_bytes_per_gpu", c.bytes_per_gpu},
      {"checkpoint_bytes", c.total_bytes},
      {"checkpoint_write_s", c.write_s},
      {"checkpoint_load_s", c.load_s},
      {"checkpoint_pause_s", c.pause_s},
      {"async_checkpoint", r.settings.async_checkpoint},
      {"storage_aggregate_bound", c.aggregate_bound},
      {"restart_s", e.restart_s},
      {"lost_work_s", e.lost_work_s},
      {"young_interval_s", finite(e.young_interval_s)},
      {"daly_interval_s", finite(e.daly_interval_s)},
      {"interval_s", finite(e.interval_s)},
      {"interval_steps", e.interval_steps},
      {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
      {"effective_tokens_per_s_per_gpu", e.effective_tokens_per_s_per_gpu},
      {"train_tokens", r.settings.train_tokens},
      {"days_to_train", r.settings.train_tokens > 0 ? finite(e.days_to_train) : nlohmann::json()},
      {"warnings", e.warnings},
  };
}

}  // namespace ragged::cli
