#include "traces/trace_stats.hpp"

#include <algorithm>

#include <gtest/gtest.h>

#include "sample_trace.hpp"

namespace ragged::traces {
namespace {

using testing::make_sample_trace;

void expect_totals(const KindTotals& got, OpKind kind, int64_t count, double busy_s, int64_t bytes,
                   double flops) {
  EXPECT_EQ(got.kind, kind);
  EXPECT_EQ(got.count, count) << OpKind_Name(kind);
  EXPECT_EQ(got.busy_s, busy_s) << OpKind_Name(kind);
  EXPECT_EQ(got.bytes, bytes) << OpKind_Name(kind);
  EXPECT_EQ(got.flops, flops) << OpKind_Name(kind);
}

TEST(TraceStats, TotalsByKindOverAllRanks) {
  auto totals = totals_by_kind(make_sample_trace());
  ASSERT_EQ(totals.size(), 5u);
  expect_totals(totals[0], ALL_GATHER, 4, 5e-6, 24576, 0);
  expect_totals(totals[1], REDUCE_SCATTER, 4, 9e-6, 24576, 0);
  expect_totals(totals[2], COMPUTE_FWD, 4, 16e-6, 0, 7.5e9);
  expect_totals(totals[3], COMPUTE_BWD, 4, 32e-6, 0, 15e9);
  expect_totals(totals[4], OPTIMIZER, 2, 2e-6, 0, 2e6);
}

TEST(TraceStats, TotalsByKindForOneRank) {
  Trace trace = make_sample_trace();
  trace.mutable_events(9)->set_bytes(1);  // rank 1's first all-gather
  auto rank0 = totals_by_kind(trace, 0);
  auto rank1 = totals_by_kind(trace, 1);
  ASSERT_EQ(rank0.size(), 5u);
  ASSERT_EQ(rank1.size(), 5u);
  expect_totals(rank0[0], ALL_GATHER, 2, 2.5e-6, 12288, 0);
  expect_totals(rank1[0], ALL_GATHER, 2, 2.5e-6, 8193, 0);
  expect_totals(rank0[3], COMPUTE_BWD, 2, 16e-6, 0, 7.5e9);
  EXPECT_TRUE(totals_by_kind(trace, 7).empty());
}

TEST(TraceStats, TotalsDoNotDependOnEventOrder) {
  Trace trace = make_sample_trace();
  auto before = totals_by_kind(trace);
  std::reverse(trace.mutable_events()->begin(), trace.mutable_events()->end());
  auto after = totals_by_kind(trace);
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    expect_totals(after[i], before[i].kind, before[i].count, before[i].busy_s, before[i].bytes, before[i].flops);
  }
}

TEST(TraceStats, PeakMemory) {
  Trace trace = make_sample_trace();
  EXPECT_EQ(peak_allocated(trace), (5 << 20) + 1);
  EXPECT_EQ(peak_allocated(trace, 0), 5 << 20);
  EXPECT_EQ(peak_allocated(trace, 1), (5 << 20) + 1);
  EXPECT_EQ(peak_allocated(trace, 3), 0);
  EXPECT_EQ(peak_reserved(trace), 6 << 20);
  trace.mutable_memory(0)->set_reserved_bytes(9 << 20);
  EXPECT_EQ(peak_reserved(trace, 0), 9 << 20);
  EXPECT_EQ(peak_reserved(trace, 1), 6 << 20);
}

TEST(TraceStats, SpanFromFirstStartToLastEnd) {
  Trace trace = make_sample_trace();
  EXPECT_EQ(span_seconds(trace), 28.25e-6);
  for (Event& event : *trace.mutable_events()) {
    event.set_start_ns(event.start_ns() + 1000);
    event.set_end_ns(event.end_ns() + 1000);
  }
  EXPECT_EQ(span_seconds(trace), 28.25e-6);
}

TEST(TraceStats, EmptyTrace) {
  Trace empty;
  EXPECT_TRUE(totals_by_kind(empty).empty());
  EXPECT_EQ(peak_allocated(empty), 0);
  EXPECT_EQ(span_seconds(empty), 0.0);
  EXPECT_EQ(busy_seconds(empty, true), 0.0);
}

// Overlapping collectives count once, an alloc or free for the time its
// executor spent on it (none in a prediction, zero-filling on the host), and
// the compute stream is kept apart from the collective streams.
TEST(TraceStats, BusyIsTheUnionOfIntervalsPerSide) {
  Trace trace;
  auto add = [&](Stream stream, OpKind kind, int64_t start, int64_t end, int rank = 0, int step = 0) {
    Event* e = trace.add_events();
    e->set_stream(stream);
    e->set_kind(kind);
    e->set_start_ns(start);
    e->set_end_ns(end);
    e->set_rank(rank);
    e->set_step(step);
  };
  add(ALL_GATHER_STREAM, ALL_GATHER, 0, 1000);
  add(REDUCE_SCATTER_STREAM, REDUCE_SCATTER, 500, 1500);  // overlaps the all-gather by 500 ns
  add(ALL_REDUCE_STREAM, ALL_REDUCE, 3000, 3500);
  add(ALL_GATHER_STREAM, ALLOC, 1500, 1700);              // 200 ns of zero-filling, after the reduce-scatter
  add(COMPUTE, COMPUTE_FWD, 200, 1200);
  add(COMPUTE, COMPUTE_BWD, 1200, 2000);
  add(COMPUTE, FREE, 2000, 2000);                         // a prediction's free: no time
  add(COMPUTE, ALLOC, 2000, 2100);
  add(COMPUTE, COMPUTE_FWD, 0, 5000, 1);                  // another rank
  add(COMPUTE, COMPUTE_FWD, 6000, 6400, 0, 1);            // rank 0's next step
  // Collectives: [0, 1500) + [1500, 1700) + [3000, 3500).
  EXPECT_EQ(busy_seconds(trace, false, 0), 2200e-9);
  // Compute, step 0 of rank 0: [200, 2100); both steps add [6000, 6400).
  EXPECT_EQ(busy_seconds(trace, true, 0, 0), 1900e-9);
  EXPECT_EQ(busy_seconds(trace, true, 0), 2300e-9);
  EXPECT_EQ(busy_seconds(trace, true, 0, 1), 400e-9);
  // Every rank: [0, 5000) and [6000, 6400).
  EXPECT_EQ(busy_seconds(trace, true), 5400e-9);
  EXPECT_EQ(step_count(trace), 2);
}

}  // namespace
}  // namespace ragged::traces
