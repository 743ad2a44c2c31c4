// The one definition of each metric: tokens/s, MFU, and a step's compute,
// communication and exposed communication, averaged over steps with their
// spread; compute + exposed is the step on every basis.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "traces/metrics.hpp"

namespace ragged::traces {
namespace {

void add(Trace& trace, Stream stream, OpKind kind, int64_t start, int64_t end, int step) {
  Event* e = trace.add_events();
  e->set_stream(stream);
  e->set_kind(kind);
  e->set_start_ns(start);
  e->set_end_ns(end);
  e->set_step(step);
}

TEST(Metrics, ThroughputAndMfuFollowTheirDefinitions) {
  EXPECT_EQ(tokens_per_s_per_gpu(16384, 2.0), 8192.0);
  EXPECT_EQ(tokens_per_s_per_gpu(16384, 0.0), 0.0);
  // 1e15 model FLOPs in 2 s on a 989.4 TFLOP/s GPU.
  EXPECT_DOUBLE_EQ(mfu(1e15, 2.0, 989.4e12), 1e15 / 2.0 / 989.4e12);
  EXPECT_EQ(mfu(1e15, 0.0, 989.4e12), 0.0);
}

TEST(Metrics, StepFiguresSplitTheStepIntoComputeAndExposed) {
  Trace trace;
  add(trace, ALL_GATHER_STREAM, ALL_GATHER, 0, 400, 0);
  add(trace, COMPUTE, COMPUTE_FWD, 400, 1000, 0);  // waited 400 ns for the all-gather
  add(trace, REDUCE_SCATTER_STREAM, REDUCE_SCATTER, 900, 1300, 0);
  add(trace, COMPUTE, OPTIMIZER, 1300, 1500, 0);   // waited 300 ns for the reduce-scatter
  const StepFigures f = step_figures(trace, 0, 0, 1500e-9);
  EXPECT_DOUBLE_EQ(f.compute_s(), 800e-9);
  EXPECT_DOUBLE_EQ(f.comm_s(), 800e-9);
  EXPECT_DOUBLE_EQ(f.exposed_comm_s(), 700e-9);
  EXPECT_DOUBLE_EQ(f.compute_s() + f.exposed_comm_s(), f.step_time_s());
}

TEST(Metrics, SummaryIsTheMeanOverStepsWithItsSpread) {
  SummaryInputs in;
  for (double step : {1.0, 2.0, 3.0, 6.0}) {
    StepFigures f;
    f.set_step_time_s(step);
    f.set_compute_s(0.75 * step);
    f.set_comm_s(0.5 * step);
    f.set_exposed_comm_s(0.25 * step);
    in.steps.push_back(f);
  }
  in.tokens_per_step = 1000;
  in.model_flops_per_step = 3e12;
  in.peak_flops = 1e12;
  const Summary s = make_summary(in);
  ASSERT_EQ(s.per_step_size(), 4);
  EXPECT_DOUBLE_EQ(s.step_time_s(), 3.0);
  EXPECT_DOUBLE_EQ(s.compute_s(), 2.25);
  EXPECT_DOUBLE_EQ(s.exposed_comm_s(), 0.75);
  EXPECT_DOUBLE_EQ(s.compute_s() + s.exposed_comm_s(), s.step_time_s());
  EXPECT_DOUBLE_EQ(s.tokens_per_s_per_gpu(), 1000.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.mfu(), 1.0);
  const Spread spread = step_time_spread(s);
  EXPECT_EQ(spread.min, 1.0);
  EXPECT_EQ(spread.max, 6.0);
  // Population standard deviation of 1, 2, 3, 6 about 3: sqrt((4 + 1 + 0 + 9) / 4).
  EXPECT_DOUBLE_EQ(spread.stddev, std::sqrt(14.0 / 4.0));
}

TEST(Metrics, AllocatorCapacityFallsBackToTheHbmForOlderTraces) {
  SummaryInputs in;
  in.hbm_capacity_bytes = 80LL << 30;
  in.allocator_capacity_bytes = 79LL << 30;
  const Summary written = make_summary(in);
  EXPECT_EQ(written.allocator_capacity_bytes(), 79LL << 30);
  EXPECT_EQ(allocator_capacity_of(written), 79LL << 30);
  // A trace written before the field had none: its verdict was judged against the whole HBM.
  Summary older = written;
  older.clear_allocator_capacity_bytes();
  EXPECT_EQ(allocator_capacity_of(older), 80LL << 30);
}

TEST(Metrics, AFitIsTightWhenThePeakPlusThePredictionsMemoryErrorPassesTheCapacity) {
  const int64_t capacity = 80LL << 30;
  const auto peak = [&](double share) { return static_cast<int64_t>(share * static_cast<double>(capacity)); };
  // The boundary: a peak of (1 - error) x capacity, under-predicted by the error, is exactly the capacity.
  const double boundary = 1 - kPeakMemoryPredictionError;
  std::printf("tight above %.1f%% of the allocator's capacity\n", 100 * boundary);
  EXPECT_FALSE(fits_tightly(peak(boundary - 0.001), capacity, false));
  EXPECT_TRUE(fits_tightly(peak(boundary + 0.001), capacity, false));
  EXPECT_TRUE(fits_tightly(capacity, capacity, false));
  // An OOM is an OOM, not a tight fit; no capacity, no verdict.
  EXPECT_FALSE(fits_tightly(peak(0.99), capacity, true));
  EXPECT_FALSE(fits_tightly(peak(0.99), 0, false));
  // The summary's overload judges against the allocator's capacity, not the HBM.
  SummaryInputs in;
  in.hbm_capacity_bytes = capacity;
  in.allocator_capacity_bytes = capacity - (4LL << 30);
  in.peak_reserved_bytes = peak(boundary - 0.01);  // 74.8 GiB: loose against 80 GiB, tight against 76
  EXPECT_TRUE(fits_tightly(make_summary(in)));
  // Out of memory by less than the same error: marginal; by more: not.
  EXPECT_TRUE(oom_marginally(capacity, capacity, true));
  const double over = 1 / (1 - kPeakMemoryPredictionError);
  EXPECT_TRUE(oom_marginally(peak(over - 0.001), capacity, true));
  EXPECT_FALSE(oom_marginally(peak(over + 0.001), capacity, true));
  EXPECT_FALSE(oom_marginally(peak(over - 0.001), capacity, false));  // a fit is no OOM
}

}  // namespace
}  // namespace ragged::traces
