#include "planner/goodput.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/units.hpp"

namespace ragged::planner {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The regimes where the model says the job barely advances, in words.
std::vector<std::string> warnings_for(const GoodputEstimate& e, bool async) {
  std::vector<std::string> out;
  if (std::isinf(e.job_mtbf_s)) return out;
  const std::string mtbf = format_seconds(e.job_mtbf_s);
  if (e.checkpoint.pause_s >= e.job_mtbf_s) {
    out.push_back(fmt::format("a checkpoint pauses training for {}, longer than the job's mean time between interruptions ({}): "
                              "most intervals end in an interruption; use asynchronous checkpoints, faster storage or fewer GPUs",
                              format_seconds(e.checkpoint.pause_s), mtbf));
  }
  if (async && e.checkpoint.write_s >= e.job_mtbf_s) {
    out.push_back(fmt::format("the background write of a checkpoint takes {}, longer than the job's mean time between "
                              "interruptions ({}): most checkpoints are lost before they are saved; use faster storage",
                              format_seconds(e.checkpoint.write_s), mtbf));
  }
  if (e.restart_s >= e.job_mtbf_s) {
    out.push_back(fmt::format("a restart takes {}, longer than the job's mean time between interruptions ({}): the job "
                              "spends most of its time restarting; shorten the relaunch or use fewer GPUs",
                              format_seconds(e.restart_s), mtbf));
  }
  return out;
}

}  // namespace

double young_interval(double pause_s, double mtbf_s) { return std::sqrt(2 * pause_s * mtbf_s); }

double daly_interval(double pause_s, double mtbf_s) {
  if (pause_s >= 2 * mtbf_s) return mtbf_s;
  const double ratio = pause_s / (2 * mtbf_s);
  return young_interval(pause_s, mtbf_s) * (1 + std::sqrt(ratio) / 3 + ratio / 9) - pause_s;
}

double daly_goodput(double interval_s, double pause_s, double restart_s, double mtbf_s) {
  if (std::isinf(mtbf_s)) return std::isinf(interval_s) ? 1.0 : interval_s / (interval_s + pause_s);
  if (std::isinf(interval_s)) return 0.0;  // interruptions and never a checkpoint: no run of any length finishes
  // expm1 keeps the ratio exact when the cycle is a sliver of the MTBF.
  const double wall_per_interval = mtbf_s * std::exp(restart_s / mtbf_s) * std::expm1((interval_s + pause_s) / mtbf_s);
  return interval_s / wall_per_interval;
}

GoodputEstimate estimate_goodput(const GoodputInputs& in) {
  RAGGED_ASSERT(in.step_time_s > 0, "the goodput needs a step time");
  const GoodputSettings& s = in.settings;
  GoodputEstimate e;
  const double interruptions_per_s = s.interruptions_per_gpu_hour * static_cast<double>(in.cluster.gpus) / 3600;
  e.job_mtbf_s = interruptions_per_s > 0 ? 1 / interruptions_per_s : kInfinity;
  e.checkpoint = checkpoint_cost(in.checkpoint_bytes_per_gpu, in.cluster, s);
  const double pause = e.checkpoint.pause_s;
  e.restart_s = s.relaunch_s + e.checkpoint.load_s;
  // An asynchronous checkpoint is saved only when its background write
  // ends: an interruption in the first write_s of an interval (chance
  // write_s / τ) also loses the interval before (τ), write_s on average.
  const double unsaved_s = s.async_checkpoint ? e.checkpoint.write_s : 0;
  e.young_interval_s = std::isinf(e.job_mtbf_s) ? kInfinity : young_interval(pause, e.job_mtbf_s);
  e.daly_interval_s = std::isinf(e.job_mtbf_s) ? kInfinity : daly_interval(pause, e.job_mtbf_s);

  const double wanted = s.checkpoint_interval_s > 0 ? s.checkpoint_interval_s : e.daly_interval_s;
  if (std::isinf(wanted)) {
    e.interval_s = kInfinity;  // no interruptions and no interval asked: nothing to checkpoint for
  } else {
    // Checkpoints fall between steps; an asynchronous one waits for the previous write.
    int64_t steps = std::max<int64_t>(1, std::llround(wanted / in.step_time_s));
    if (s.async_checkpoint) steps = std::max(steps, static_cast<int64_t>(std::ceil(e.checkpoint.write_s / in.step_time_s)));
    e.interval_steps = steps;
    e.interval_s = static_cast<double>(steps) * in.step_time_s;
  }
  e.lost_work_s = std::isinf(e.interval_s) ? 0 : (e.interval_s + pause) / 2 + unsaved_s;
  e.goodput = daly_goodput(e.interval_s, pause, e.restart_s + unsaved_s, e.job_mtbf_s);
  e.effective_tokens_per_s_per_gpu = e.goodput * in.tokens_per_s_per_gpu;
  if (s.train_tokens > 0) {
    const double tokens_per_s = e.effective_tokens_per_s_per_gpu * static_cast<double>(in.cluster.gpus);
    e.days_to_train = tokens_per_s > 0 ? s.train_tokens / tokens_per_s / 86400 : kInfinity;
  }
  e.warnings = warnings_for(e, s.async_checkpoint);
  return e;
}

GoodputEstimate estimate_goodput(const scenarios::Scenario& scenario, double checkpoint_bytes_per_gpu,
                                 double step_time_s, double tokens_per_s_per_gpu) {
  GoodputInputs inputs;
  inputs.cluster = cluster_shape(scenario);
  inputs.checkpoint_bytes_per_gpu = checkpoint_bytes_per_gpu;
  inputs.step_time_s = step_time_s;
  inputs.tokens_per_s_per_gpu = tokens_per_s_per_gpu;
  inputs.settings = goodput_settings(scenario.goodput());
  return estimate_goodput(inputs);
}

GoodputEstimate estimate_goodput(const ResolvedScenario& resolved, double step_time_s, double tokens_per_s_per_gpu) {
  return estimate_goodput(resolved.scenario(), checkpoint_bytes_per_gpu(resolved), step_time_s, tokens_per_s_per_gpu);
}

}  // namespace ragged::planner
