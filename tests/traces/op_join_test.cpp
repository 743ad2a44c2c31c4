// Predicted and measured traces joined op by op: the first traced rank of
// each, a measured op's mean over its steps, ops in one trace only (or of
// another kind) counted apart, per-kind sums, the worst first; and
// compare_traces carrying the same join.

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "sample_trace.hpp"
#include "traces/op_join.hpp"
#include "traces/trace_compare.hpp"

namespace ragged::traces {
namespace {

// The sample's rank-0 step as the prediction; the measured run is its rank 1
// over two steps: op 1 (an all-gather of 1,000 ns) takes 2,000 then 4,000
// ns, op 5 (a backward of 8,000 ns) 8,500 ns each step; op 8 ran as an
// all-reduce, op 9 is missing and an op 10 is new. Rank 0's events, listed
// second in traced_ranks, take ten times longer and must not count.
Trace measured_run() {
  const Trace sample = testing::make_sample_trace();
  Trace m;
  *m.mutable_metadata() = sample.metadata();
  m.mutable_metadata()->set_source(MEASURED);
  m.mutable_metadata()->clear_traced_ranks();
  m.mutable_metadata()->add_traced_ranks(1);
  m.mutable_metadata()->add_traced_ranks(0);
  for (int step = 0; step < 2; ++step) {
    for (const Event& e : sample.events()) {
      if (e.op_id() == 9) continue;
      Event* out = m.add_events();
      *out = e;
      out->set_step(step);
      int64_t ns = e.end_ns() - e.start_ns();
      if (e.op_id() == 1) ns = step == 0 ? 2000 : 4000;
      if (e.op_id() == 5) ns = 8500;
      if (e.rank() == 0) ns *= 10;
      if (e.op_id() == 8) out->set_kind(ALL_REDUCE);
      out->set_end_ns(out->start_ns() + ns);
    }
    Event* extra = m.add_events();
    extra->set_op_id(10);
    extra->set_rank(1);
    extra->set_kind(OPTIMIZER);
    extra->set_end_ns(100);
    extra->set_step(step);
  }
  return m;
}

const OpComparison* find_op(const std::vector<OpComparison>& ops, uint64_t id) {
  for (const auto& op : ops) {
    if (op.op_id == id) return &op;
  }
  return nullptr;
}

TEST(OpJoin, JoinsByOpIdOnTheFirstTracedRankWithMeasuredMeans) {
  const OpJoin join = join_ops(testing::make_sample_trace(), measured_run());
  ASSERT_EQ(join.ops.size(), 7u);  // ops 1 to 7
  EXPECT_EQ(join.unmatched, 3);    // 8 (another kind), 9 (not measured), 10 (not predicted)
  for (size_t i = 0; i < join.ops.size(); ++i) EXPECT_EQ(join.ops[i].op_id, i + 1);  // in op id order

  const OpComparison* gather = find_op(join.ops, 1);
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ(gather->kind, ALL_GATHER);
  EXPECT_EQ(gather->stream, ALL_GATHER_STREAM);
  EXPECT_EQ(gather->unit, 0);
  EXPECT_EQ(gather->name, "layers.0 all_gather");
  EXPECT_DOUBLE_EQ(gather->predicted_s, 1000e-9);
  EXPECT_DOUBLE_EQ(gather->measured_s, 3000e-9);  // (2,000 + 4,000) / 2 steps
  EXPECT_NEAR(gather->relative_error(), -2.0 / 3.0, 1e-12);

  const OpComparison* forward = find_op(join.ops, 3);
  ASSERT_NE(forward, nullptr);
  EXPECT_DOUBLE_EQ(forward->difference_s(), 0.0);  // rank 0's tenfold times left out
}

TEST(OpJoin, KindsSumTheirOpsAndTheWorstComeFirst) {
  const OpJoin join = join_ops(testing::make_sample_trace(), measured_run());
  const std::vector<KindComparison> kinds = kinds_of(join.ops);
  ASSERT_EQ(kinds.size(), 4u);  // all_gather, reduce_scatter, compute_fwd, compute_bwd: enum order
  EXPECT_EQ(kinds[0].kind, ALL_GATHER);
  EXPECT_EQ(kinds[0].ops, 2);
  EXPECT_DOUBLE_EQ(kinds[0].predicted_s, 2500e-9);  // 1,000 + 1,500
  EXPECT_DOUBLE_EQ(kinds[0].measured_s, 4500e-9);   // 3,000 + 1,500
  EXPECT_EQ(kinds[1].kind, REDUCE_SCATTER);
  EXPECT_EQ(kinds[1].ops, 1);  // op 6 only: op 8 did not join

  const std::vector<OpComparison> worst = worst_ops_first(join.ops);
  EXPECT_EQ(worst[0].op_id, 1u);  // 2,000 ns off
  EXPECT_EQ(worst[1].op_id, 5u);  // 500 ns off
  EXPECT_EQ(worst[2].op_id, 2u);  // then the exact ones, in op id order
  const std::vector<KindComparison> worst_kinds = worst_kinds_first(kinds);
  EXPECT_EQ(worst_kinds[0].kind, ALL_GATHER);
  EXPECT_EQ(worst_kinds[1].kind, COMPUTE_BWD);
}

TEST(OpJoin, NoMeasuredTimeHasNoRelativeError) {
  const OpComparison op{1, ALL_GATHER, ALL_GATHER_STREAM, 0, "x", 1e-6, 0};
  EXPECT_EQ(op.relative_error(), 0.0);
  EXPECT_DOUBLE_EQ(op.difference_s(), 1e-6);
}

TEST(TraceCompare, CarriesTheJoinAndChecksTheSources) {
  const Trace predicted = testing::make_sample_trace(), measured = measured_run();
  const TraceComparison c = compare_traces(predicted, measured);
  EXPECT_EQ(c.joined_ops, 7);
  EXPECT_EQ(c.unmatched_ops, 3);
  ASSERT_EQ(c.ops.size(), 7u);
  double kind_total = 0, op_total = 0;
  for (const auto& k : c.kinds) kind_total += k.measured_s;
  for (const auto& op : c.ops) op_total += op.measured_s;
  EXPECT_DOUBLE_EQ(kind_total, op_total);
  EXPECT_THROW(compare_traces(measured, predicted), InputError);
}

}  // namespace
}  // namespace ragged::traces
