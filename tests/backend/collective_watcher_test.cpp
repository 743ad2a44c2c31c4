// The NCCL watchdog thread (backend/collective_watcher.hpp) with fake
// collectives, communicators and clock: the thread is real, time is not (each
// poll advances the fake clock by 0.5 s), so nothing here waits out a timeout.

#include "backend/collective_watcher.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ragged::backend {
namespace {

struct FakeRank {
  std::atomic<double> now{100};
  std::atomic<int> aborts{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::vector<std::string> lines;

  CollectiveWatcher::Communicators comms() {
    return {[this](std::string* error) {
              if (!failed) return CommStatus::kInProgress;
              *error = "ncclRemoteError";
              return CommStatus::kFailed;
            },
            [this] { ++aborts; }};
  }
  WaitClock clock() {
    return {[this] { return now.load(); }, [this] {
              now = now + 0.5;
              std::this_thread::yield();
            }};
  }
  CollectiveWatcher::LostHandler on_lost() {
    return [this](const std::string& line) {
      const std::lock_guard lock(mutex);
      lines.push_back(line);
    };
  }
  std::function<bool()> done_at(double t) {
    return [this, t] { return now.load() >= t; };
  }
};

TEST(CollectiveWatcher, CollectivesThatCompleteEndNothing) {
  FakeRank rank;
  CollectiveWatcher watcher(rank.comms(), 5, 1, rank.on_lost(), rank.clock());
  watcher.watch("layers.0 all_gather (step 1)", rank.done_at(101));
  watcher.watch("layers.1 all_gather (step 1)", rank.done_at(102));
  watcher.watch("layers.1 reduce_scatter (step 1)", rank.done_at(103));
  EXPECT_TRUE(watcher.drain());
  EXPECT_FALSE(watcher.lost());
  EXPECT_EQ(rank.aborts, 0);
  EXPECT_TRUE(rank.lines.empty());
}

TEST(CollectiveWatcher, AHungCollectiveIsNamedAbortedOnceAndEndsTheWatch) {
  FakeRank rank;
  CollectiveWatcher watcher(rank.comms(), 5, 1, rank.on_lost(), rank.clock());
  watcher.watch("layers.0 all_gather (step 2)", rank.done_at(101));
  watcher.watch("layers.3 all_gather (step 2)", [] { return false; });
  EXPECT_FALSE(watcher.drain());
  EXPECT_TRUE(watcher.lost());
  EXPECT_EQ(rank.aborts, 1);
  watcher.watch("layers.4 all_gather (step 2)", [] { return false; });  // ignored once lost
  EXPECT_FALSE(watcher.drain());
  EXPECT_EQ(rank.aborts, 1);
  const std::lock_guard lock(rank.mutex);
  ASSERT_EQ(rank.lines.size(), 1u);
  EXPECT_EQ(rank.lines[0],
            "rank 1 waited 5.0 s in layers.3 all_gather (step 2) past --collective-timeout 5: a peer is lost or "
            "stopped; NCCL communicators aborted");
}

// Two collectives of 4 s each under a 5 s timeout: the second is timed from
// when the first completed (8 s after the first was issued), so neither is
// lost. A prefetched all-gather queued behind compute is not charged for it.
TEST(CollectiveWatcher, EachCollectiveIsTimedFromThePreviousCompletion) {
  FakeRank rank;
  CollectiveWatcher watcher(rank.comms(), 5, 0, rank.on_lost(), rank.clock());
  watcher.watch("layers.0 all_gather (step 1)", rank.done_at(104));
  watcher.watch("layers.1 all_gather (step 1)", rank.done_at(108));
  EXPECT_TRUE(watcher.drain());
  EXPECT_GE(rank.now.load(), 108.0);
  EXPECT_EQ(rank.aborts, 0);
}

TEST(CollectiveWatcher, AnAsyncErrorEndsTheWatchAtOnce) {
  FakeRank rank;
  rank.failed = true;
  CollectiveWatcher watcher(rank.comms(), 300, 0, rank.on_lost(), rank.clock());
  watcher.watch("head reduce_scatter (step 1)", [] { return false; });
  EXPECT_FALSE(watcher.drain());
  EXPECT_EQ(rank.aborts, 1);
  EXPECT_LT(rank.now.load(), 110.0);  // not the 300 s timeout
  const std::lock_guard lock(rank.mutex);
  ASSERT_EQ(rank.lines.size(), 1u);
  EXPECT_NE(rank.lines[0].find("rank 0 in head reduce_scatter (step 1): NCCL reported ncclRemoteError"),
            std::string::npos)
      << rank.lines[0];
}

// A run unwinding from another error destroys the watcher while a
// collective is still pending: the destructor must not wait for it.
TEST(CollectiveWatcher, DestroyingTheWatcherEndsAPendingWaitWithoutAborting) {
  FakeRank rank;
  {
    CollectiveWatcher watcher(rank.comms(), 0, 0, rank.on_lost(), rank.clock());
    watcher.watch("layers.0 all_gather (step 1)", [] { return false; });
  }
  EXPECT_EQ(rank.aborts, 0);
  EXPECT_TRUE(rank.lines.empty());
}

// The CUDA run passes cudaSetDevice as on_thread_start: it must run once, on
// the watcher's own thread, before the first probe (a communicator's status or
// a collective's completion) is polled there.
TEST(CollectiveWatcher, TheThreadStartHookRunsOnceOnTheWatcherThreadBeforeAnyPoll) {
  FakeRank rank;
  std::mutex mutex;
  std::vector<std::pair<std::string, std::thread::id>> calls;  // in order
  auto record = [&](const char* what) {
    const std::lock_guard lock(mutex);
    calls.emplace_back(what, std::this_thread::get_id());
  };
  CollectiveWatcher::Communicators comms = rank.comms();
  comms.status = [&record](std::string*) {
    record("status");
    return CommStatus::kInProgress;
  };
  comms.on_thread_start = [&record] { record("start"); };
  {
    CollectiveWatcher watcher(comms, 5, 0, rank.on_lost(), rank.clock());
    watcher.watch("layers.0 all_gather (step 1)", [&, done = rank.done_at(101)] {
      record("completed");
      return done();
    });
    watcher.watch("layers.1 all_gather (step 1)", rank.done_at(102));
    EXPECT_TRUE(watcher.drain());
  }
  const std::lock_guard lock(mutex);
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls.front().first, "start");
  const std::thread::id watcher_thread = calls.front().second;
  EXPECT_NE(watcher_thread, std::this_thread::get_id());
  int starts = 0;
  for (const auto& [what, thread] : calls) {
    starts += what == "start";
    EXPECT_EQ(thread, watcher_thread) << what << " polled on another thread";
  }
  EXPECT_EQ(starts, 1);
}

TEST(CollectiveWatcher, TheThreadStartHookRunsEvenWhenNothingIsWatched) {
  FakeRank rank;
  std::atomic<int> starts{0};
  CollectiveWatcher::Communicators comms = rank.comms();
  comms.on_thread_start = [&starts] { ++starts; };
  { CollectiveWatcher watcher(comms, 5, 0, rank.on_lost(), rank.clock()); }
  EXPECT_EQ(starts, 1);
}

// A hook that fails (cudaSetDevice on a missing GPU) leaves the thread unable
// to poll: the watch ends as lost, with the reason, and nothing is aborted.
TEST(CollectiveWatcher, AFailingThreadStartHookEndsTheWatchWithItsReason) {
  FakeRank rank;
  CollectiveWatcher::Communicators comms = rank.comms();
  comms.on_thread_start = [] { throw std::runtime_error("cudaSetDevice(3) failed: invalid device ordinal"); };
  CollectiveWatcher watcher(comms, 5, 3, rank.on_lost(), rank.clock());
  watcher.watch("layers.0 all_gather (step 1)", rank.done_at(101));
  EXPECT_FALSE(watcher.drain());
  EXPECT_TRUE(watcher.lost());
  EXPECT_EQ(rank.aborts, 0);
  const std::lock_guard lock(rank.mutex);
  ASSERT_EQ(rank.lines.size(), 1u);
  EXPECT_EQ(rank.lines[0],
            "rank 3: the collective watcher's thread could not start: cudaSetDevice(3) failed: invalid device ordinal");
}

}  // namespace
}  // namespace ragged::backend
