#include "sim/straggler_report.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace ragged::sim {

namespace {

// Intervals of simulated time; their union's length (waits on concurrent
// streams overlap: a sum would count the same wall time twice).
class Intervals {
 public:
  void add(double from, double to) {
    if (to > from) spans_.emplace_back(from, to);
  }
  double covered() const {
    std::vector<std::pair<double, double>> spans = spans_;
    std::sort(spans.begin(), spans.end());
    double total = 0, end = -1;
    for (const auto& [from, to] : spans) {
      const double start = std::max(from, end);
      if (to > start) total += to - start;
      end = std::max(end, to);
    }
    return total;
  }

 private:
  std::vector<std::pair<double, double>> spans_;
};

}  // namespace

StragglerReport analyse_stragglers(const std::vector<RankRun>& ranks, const std::vector<CollectiveRecord>& collectives,
                                   const ClusterHealth& health) {
  StragglerReport report;
  for (const RankRun& r : ranks) report.ranks.push_back({r, 0, 0, 0});
  std::vector<Intervals> waited(ranks.size()), imposed(ranks.size());
  std::map<std::string, Intervals> waited_by_kind;
  // Per endpoint: the collectives whose slowest flow ended there, and their time.
  std::map<std::pair<int64_t, int>, std::pair<int, double>> last_flows;
  for (const CollectiveRecord& c : collectives) {
    // A collective of a group only one simulated rank is in (its tp or cp
    // group) is that rank's alone: the others neither met nor waited there.
    if (c.arrivals.size() != ranks.size()) continue;
    ++report.collectives;
    auto& [count, seconds] = last_flows[{c.bottleneck.node, c.bottleneck.local}];
    ++count;
    seconds += c.end - c.start;
    if (ranks.size() < 2) continue;
    const auto last = std::max_element(c.arrivals.begin(), c.arrivals.end());
    const double first = *std::min_element(c.arrivals.begin(), c.arrivals.end());
    if (*last <= first) continue;  // they arrived together: no one waited
    const auto late = static_cast<size_t>(last - c.arrivals.begin());
    imposed[late].add(first, *last);
    ++report.ranks[late].last_arrivals;
    for (size_t r = 0; r < ranks.size(); ++r) waited[r].add(c.arrivals[r], c.start);
    waited_by_kind[std::string(planner::op_kind_name(c.kind))].add(c.arrivals[0], c.start);
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    report.ranks[r].waited_seconds = waited[r].covered();
    report.ranks[r].imposed_seconds = imposed[r].covered();
    if (report.ranks[r].imposed_seconds > report.ranks[static_cast<size_t>(report.critical)].imposed_seconds) {
      report.critical = static_cast<int>(r);
    }
  }
  for (const auto& [kind, spans] : waited_by_kind) {
    if (spans.covered() > 0) report.waited_by_kind[kind] = spans.covered();
  }
  // The link that bounded the most collective time (a mesh's many short tp
  // collectives do not outvote FSDP's long ones).
  double most = -1;
  for (const auto& [endpoint, tally] : last_flows) {
    if (tally.second > most) {
      most = tally.second;
      report.bottleneck = {{endpoint.first, endpoint.second}, 1.0, tally.first};
    }
  }
  if (report.bottleneck.endpoint.local < 0) report.bottleneck.rate = health.nic_rate(report.bottleneck.endpoint.node);
  return report;
}

std::string describe_link(const Endpoint& e) {
  if (e.local < 0) return fmt::format("node {}'s NICs", e.node);
  return fmt::format("GPU {} of node {}'s NVLink", e.local, e.node);
}

nlohmann::json straggler_to_json(const StragglerReport& report) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankFigures& r : report.ranks) {
    ranks.push_back({{"rank", r.run.rank.rank},
                     {"compute_rate", r.run.rank.compute_rate},
                     {"step_s", r.run.step_seconds},
                     {"exposed_comm_s", r.run.exposed_seconds},
                     {"waited_s", r.waited_seconds},
                     {"others_waited_s", r.imposed_seconds},
                     {"last_arrivals", r.last_arrivals}});
  }
  return {{"ranks", ranks},
          {"critical", report.critical},
          {"waited_by_kind", report.waited_by_kind},
          {"bottleneck", {{"node", report.bottleneck.endpoint.node},
                          {"gpu", report.bottleneck.endpoint.local},
                          {"link", describe_link(report.bottleneck.endpoint)},
                          {"rate", report.bottleneck.rate},
                          {"collectives", report.bottleneck.collectives}}},
          {"collectives", report.collectives},
          {"healthy_step_s", report.healthy_step_seconds}};
}

StragglerReport straggler_from_json(const nlohmann::json& j) {
  StragglerReport report;
  for (const auto& r : j.at("ranks")) {
    RankFigures f;
    f.run.rank = {r.at("rank").get<int64_t>(), r.at("compute_rate").get<double>()};
    f.run.step_seconds = r.at("step_s");
    f.run.exposed_seconds = r.at("exposed_comm_s");
    f.waited_seconds = r.at("waited_s");
    f.imposed_seconds = r.at("others_waited_s");
    f.last_arrivals = r.at("last_arrivals");
    report.ranks.push_back(f);
  }
  report.critical = j.at("critical");
  report.waited_by_kind = j.at("waited_by_kind").get<std::map<std::string, double>>();
  const auto& b = j.at("bottleneck");
  report.bottleneck = {{b.at("node").get<int64_t>(), b.at("gpu").get<int>()}, b.at("rate").get<double>(),
                       b.at("collectives").get<int>()};
  report.collectives = j.at("collectives");
  report.healthy_step_seconds = j.at("healthy_step_s");
  return report;
}

}  // namespace ragged::sim
