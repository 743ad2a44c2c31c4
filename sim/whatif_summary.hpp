#pragma once
// What a what-if did to a step, in the figures `ragged simulate` prints and
// the dashboard's What-if tab shows (docs/SIMULATOR.md section 10): what was
// changed, the step against the healthy cluster's, the critical rank and
// what it waited on. Read off the StragglerReport of a full-mode simulation.

#include <cstdint>
#include <string>

#include "scenarios/scenario.pb.h"
#include "sim/straggler_report.hpp"

namespace ragged::sim {

struct WhatIfSummary {
  std::string changed;               // "1 slow GPU at 50% of the compute rate (rank 3), ..."
  double step_seconds = 0;           // this cluster's step
  double healthy_step_seconds = 0;   // the same scenario without its what-if; 0: not simulated
  bool has_critical = false;         // false: no rank was reported (no what-if)
  int64_t critical_rank = 0;
  std::string critical_where;        // "rank 4021 (node 502, GPU 5)"
  double critical_compute_rate = 1;  // fraction of the healthy compute rate
  int last_arrivals = 0;             // collectives the critical rank reached last (someone waited)
  int collectives = 0;
  double exposed_seconds = 0;        // the critical rank's exposed communication
  std::string bottleneck_link;       // describe_link of the link that ended last in the most collective time
  double bottleneck_rate = 1;        // its fraction of the healthy bandwidth
  int bottleneck_collectives = 0;    // in how many collectives

  // step / healthy step; 0 when the healthy cluster was not simulated.
  double slowdown() const { return healthy_step_seconds > 0 ? step_seconds / healthy_step_seconds : 0; }
};

// "1 slow GPU at 50% of the compute rate (rank 3), compute jitter 5% sd (normal)".
std::string describe_whatif(const scenarios::Scenario& scenario);

// "rank 4021 (node 502, GPU 5)".
std::string describe_rank(int64_t rank, int64_t gpus_per_node);

// "rank 3 (node 0, GPU 3) at 50% of its compute rate: the last to reach 20 of 40 collectives".
std::string describe_critical(const WhatIfSummary& summary);
// "1.2 ms of exposed communication; the slowest flow of 12 of 40 collectives crossed node 3's NICs (at 50%)".
std::string describe_wait(const WhatIfSummary& summary);

WhatIfSummary summarize_whatif(const scenarios::Scenario& scenario, const StragglerReport& report, double step_seconds);

}  // namespace ragged::sim
