// The schedules' orders: every pass once, dependencies between stages
// satisfiable (no stage waits for one that waits for it), and on uniform
// stages with free communication the makespan each order gives, played out
// pass by pass here, against the published bubble fractions: GPipe and 1F1B
// (p - 1) / (m + p - 1), interleaved 1F1B (p - 1) / (v m + p - 1).

#include <cstdio>
#include <map>
#include <tuple>

#include <gtest/gtest.h>

#include "planner/pipeline_schedule.hpp"

namespace ragged::planner {
namespace {

// File-specific: planner::Pass (program.hpp) is another enum, and unity batches share a scope.
using ActionPass = PipelineAction::Pass;

struct Costs {
  double forward = 1, backward = 2, backward_input = 1, backward_weight = 1;
};

double cost(const PipelineAction& a, const Costs& c) {
  switch (a.pass) {
    case ActionPass::kForward: return c.forward;
    case ActionPass::kBackward: return c.backward;
    case ActionPass::kBackwardInput: return c.backward_input;
    case ActionPass::kBackwardWeight: return c.backward_weight;
  }
  return 0;
}

// Plays every stage's order out: a pass starts when its stage is free and
// what it reads is there (the previous model chunk's forward of the
// micro-batch, the next chunk's backward). Chunk c of stage s is model chunk
// c * p + s. Returns the makespan; fails the test on a deadlock.
double makespan(PipelineScheduleKind kind, int p, int m, int v, const Costs& c) {
  std::vector<std::vector<PipelineAction>> orders;
  for (int s = 0; s < p; ++s) orders.push_back(stage_schedule(kind, p, s, m, v));
  std::map<std::tuple<int, int, int>, double> done;  // (pass kind: 0 forward, 1 input gradient, model chunk, mb) -> end
  std::vector<size_t> next(static_cast<size_t>(p), 0);
  std::vector<double> free_at(static_cast<size_t>(p), 0);
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < p; ++s) {
      while (next[s] < orders[s].size()) {
        const PipelineAction& a = orders[s][next[s]];
        const int chunk = a.chunk * p + s, last = p * v - 1;
        double ready = free_at[s];
        bool can = true;
        auto need = [&](int pass, int at) {
          const auto it = done.find({pass, at, a.micro_batch});
          if (it == done.end()) can = false;
          else ready = std::max(ready, it->second);
        };
        if (a.pass == ActionPass::kForward && chunk > 0) need(0, chunk - 1);
        if (a.pass == ActionPass::kBackward || a.pass == ActionPass::kBackwardInput) {
          need(0, chunk);
          if (chunk < last) need(1, chunk + 1);
        }
        if (a.pass == ActionPass::kBackwardWeight) need(1, chunk);
        if (!can) break;
        const double end = ready + cost(a, c);
        free_at[s] = end;
        if (a.pass == ActionPass::kForward) done[{0, chunk, a.micro_batch}] = end;
        if (a.pass == ActionPass::kBackward || a.pass == ActionPass::kBackwardInput) done[{1, chunk, a.micro_batch}] = end;
        ++next[s];
        progressed = true;
      }
    }
  }
  for (int s = 0; s < p; ++s) EXPECT_EQ(next[s], orders[s].size()) << "stage " << s << " deadlocked";
  double span = 0;
  for (double t : free_at) span = std::max(span, t);
  return span;
}

TEST(PipelineSchedule, EveryPassOnceInEverySchedule) {
  for (PipelineScheduleKind kind : {PipelineScheduleKind::kGpipe, PipelineScheduleKind::kOneFOneB,
                                    PipelineScheduleKind::kZeroBubbleH1, PipelineScheduleKind::kInterleaved1F1B}) {
    const int v = kind == PipelineScheduleKind::kInterleaved1F1B ? 2 : 1;
    for (int s = 0; s < 4; ++s) {
      std::map<std::tuple<int, int, int>, int> seen;
      for (const PipelineAction& a : stage_schedule(kind, 4, s, 8, v)) ++seen[{static_cast<int>(a.pass), a.micro_batch, a.chunk}];
      const size_t passes = kind == PipelineScheduleKind::kZeroBubbleH1 ? 3 : 2;
      EXPECT_EQ(seen.size(), passes * 8 * static_cast<size_t>(v)) << pipeline_schedule_name(kind) << " stage " << s;
      for (const auto& [key, count] : seen) EXPECT_EQ(count, 1);
    }
  }
}

