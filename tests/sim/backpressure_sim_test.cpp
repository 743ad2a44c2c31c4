// Issue 9's communication-bound case simulated: GPT-OSS-120B on 256 H800
// with ragged. Its reduce-scatters are slower than its backward; before the
// backpressure rule every unit's unsharded gradients stayed alive (244 GiB
// predicted, OOM). The timeline must obey the Program's rule (the backward
// of a unit starts after the reduction before the previous one), the peak
// must stay near the planner's static peak, and the backward must be paced
// by the reduce-scatters.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "planner/layout_strategy.hpp"
#include "planner/memory_breakdown.hpp"
#include "planner/program_builder.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/child_process.hpp"
#include "sim/simulation.hpp"

namespace ragged::sim {
namespace {

constexpr const char* kScenario = "gpt-oss-120b-256xh800";

traces::Trace simulated_trace() {
  std::string bytes = run_in_child([] {
    SimulationOptions options;
    return simulate(planner::resolve_scenario(scenarios::load_scenario(kScenario)), options).trace.SerializeAsString();
  });
  traces::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(bytes));
  return trace;
}

int64_t static_peak() {
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::load_scenario(kScenario));
  const scenarios::Training& training = resolved.scenario().training();
  const planner::Plan plan = planner::plan_model(resolved.model, resolved.granularity, training.shard_group_size(),
                                                 *planner::make_strategy(training.strategy()));
  return planner::memory_breakdown(planner::build_program(planner::program_inputs(resolved, plan), 0)).peak_total();
}

struct Span {
  int64_t start = 0, end = 0;
};

TEST(Backpressure, CommunicationBoundGptOssStaysNearTheStaticPeak) {
  const traces::Trace trace = simulated_trace();
  const traces::Summary& s = trace.summary();
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const double predicted = static_cast<double>(s.peak_allocated_bytes());
  const double planned = static_cast<double>(static_peak());
  std::printf("%s: step %.3f s, peak allocated %.2f GiB (reserved %.2f), static peak %.2f GiB (%+.1f%%)\n", kScenario,
              s.step_time_s(), predicted / gib, static_cast<double>(s.peak_reserved_bytes()) / gib, planned / gib,
              100 * (predicted / planned - 1));
  EXPECT_FALSE(s.oom());
  EXPECT_NEAR(predicted, planned, 0.15 * planned) << "the unsharded gradients pile up";

  // The timeline obeys the rule, and the backward is paced by the
  // reduce-scatters: their stream is busy from the first to the last.
  std::map<int, Span> backward, reduce;  // by unit
  for (const traces::Event& e : trace.events()) {
    if (e.kind() == traces::COMPUTE_BWD) backward[e.unit()] = {e.start_ns(), e.end_ns()};
    if (e.kind() == traces::REDUCE_SCATTER) reduce[e.unit()] = {e.start_ns(), e.end_ns()};
  }
  ASSERT_GT(reduce.size(), 30u);
  int checked = 0;
  for (const auto& [unit, span] : backward) {
    const auto reduced = reduce.find(unit + 2);
    if (reduced == reduce.end()) continue;
    EXPECT_GE(span.start, reduced->second.end)
        << "backward of unit " << unit << " before unit " << unit + 2 << "'s reduction ended";
    ++checked;
  }
  EXPECT_GT(checked, 30);
  int64_t busy = 0, first = reduce.begin()->second.start, last = 0;
  for (const auto& [unit, span] : reduce) {
    busy += span.end - span.start;
    first = std::min(first, span.start);
    last = std::max(last, span.end);
  }
  const double busy_share = static_cast<double>(busy) / static_cast<double>(last - first);
  std::printf("reduce-scatter stream busy %.1f%% of the backward's reductions (%.3f of %.3f s)\n", 100 * busy_share,
              static_cast<double>(busy) * 1e-9, static_cast<double>(last - first) * 1e-9);
  EXPECT_GT(busy_share, 0.95);
}

}  // namespace
}  // namespace ragged::sim
