#include "cli/whatif_report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/units.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/cluster_health.hpp"

namespace ragged::cli {
namespace {

std::string percent(double fraction) { return fmt::format("{:.0f}%", 100 * fraction); }

// "rank 4021 (node 502, GPU 5)"
std::string where(int64_t rank, int64_t gpus_per_node) {
  return fmt::format("rank {} (node {}, GPU {})", rank, rank / gpus_per_node, rank % gpus_per_node);
}

// At most `shown` of a list, then how many more.
std::string listed(const std::vector<int64_t>& items, size_t shown = 6) {
  std::vector<int64_t> head(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(std::min(shown, items.size())));
  std::string text = fmt::format("{}", fmt::join(head, ", "));
  if (items.size() > shown) text += fmt::format(" and {} more", items.size() - shown);
  return text;
}

std::string what_changed(const scenarios::Scenario& scenario) {
  const scenarios::WhatIf& w = scenario.whatif();
  const sim::ClusterHealth health(w, scenarios::total_gpus(scenario), scenario.cluster().nodes());
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

}  // namespace

void print_whatif(const scenarios::Scenario& scenario, const sim::SimulationResult& result, std::ostream& out) {
  const sim::StragglerReport& r = result.stats.whatif;
  const int64_t gpn = scenario.cluster().gpus_per_node();
  const double step = result.trace.summary().step_time_s();
  out << fmt::format("  what-if            {}\n", what_changed(scenario));
  if (r.healthy_step_seconds > 0) {
    out << fmt::format("  healthy cluster    step {}: this one is {:.2f}x ({:+.1f}%)\n", format_seconds(r.healthy_step_seconds),
                       step / r.healthy_step_seconds, 100 * (step / r.healthy_step_seconds - 1));
  }
  if (r.ranks.empty()) return;
  const sim::RankFigures& critical = r.ranks[static_cast<size_t>(r.critical)];
  if (critical.last_arrivals > 0) {
    out << fmt::format("  critical rank      {} at {} of its compute rate: the last to reach {} of {} collectives\n",
                       where(critical.run.rank.rank, gpn), percent(critical.run.rank.compute_rate), critical.last_arrivals,
                       r.collectives);
  } else {
    out << fmt::format("  critical rank      {}: no simulated rank waited for another\n", where(critical.run.rank.rank, gpn));
  }
  const sim::BottleneckLink& link = r.bottleneck;
  out << fmt::format("  it waited on       {} of exposed communication; the slowest flow of {} of {} collectives crossed {}{}\n",
                     format_seconds(critical.run.exposed_seconds), link.collectives, r.collectives,
                     sim::describe_link(link.endpoint), link.rate < 1 ? fmt::format(" (at {})", percent(link.rate)) : "");
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