TEST(PipelineSchedule, AnExtraWarmUpForwardDelaysEachStagesFirstBackwardByOne) {
  // Megatron-Core's interleaved schedule with the expert all-to-alls
  // overlapped: (pp - stage - 1) x 2 + (v - 1) x pp + 1 forwards first.
  for (int s = 0; s < 4; ++s) {
    const std::vector<PipelineAction> plain = stage_schedule(PipelineScheduleKind::kInterleaved1F1B, 4, s, 8, 2);
    const std::vector<PipelineAction> extra = stage_schedule(PipelineScheduleKind::kInterleaved1F1B, 4, s, 8, 2, 1);
    const auto first_backward = [](const std::vector<PipelineAction>& order) {
      size_t i = 0;
      while (order[i].pass == ActionPass::kForward) ++i;
      return i;
    };
    // The warm-up, then the steady state's first forward.
    EXPECT_EQ(first_backward(plain), static_cast<size_t>((4 - s - 1) * 2 + 4 + 1)) << "stage " << s;
    EXPECT_EQ(first_backward(extra), first_backward(plain) + 1) << "stage " << s;
    std::map<std::tuple<int, int, int>, int> seen;
    for (const PipelineAction& a : extra) ++seen[{static_cast<int>(a.pass), a.micro_batch, a.chunk}];
    EXPECT_EQ(seen.size(), 2u * 8 * 2);
  }
}

TEST(PipelineSchedule, OneFOneBWarmsUpWithTheStagesAfterIt) {
  const std::vector<PipelineAction> first = stage_schedule(PipelineScheduleKind::kOneFOneB, 4, 0, 8);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(first[static_cast<size_t>(i)].pass, ActionPass::kForward);
  EXPECT_EQ(first[3].pass, ActionPass::kForward);
  EXPECT_EQ(first[4], (PipelineAction{ActionPass::kBackward, 0, 0}));
  const std::vector<PipelineAction> last = stage_schedule(PipelineScheduleKind::kOneFOneB, 4, 3, 8);
  EXPECT_EQ(last[1], (PipelineAction{ActionPass::kBackward, 0, 0}));
}

TEST(PipelineSchedule, BubblesOfUniformStagesAreThePublishedFractions) {
  const Costs c;  // forward 1, backward 2
  for (const auto& [p, m] : {std::pair{4, 8}, std::pair{8, 16}, std::pair{4, 4}}) {
    const double ideal = m * (c.forward + c.backward);
    const double expected = static_cast<double>(p - 1) / (m + p - 1);
    for (PipelineScheduleKind kind : {PipelineScheduleKind::kGpipe, PipelineScheduleKind::kOneFOneB}) {
      const double span = makespan(kind, p, m, 1, c);
      std::printf("%-8s p %d m %2d: bubble analytic %.6f, played out %.6f\n", std::string(pipeline_schedule_name(kind)).c_str(),
                  p, m, expected, 1 - ideal / span);
      EXPECT_NEAR(1 - ideal / span, expected, 1e-12);
    }
    for (int v : {2, 4}) {
      const Costs chunk{c.forward / v, c.backward / v, 0, 0};  // v chunks of a stage's layers
      const double span = makespan(PipelineScheduleKind::kInterleaved1F1B, p, m, v, chunk);
      const double interleaved = static_cast<double>(p - 1) / (v * m + p - 1);
      std::printf("interleaved v %d p %d m %2d: bubble analytic %.6f, played out %.6f\n", v, p, m, interleaved,
                  1 - ideal / span);
      EXPECT_NEAR(1 - ideal / span, interleaved, 1e-12);
    }
  }
}

TEST(PipelineSchedule, ZeroBubbleH1HalvesTheBubbleOf1F1B) {
  // ZB-H1 (Qi et al. 2024, section 3): with F = B = W the bubble falls from
  // 1F1B's (p - 1)(F + B + W) to (p - 1)(F + B - W).
  const Costs c{1, 2, 1, 1};
  const int p = 4, m = 12;
  const double one = makespan(PipelineScheduleKind::kOneFOneB, p, m, 1, c);
  const double zb = makespan(PipelineScheduleKind::kZeroBubbleH1, p, m, 1, c);
  std::printf("p %d m %d: 1F1B %.1f, ZB-H1 %.1f, ideal %.1f; bubbles %.1f and %.1f (published (p-1)(F+B+W) = %.1f, "
              "(p-1)(F+B-W) = %.1f)\n", p, m, one, zb, m * 3.0, one - m * 3.0, zb - m * 3.0, (p - 1) * 3.0, (p - 1) * 1.0);
  EXPECT_DOUBLE_EQ(one - m * 3.0, (p - 1) * 3.0);
  EXPECT_DOUBLE_EQ(zb - m * 3.0, (p - 1) * 1.0);
}

}  // namespace
}  // namespace ragged::planner
