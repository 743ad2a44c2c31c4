#include "traces/trace_validate.hpp"

#include <functional>
#include <limits>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "sample_trace.hpp"

namespace ragged::traces {
namespace {

using testing::make_sample_trace;

std::string joined(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += p + "\n";
  return out;
}

TEST(TraceValidate, SampleTraceHasNoProblems) {
  EXPECT_EQ(joined(trace_problems(make_sample_trace())), "");
  EXPECT_NO_THROW(check_trace(make_sample_trace(), "sample"));
}

struct BreakCase {
  const char* name;
  std::function<void(Trace&)> mutate;
  const char* expected;  // the whole problem, as listed
};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const BreakCase kCases[] = {
    {"EndBeforeStart", [](Trace& t) { t.mutable_events(12)->set_end_ns(100); },
     "events[12].end_ns (100) is before start_ns (5250)"},
    {"KindUnspecified", [](Trace& t) { t.mutable_events(3)->set_kind(OP_KIND_UNSPECIFIED); },
     "events[3].kind is OP_KIND_UNSPECIFIED"},
    {"KindUnknown", [](Trace& t) { t.mutable_events(3)->set_kind(static_cast<OpKind>(77)); },
     "events[3].kind (77) is not a known OpKind"},
    {"StreamUnspecified", [](Trace& t) { t.mutable_events(4)->set_stream(STREAM_UNSPECIFIED); },
     "events[4].stream is STREAM_UNSPECIFIED"},
    {"SourceUnspecified", [](Trace& t) { t.mutable_metadata()->set_source(SOURCE_UNSPECIFIED); },
     "metadata.source is SOURCE_UNSPECIFIED: set PREDICTED or MEASURED"},
    {"WorldSizeZero",
     [](Trace& t) {
       t.mutable_metadata()->set_world_size(0);
     },
     "metadata.world_size (0) is less than 1"},
    {"NegativeSteps", [](Trace& t) { t.mutable_metadata()->set_steps(-1); }, "metadata.steps (-1) is negative"},
    {"TracedRankTwice", [](Trace& t) { t.mutable_metadata()->add_traced_ranks(1); },
     "metadata.traced_ranks[2] (1) is listed twice"},
    {"TracedRankOutsideWorld", [](Trace& t) { t.mutable_metadata()->add_traced_ranks(5); },
     "metadata.traced_ranks[2] (5) is not below metadata.world_size (2)"},
    {"NegativeRank", [](Trace& t) { t.mutable_events(0)->set_rank(-1); }, "events[0].rank (-1) is negative"},
    {"RankOutsideWorld", [](Trace& t) { t.mutable_events(9)->set_rank(2); },
     "events[9].rank (2) is not below metadata.world_size (2)"},
    {"RankNotTraced",
     [](Trace& t) {
       t.mutable_metadata()->set_world_size(8);
       t.mutable_events(9)->set_rank(3);
     },
     "events[9].rank (3) is not listed in metadata.traced_ranks"},
    {"NegativeStart",
     [](Trace& t) {
       t.mutable_events(0)->set_start_ns(-5);
     },
     "events[0].start_ns (-5) is negative"},
    {"NegativeBytes", [](Trace& t) { t.mutable_events(1)->set_bytes(-8); }, "events[1].bytes (-8) is negative"},
    {"NegativeFlops", [](Trace& t) { t.mutable_events(2)->set_flops(-1.5); },
     "events[2].flops (-1.5) is negative"},
    {"NaNFlops", [](Trace& t) { t.mutable_events(2)->set_flops(kNaN); },
     "events[2].flops (nan) is not a finite number"},
    {"NegativeStep", [](Trace& t) { t.mutable_events(5)->set_step(-2); }, "events[5].step (-2) is negative"},
    {"UnitBelowMinusOne", [](Trace& t) { t.mutable_events(5)->set_unit(-2); },
     "events[5].unit (-2) is below -1 (the value for no unit)"},
    {"MemoryAllocatedOverReserved", [](Trace& t) { t.mutable_memory(2)->set_allocated_bytes(7 << 20); },
     "memory[2].allocated_bytes (7340032) exceeds reserved_bytes (6291456)"},
    {"MemoryNegativeStateAndBuffers", [](Trace& t) { t.mutable_memory(3)->set_state_and_buffers_bytes(-4); },
     "memory[3].state_and_buffers_bytes (-4) is negative"},
    {"MemoryNegativeTime", [](Trace& t) { t.mutable_memory(1)->set_time_ns(-1); },
     "memory[1].time_ns (-1) is negative"},
    {"MemoryRankNotTraced",
     [](Trace& t) {
       t.mutable_metadata()->set_world_size(4);
       t.mutable_memory(6)->set_rank(2);
     },
     "memory[6].rank (2) is not listed in metadata.traced_ranks"},
    {"SummaryNegative", [](Trace& t) { t.mutable_summary()->set_step_time_s(-0.5); },
     "summary.step_time_s (-0.5) is negative"},
    {"SummaryNaN", [](Trace& t) { t.mutable_summary()->set_mfu(kNaN); }, "summary.mfu (nan) is not a finite number"},
    {"SummaryInfinite",
     [](Trace& t) {
       t.mutable_summary()->set_comm_s(std::numeric_limits<double>::infinity());
     },
     "summary.comm_s (inf) is not a finite number"},
    {"SummaryNegativeBytes", [](Trace& t) { t.mutable_summary()->set_peak_reserved_bytes(-1); },
     "summary.peak_reserved_bytes (-1) is negative"},
    {"StageNegativeWait", [](Trace& t) { t.mutable_summary()->add_stages()->set_pipeline_wait_s(-1); },
     "summary.stages[0].pipeline_wait_s (-1) is negative"},
    {"DurationsSumPastInt64",  // each valid, their sum would wrap to a negative time in op_join and trace_stats
     [](Trace& t) {
       for (int i : {0, 1}) {
         t.mutable_events(i)->set_start_ns(0);
         t.mutable_events(i)->set_end_ns(INT64_MAX / 2 + 1);
       }
     },
     "the events' durations sum past 9223372036854775807 ns (292 years): a start_ns or end_ns is wrong"},
    {"AllocatorCapacityOverHbm", [](Trace& t) { t.mutable_summary()->set_allocator_capacity_bytes(81LL << 30); },
     "summary.allocator_capacity_bytes (86973087744) exceeds summary.hbm_capacity_bytes (85899345920): the "
     "allocator's capacity is the HBM less the CUDA context and NCCL"},
};

// Names the case in test output instead of dumping its bytes.
void PrintTo(const BreakCase& c, std::ostream* os) { *os << c.name; }

class BrokenTrace : public ::testing::TestWithParam<BreakCase> {};

TEST_P(BrokenTrace, ProblemIsDetectedAndNamed) {
  Trace trace = make_sample_trace();
  GetParam().mutate(trace);
  EXPECT_EQ(joined(trace_problems(trace)), std::string(GetParam().expected) + "\n");
  try {
    check_trace(trace, "run.pb");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), std::string("run.pb: ") + GetParam().expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BrokenTrace, ::testing::ValuesIn(kCases),
                         [](const auto& param) { return std::string(param.param.name); });

TEST(TraceValidate, EmptyTracedRanksAllowsEveryRankOfTheWorld) {
  Trace trace = make_sample_trace();
  trace.mutable_metadata()->clear_traced_ranks();
  trace.mutable_metadata()->set_world_size(8);
  trace.mutable_events(0)->set_rank(7);
  EXPECT_EQ(joined(trace_problems(trace)), "");
}

TEST(TraceValidate, EveryProblemIsListedAndCheckCountsTheRest) {
  Trace trace = make_sample_trace();
  trace.mutable_metadata()->set_source(SOURCE_UNSPECIFIED);
  trace.mutable_events(0)->set_kind(OP_KIND_UNSPECIFIED);
  trace.mutable_events(7)->set_bytes(-1);
  EXPECT_EQ(joined(trace_problems(trace)),
            "metadata.source is SOURCE_UNSPECIFIED: set PREDICTED or MEASURED\n"
            "events[0].kind is OP_KIND_UNSPECIFIED\n"
            "events[7].bytes (-1) is negative\n");
  try {
    check_trace(trace, "x.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "x.json: metadata.source is SOURCE_UNSPECIFIED: set PREDICTED or MEASURED (2 more)");
  }
}

TEST(TraceValidate, EmptyTraceNeedsSourceAndWorldSize) {
  EXPECT_EQ(joined(trace_problems(Trace())),
            "metadata.source is SOURCE_UNSPECIFIED: set PREDICTED or MEASURED\n"
            "metadata.world_size (0) is less than 1\n");
}

}  // namespace
}  // namespace ragged::traces
