#include "cli/whatif_report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/units.hpp"
#include "sim/whatif_summary.hpp"

namespace ragged::cli {

void print_whatif(const scenarios::Scenario& scenario, const sim::SimulationResult& result, std::ostream& out) {
  const sim::StragglerReport& r = result.stats.whatif;
  const sim::WhatIfSummary s = sim::summarize_whatif(scenario, r, result.trace.summary().step_time_s());
  out << fmt::format("  what-if            {}\n", s.changed);
  if (s.healthy_step_seconds > 0) {
    out << fmt::format("  healthy cluster    step {}: this one is {:.2f}x ({:+.1f}%)\n", format_seconds(s.healthy_step_seconds),
                       s.slowdown(), 100 * (s.slowdown() - 1));
  }
  if (!s.has_critical) return;
  out << fmt::format("  critical rank      {}\n", sim::describe_critical(s));
  out << fmt::format("  it waited on       {}\n", sim::describe_wait(s));
  if (r.critical != 0) {
    const sim::RankFigures& reported = r.ranks.front();
    std::vector<std::string> kinds;
    for (const auto& [kind, seconds] : r.waited_by_kind) {
      std::string name = kind;
      std::replace(name.begin(), name.end(), '_', '-');
      kinds.push_back(fmt::format("{} {}", name, format_seconds(seconds)));
    }
    out << fmt::format("  the others         rank {} idled {} on collectives (exposed); its collectives waited for the "
                       "critical rank during {} ({})\n",
                       reported.run.rank.rank, format_seconds(reported.run.exposed_seconds),
                       format_seconds(reported.waited_seconds), fmt::join(kinds, ", "));
  }
}

}  // namespace ragged::cli
