#pragma once
// Who set the pace of a step on a cluster that is not uniform, read off what
// the collectives did (docs/SIMULATOR.md section 10): when each simulated rank
// reached each collective, when its flows started (the last arrival) and
// ended, and whose link carried the flow that ended last.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/program.hpp"
#include "sim/cluster_health.hpp"
#include "sim/collective_flows.hpp"

namespace ragged::sim {

// What one collective did.
struct CollectiveRecord {
  uint32_t op = 0;
  planner::OpKind kind = planner::OpKind::kAllGather;
  std::vector<double> arrivals;  // per simulated rank
  double start = 0;              // the flows start: the last arrival
  double end = 0;
  Endpoint bottleneck;           // of the flow that ended last, the end with the slower NICs
};

// One simulated rank's step.
struct RankRun {
  SimulatedRank rank;
  double step_seconds = 0;     // when its last op ended
  double exposed_seconds = 0;  // its compute stream waiting on other streams
  double pipeline_wait_seconds = 0;  // of which waiting for a receive from another stage
  int64_t peak_reserved = 0;
  int64_t peak_allocated = 0;
};

// Waits are wall time: the union of the intervals (collectives on different
// streams wait at the same time).
struct RankFigures {
  RankRun run;
  double waited_seconds = 0;   // time it had a collective waiting for a rank that arrived later
  double imposed_seconds = 0;  // time some rank waited at a collective it reached last
  int last_arrivals = 0;       // collectives it reached last (and someone waited)
};

// The link whose flow ended last in the collectives that took the most time
// (summed over them).
struct BottleneckLink {
  Endpoint endpoint;
  double rate = 1.0;     // its fraction of the healthy bandwidth
  int collectives = 0;   // in how many collectives its flow ended last
};

struct StragglerReport {
  std::vector<RankFigures> ranks;          // the reported rank first
  int critical = 0;                        // index in `ranks`: the rank the others waited for most
  std::map<std::string, double> waited_by_kind;  // the reported rank's waited_seconds, by op kind name
  BottleneckLink bottleneck;
  int collectives = 0;  // the simulated ranks met at (all of them at every one with a single simulated rank)
  double healthy_step_seconds = 0;         // the same scenario without its what-if (0: not simulated)
};

StragglerReport analyse_stragglers(const std::vector<RankRun>& ranks, const std::vector<CollectiveRecord>& collectives,
                                   const ClusterHealth& health);

// "node 37's NICs", "GPU 3 of node 0's NVLink".
std::string describe_link(const Endpoint& endpoint);

// The report as JSON (the child's answer, `ragged simulate --json`), and back.
nlohmann::json straggler_to_json(const StragglerReport& report);
StragglerReport straggler_from_json(const nlohmann::json& json);

}  // namespace ragged::sim
