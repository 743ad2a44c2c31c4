// The NCCL watchdog's loop (backend/collective_wait.hpp) driven by fakes: a
// manual clock, a collective that completes after some polls, a communicator
// that fails. No GPU needed.

#include "backend/collective_wait.hpp"

#include <gtest/gtest.h>

namespace ragged::backend {
namespace {

struct Fake {
  double now = 100;
  int polls = 0;
  int complete_after = -1;  // polls; -1: never
  int fail_after = -1;      // polls; -1: never
  int aborts = 0;

  CollectiveProbe probe() {
    return {[this] { return complete_after >= 0 && polls >= complete_after; },
            [this](std::string* error) {
              if (fail_after >= 0 && polls >= fail_after) {
                *error = "ncclRemoteError (remote process exited or there was a network error)";
                return CommStatus::kFailed;
              }
              return CommStatus::kInProgress;
            },
            [this] { ++aborts; }};
  }
  WaitClock clock() {
    return {[this] { return now; }, [this] {
              ++polls;
              now += 0.5;
            }};
  }
};

TEST(CollectiveWait, CompletedWorkReturnsWithoutAborting) {
  Fake fake;
  fake.complete_after = 3;
  const WaitResult result = wait_for_collective(fake.probe(), 10, fake.clock());
  EXPECT_EQ(result.outcome, WaitOutcome::kCompleted);
  EXPECT_DOUBLE_EQ(result.waited_s, 1.5);
  EXPECT_EQ(fake.aborts, 0);
}

TEST(CollectiveWait, PastTheTimeoutAbortsOnceAndSaysSo) {
  Fake fake;
  const WaitResult result = wait_for_collective(fake.probe(), 5, fake.clock());
  EXPECT_EQ(result.outcome, WaitOutcome::kTimedOut);
  EXPECT_DOUBLE_EQ(result.waited_s, 5.0);
  EXPECT_EQ(fake.aborts, 1);
  EXPECT_EQ(lost_collective_message(result, 1, "layers.3 all_gather (step 2)", 5),
            "rank 1 waited 5.0 s in layers.3 all_gather (step 2) past --collective-timeout 5: a peer is lost or "
            "stopped; NCCL communicators aborted");
}

TEST(CollectiveWait, AnAsyncErrorAbortsAtOnceAndNamesIt) {
  Fake fake;
  fake.fail_after = 2;
  const WaitResult result = wait_for_collective(fake.probe(), 300, fake.clock());
  EXPECT_EQ(result.outcome, WaitOutcome::kFailed);
  EXPECT_EQ(fake.aborts, 1);
  const std::string line = lost_collective_message(result, 0, "head reduce_scatter (step 1)", 300);
  EXPECT_NE(line.find("rank 0 in head reduce_scatter (step 1): NCCL reported ncclRemoteError"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(CollectiveWait, ZeroTimeoutWaitsAsLongAsItTakes) {
  Fake fake;
  fake.complete_after = 10000;  // 5,000 s of the fake clock
  const WaitResult result = wait_for_collective(fake.probe(), 0, fake.clock());
  EXPECT_EQ(result.outcome, WaitOutcome::kCompleted);
  EXPECT_EQ(fake.aborts, 0);
}

TEST(CollectiveWait, CompletionWinsOverAnErrorSeenLater) {
  Fake fake;
  fake.complete_after = 1;
  fake.fail_after = 1;
  EXPECT_EQ(wait_for_collective(fake.probe(), 5, fake.clock()).outcome, WaitOutcome::kCompleted);
  EXPECT_EQ(fake.aborts, 0);
}

TEST(CollectiveWait, SystemClockAdvances) {
  const WaitClock clock = system_wait_clock();
  const double before = clock.now_s();
  clock.pause();
  EXPECT_GT(clock.now_s(), before);
}

}  // namespace
}  // namespace ragged::backend
