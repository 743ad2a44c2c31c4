#include "backend/worker_clock.hpp"

#include <gtest/gtest.h>

namespace ragged::backend {
namespace {

TEST(WorkerClock, AWorkerHoldingATaskSilentPastTheTimeoutIsNamed) {
  WorkerClock clock(10);
  clock.task_sent(1, 0);
  clock.task_sent(2, 0);
  EXPECT_FALSE(clock.silent_past_timeout(10).has_value());  // at the timeout, not past it
  clock.result_received(2, 8);                              // rank 2 answers; rank 1 does not
  const auto silent = clock.silent_past_timeout(12);
  ASSERT_TRUE(silent.has_value());
  EXPECT_EQ(silent->rank, 1);
  EXPECT_DOUBLE_EQ(silent->seconds, 12);
  EXPECT_EQ(silent->tasks, 1);
}

TEST(WorkerClock, AnIdleWorkerIsNeverLateAndEveryMessageRestartsTheClock) {
  WorkerClock clock(10);
  clock.heard(1, 0);  // asked for work, none given: idle, owes nothing
  EXPECT_FALSE(clock.silent_past_timeout(100).has_value());
  clock.task_sent(1, 100);
  clock.task_sent(1, 105);  // a second task does not restart its silence
  EXPECT_TRUE(clock.silent_past_timeout(111).has_value());
  clock.heard(1, 111);  // a request from one of its other threads: alive
  EXPECT_FALSE(clock.silent_past_timeout(120).has_value());
  clock.result_received(1, 121);
  clock.result_received(1, 122);
  EXPECT_FALSE(clock.silent_past_timeout(1000).has_value());  // holds nothing
}

TEST(WorkerClock, AWorkerThatOwesItsLastWordIsLateToo) {
  WorkerClock clock(5);
  clock.owes_message(3, 0);
  EXPECT_FALSE(clock.silent_past_timeout(5).has_value());
  ASSERT_TRUE(clock.silent_past_timeout(6).has_value());
  EXPECT_EQ(clock.silent_past_timeout(6)->tasks, 0);
  clock.heard(3, 6);
  EXPECT_FALSE(clock.silent_past_timeout(100).has_value());
}

TEST(WorkerClock, ATimeoutOfZeroWaitsForever) {
  WorkerClock clock(0);
  clock.task_sent(1, 0);
  EXPECT_FALSE(clock.silent_past_timeout(1e9).has_value());
}

}  // namespace
}  // namespace ragged::backend
