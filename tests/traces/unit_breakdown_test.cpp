// Busy time per unit: per op kind (the ops of no unit kept apart), per
// phase, averaged over steps, and consecutive blocks as one mean row; what
// `ragged simulate` prints and the dashboard charts.

#include <gtest/gtest.h>

#include "sample_trace.hpp"
#include "traces/unit_breakdown.hpp"

namespace ragged::traces {
namespace {

size_t at(UnitPhase phase) { return static_cast<size_t>(phase); }

TEST(UnitBreakdown, KindSecondsPerUnitKeepTheOpsOfNoUnit) {
  const auto by_unit = kind_seconds_by_unit(testing::make_sample_trace(), 0);
  ASSERT_EQ(by_unit.size(), 3u);  // -1 (the optimizer), 0, 1
  EXPECT_DOUBLE_EQ(by_unit.at(-1).at(OPTIMIZER), 1000e-9);
  EXPECT_DOUBLE_EQ(by_unit.at(0).at(ALL_GATHER), 1000e-9);
  EXPECT_DOUBLE_EQ(by_unit.at(0).at(COMPUTE_BWD), 8000e-9);
  EXPECT_DOUBLE_EQ(by_unit.at(1).at(REDUCE_SCATTER), 2500e-9);
  // Both ranks: every op counted twice.
  EXPECT_DOUBLE_EQ(kind_seconds_by_unit(testing::make_sample_trace()).at(1).at(COMPUTE_FWD), 8000e-9);
}

TEST(UnitBreakdown, PhasesPerUnitAndBlocksAveraged) {
  const std::vector<UnitTimes> rows = unit_times(testing::make_sample_trace(), 0);
  ASSERT_EQ(rows.size(), 2u);  // the optimizer's unit -1 left out
  EXPECT_EQ(rows[0].name, "layers.0");
  EXPECT_DOUBLE_EQ(rows[0].seconds[at(UnitPhase::kForward)], 4000e-9);
  EXPECT_DOUBLE_EQ(rows[0].seconds[at(UnitPhase::kAllGather)], 1000e-9);
  EXPECT_DOUBLE_EQ(rows[1].seconds[at(UnitPhase::kReduceScatter)], 2500e-9);
  EXPECT_DOUBLE_EQ(rows[1].total(), 1500e-9 + 4000e-9 + 8000e-9 + 2500e-9);

  const std::vector<UnitTimes> mean = with_blocks_averaged(rows);
  ASSERT_EQ(mean.size(), 1u);
  EXPECT_EQ(mean[0].name, "layers (mean of 2)");
  EXPECT_EQ(mean[0].units, 2);
  EXPECT_DOUBLE_EQ(mean[0].seconds[at(UnitPhase::kAllGather)], (1000e-9 + 1500e-9) / 2);
  EXPECT_DOUBLE_EQ(mean[0].seconds[at(UnitPhase::kReduceScatter)], (2000e-9 + 2500e-9) / 2);
  EXPECT_DOUBLE_EQ(mean[0].kinds.at(COMPUTE_BWD), 8000e-9);
  // One block is a mean of one, named as `ragged simulate` always named it.
  EXPECT_EQ(with_blocks_averaged({rows[0]}).front().name, "layers (mean of 1)");
}

TEST(UnitBreakdown, StepsAveragedAndUnnamedUnitsNumbered) {
  Trace trace = testing::make_sample_trace();
  const int events = trace.events_size();
  for (int i = 0; i < events; ++i) {
    Event* again = trace.add_events();
    *again = trace.events(i);
    again->set_step(1);
    again->set_end_ns(again->start_ns() + 3 * (again->end_ns() - again->start_ns()));  // three times as long
  }
  for (Event& e : *trace.mutable_events()) {
    if (e.unit() == 1 && e.kind() == COMPUTE_FWD) e.set_kind(RECOMPUTE);  // unit 1 has no forward: no name
  }
  const std::vector<UnitTimes> rows = unit_times(trace, 0);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].seconds[at(UnitPhase::kForward)], (4000e-9 + 12000e-9) / 2);
  EXPECT_EQ(rows[1].name, "unit 1");
  EXPECT_DOUBLE_EQ(rows[1].seconds[at(UnitPhase::kRecompute)], (4000e-9 + 12000e-9) / 2);
  EXPECT_EQ(with_blocks_averaged(rows).size(), 2u);  // "unit 1" is not a block
}

TEST(UnitBreakdown, AllocFreeAndWaitsHaveNoPhase) {
  UnitPhase phase = UnitPhase::kForward;
  EXPECT_FALSE(phase_of(ALLOC, &phase));
  EXPECT_FALSE(phase_of(WAIT, &phase));
  EXPECT_TRUE(phase_of(ALL_TO_ALL, &phase));
  EXPECT_EQ(phase, UnitPhase::kOptimizer);
  EXPECT_EQ(unit_phase_name(UnitPhase::kCopies), "copies+casts");
}

}  // namespace
}  // namespace ragged::traces
