#include "gui/models/whatif_figures.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/units.hpp"

namespace ragged::gui {
namespace {

std::string percent(double fraction, int decimals) { return fmt::format("{:.{}f}%", 100 * fraction, decimals); }

std::string step_rows_text(const sim::WhatIfSummary& w, WhatIfFigure figure) {
  switch (figure) {
    case WhatIfFigure::kChanged: return w.changed.empty() ? "nothing: a healthy cluster" : w.changed;
    case WhatIfFigure::kStep: return format_seconds(w.step_seconds);
    case WhatIfFigure::kHealthyStep: return w.healthy_step_seconds > 0 ? format_seconds(w.healthy_step_seconds) : "not simulated";
    case WhatIfFigure::kSlowdown:
      return w.healthy_step_seconds > 0 ? fmt::format("{:.2f}x ({:+.1f}%)", w.slowdown(), 100 * (w.slowdown() - 1)) : "-";
    case WhatIfFigure::kCriticalRank: return w.has_critical ? sim::describe_critical(w) : "-";
    case WhatIfFigure::kWaitedOn: return w.has_critical ? sim::describe_wait(w) : "-";
    default: return {};
  }
}

double step_rows_value(const sim::WhatIfSummary& w, WhatIfFigure figure) {
  switch (figure) {
    case WhatIfFigure::kStep: return w.step_seconds;
    case WhatIfFigure::kHealthyStep: return w.healthy_step_seconds;
    case WhatIfFigure::kSlowdown: return w.slowdown();
    case WhatIfFigure::kCriticalRank: return static_cast<double>(w.critical_rank);
    case WhatIfFigure::kWaitedOn: return w.exposed_seconds;
    default: return 0;
  }
}

WhatIfRow goodput_row(const WhatIfFigures& f, WhatIfFigure figure) {
  const planner::GoodputEstimate& e = f.goodput;
  switch (figure) {
    case WhatIfFigure::kGoodput: return {"goodput", percent(e.goodput, 1) + " of the wall time trains", e.goodput};
    case WhatIfFigure::kMtbf:
      return {"job MTBF",
              std::isinf(e.job_mtbf_s) ? "no interruptions expected"
                                       : fmt::format("{} ({:.3g} interruptions per GPU-hour)", format_duration(e.job_mtbf_s),
                                                     f.settings.interruptions_per_gpu_hour),
              e.job_mtbf_s};
    case WhatIfFigure::kCheckpoint:
      return {"checkpoint",
              fmt::format("{} ({} per GPU) written in {}; training pauses {}{}", format_bytes(e.checkpoint.total_bytes),
                          format_bytes(static_cast<double>(e.checkpoint.bytes_per_gpu)), format_duration(e.checkpoint.write_s),
                          format_duration(e.checkpoint.pause_s), f.settings.async_checkpoint ? " (asynchronous)" : ""),
              e.checkpoint.write_s};
    case WhatIfFigure::kInterval:
      return {"checkpoint interval",
              e.interval_steps == 0 ? "none: no interruptions expected"
                                    : fmt::format("every {} steps = {}", format_integer(e.interval_steps), format_duration(e.interval_s)),
              e.interval_s};
    case WhatIfFigure::kTokensPerGpu:
      return {"effective tokens/s per GPU",
              fmt::format("{} of {}", format_rounded(e.effective_tokens_per_s_per_gpu),
                          format_rounded(f.tokens_per_s_per_gpu)),
              e.effective_tokens_per_s_per_gpu};
    case WhatIfFigure::kDaysToTrain:
      return {"days to train",
              f.settings.train_tokens > 0 ? fmt::format("{:.1f} days for {} tokens", e.days_to_train, format_count(f.settings.train_tokens))
                                          : "set the tokens to train",
              f.settings.train_tokens > 0 ? e.days_to_train : 0};
    default: return {};
  }
}

}  // namespace

WhatIfFigures whatif_figures(const planner::ResolvedScenario& resolved, const traces::Trace& trace,
                             const sim::StragglerReport* report) {
  const traces::Summary& s = trace.summary();
  WhatIfFigures f;
  f.whatif = sim::summarize_whatif(resolved.scenario(), report ? *report : sim::StragglerReport{}, s.step_time_s());
  f.tokens_per_s_per_gpu = s.tokens_per_s_per_gpu();
  f.settings = planner::goodput_settings(resolved.scenario().goodput());
  f.goodput = planner::estimate_goodput(resolved, s.step_time_s(), s.tokens_per_s_per_gpu());
  return f;
}

std::vector<WhatIfRow> whatif_rows(const WhatIfFigures& figures) {
  static const char* const kStepNames[] = {"what-if", "step time", "healthy cluster's step", "slowdown", "critical rank",
                                           "it waited on"};
  std::vector<WhatIfRow> rows;
  for (int i = 0; i < static_cast<int>(WhatIfFigure::kCount); ++i) {
    const auto figure = static_cast<WhatIfFigure>(i);
    if (figure < WhatIfFigure::kGoodput) {
      rows.push_back({kStepNames[i], step_rows_text(figures.whatif, figure), step_rows_value(figures.whatif, figure)});
    } else {
      rows.push_back(goodput_row(figures, figure));
    }
  }
  return rows;
}

}  // namespace ragged::gui
