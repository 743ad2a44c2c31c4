#include "sim/whatif_summary.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/units.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/cluster_health.hpp"

namespace ragged::sim {
namespace {

std::string percent(double fraction) { return fmt::format("{:.0f}%", 100 * fraction); }

// At most `shown` of a list, then how many more.
std::string listed(const std::vector<int64_t>& items, size_t shown = 6) {
  std::vector<int64_t> head(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(std::min(shown, items.size())));
  std::string text = fmt::format("{}", fmt::join(head, ", "));
  if (items.size() > shown) text += fmt::format(" and {} more", items.size() - shown);
  return text;
}

}  // namespace

std::string describe_whatif(const scenarios::Scenario& scenario) {
  const scenarios::WhatIf& w = scenario.whatif();
  const ClusterHealth health(w, scenarios::total_gpus(scenario), scenario.cluster().nodes());
  std::vector<std::string> parts;
  if (w.has_slow_gpus()) {
    const auto& slow = health.slow_gpus();
    parts.push_back(fmt::format("{} slow GPU{} at {} of the compute rate (rank{} {})", slow.size(), slow.size() == 1 ? "" : "s",
                                percent(w.slow_gpus().fraction()), slow.size() == 1 ? "" : "s", listed(slow)));
  }
  if (w.has_slow_links()) {
    const auto slow = health.slow_nodes();
    parts.push_back(fmt::format("{} {} NICs at {} of their bandwidth (node{} {})", slow.size(),
                                slow.size() == 1 ? "node's" : "nodes'", percent(w.slow_links().fraction()),
                                slow.size() == 1 ? "" : "s", listed(slow)));
  }
  if (w.jitter().relative_stddev() > 0) {
    parts.push_back(fmt::format("compute jitter {} sd ({})", percent(w.jitter().relative_stddev()),
                                w.jitter().distribution() == scenarios::LOGNORMAL ? "log-normal" : "normal"));
  }
  if (w.has_spine_oversubscription()) parts.push_back(fmt::format("spine {:g}:1", w.spine_oversubscription()));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string describe_rank(int64_t rank, int64_t gpus_per_node) {
  return fmt::format("rank {} (node {}, GPU {})", rank, rank / gpus_per_node, rank % gpus_per_node);
}

std::string describe_critical(const WhatIfSummary& s) {
  if (s.last_arrivals == 0) return s.critical_where + ": no simulated rank waited for another";
  return fmt::format("{} at {} of its compute rate: the last to reach {} of {} collectives", s.critical_where,
                     percent(s.critical_compute_rate), s.last_arrivals, s.collectives);
}

std::string describe_wait(const WhatIfSummary& s) {
  return fmt::format("{} of exposed communication; the slowest flow of {} of {} collectives crossed {}{}",
                     format_seconds(s.exposed_seconds), s.bottleneck_collectives, s.collectives, s.bottleneck_link,
                     s.bottleneck_rate < 1 ? fmt::format(" (at {})", percent(s.bottleneck_rate)) : "");
}

WhatIfSummary summarize_whatif(const scenarios::Scenario& scenario, const StragglerReport& report, double step_seconds) {
  WhatIfSummary s;
  s.changed = describe_whatif(scenario);
  s.step_seconds = step_seconds;
  s.healthy_step_seconds = report.healthy_step_seconds;
  s.collectives = report.collectives;
  s.bottleneck_link = describe_link(report.bottleneck.endpoint);
  s.bottleneck_rate = report.bottleneck.rate;
  s.bottleneck_collectives = report.bottleneck.collectives;
  if (report.ranks.empty()) return s;
  const RankFigures& critical = report.ranks[static_cast<size_t>(report.critical)];
  s.has_critical = true;
  s.critical_rank = critical.run.rank.rank;
  s.critical_where = describe_rank(s.critical_rank, scenario.cluster().gpus_per_node());
  s.critical_compute_rate = critical.run.rank.compute_rate;
  s.last_arrivals = critical.last_arrivals;
  s.exposed_seconds = critical.run.exposed_seconds;
  return s;
}

}  // namespace ragged::sim
