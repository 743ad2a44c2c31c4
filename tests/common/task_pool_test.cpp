// The local task pool: every task answered in its own slot whatever thread
// ran it, tasks handed out dynamically, stop, failures rethrown.

#include "common/task_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <thread>

#include "common/errors.hpp"

namespace ragged {
namespace {

std::vector<std::string> numbered(int n) {
  std::vector<std::string> tasks;
  for (int i = 0; i < n; ++i) tasks.push_back(std::to_string(i));
  return tasks;
}

// One thread that echoes its task and counts the tasks it ran, in list order.
LocalTaskPool counting_echo(std::atomic<int>& ran) {
  return LocalTaskPool(
      [&ran](const std::string& task) {
        ++ran;
        return task;
      },
      1);
}

TEST(LocalTaskPool, EveryResultLandsInItsTasksSlot) {
  LocalTaskPool pool([](const std::string& task) { return "answer " + task; }, 4);
  EXPECT_EQ(pool.workers(), 4);
  const auto results = pool.map(numbered(100));
  ASSERT_EQ(results.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(results[static_cast<size_t>(i)].has_value());
    EXPECT_EQ(*results[static_cast<size_t>(i)], "answer " + std::to_string(i));
  }
  EXPECT_TRUE(pool.map({}).empty());
}

// One slow task holds one thread; the other threads take every other task.
TEST(LocalTaskPool, ASlowTaskDoesNotHoldUpTheRest) {
  std::mutex mutex;
  std::set<std::thread::id> ran_others;
  std::thread::id slow_thread;
  LocalTaskPool pool(
      [&](const std::string& task) {
        if (task == "0") {
          slow_thread = std::this_thread::get_id();
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
        } else {
          const std::lock_guard lock(mutex);
          ran_others.insert(std::this_thread::get_id());
        }
        return task;
      },
      2);
  const auto start = std::chrono::steady_clock::now();
  const auto results = pool.map(numbered(50));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(results.size(), 50u);
  std::printf("50 tasks, one sleeping 300 ms, on 2 threads: %.3f s\n", seconds);  // printed, not a bar
  EXPECT_EQ(ran_others.size(), 1u);  // every other task on the other thread
  EXPECT_EQ(ran_others.count(slow_thread), 0u);
}

TEST(LocalTaskPool, ProgressCountsEveryTaskOnce) {
  LocalTaskPool pool([](const std::string& task) { return task; }, 3);
  std::vector<size_t> seen;
  MapOptions options;
  options.progress = [&](size_t done, size_t total) {
    EXPECT_EQ(total, 20u);
    seen.push_back(done);
  };
  pool.map(numbered(20), options);
  ASSERT_EQ(seen.size(), 20u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i + 1);
}

// With one thread the order is the list's: a stop after task 4 leaves 5.. unrun.
TEST(LocalTaskPool, StopHandsOutNothingMore) {
  std::atomic<int> ran{0};
  LocalTaskPool pool = counting_echo(ran);
  MapOptions options;
  options.stop = [](const std::string& result) { return result == "4"; };
  const auto results = pool.map(numbered(10), options);
  EXPECT_EQ(ran.load(), 5);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(results[i].has_value(), i <= 4) << i;
}

// A skip decided from the results so far (branch and bound): with one
// thread, once task 2 has run every later odd task is left unrun, and
// skipped tasks count as done for the progress.
TEST(LocalTaskPool, SkippedTasksAreLeftUnrunAndCountAsDone) {
  std::atomic<int> ran{0};
  LocalTaskPool pool = counting_echo(ran);
  bool two_done = false;
  size_t last_done = 0;
  MapOptions options;
  options.stop = [&](const std::string& result) {
    two_done = two_done || result == "2";
    return false;
  };
  options.skip = [&](size_t index) { return two_done && index % 2 == 1; };
  options.progress = [&](size_t done, size_t) { last_done = done; };
  const auto results = pool.map(numbered(10), options);
  EXPECT_EQ(ran.load(), 6);  // 0, 1, 2, 4, 6, 8
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(results[i].has_value(), i <= 2 || i % 2 == 0) << i;
  EXPECT_EQ(last_done, 10u);
}

TEST(LocalTaskPool, TheFirstFailureIsRethrownWithItsType) {
  LocalTaskPool pool(
      [](const std::string& task) -> std::string {
        if (task == "3") throw InputError("task 3 is bad");
        return task;
      },
      2);
  EXPECT_THROW(pool.map(numbered(10)), InputError);
}

// for_each_index runs every index once, on the calling thread when given
// one thread, and rethrows a failure after the rest have run.
TEST(ForEachIndex, EveryIndexOnceAndFailuresRethrown) {
  for (const int threads : {1, 4}) {
    std::vector<std::atomic<int>> hits(50);
    for_each_index(hits.size(), threads, [&](size_t i) { ++hits[i]; });
    for (size_t i = 0; i < hits.size(); ++i) EXPECT_EQ(hits[i].load(), 1) << i << " on " << threads;
  }
  std::set<std::thread::id> ids;
  for_each_index(5, 1, [&](size_t) { ids.insert(std::this_thread::get_id()); });
  EXPECT_EQ(ids, std::set<std::thread::id>{std::this_thread::get_id()});
  std::atomic<int> ran{0};
  EXPECT_THROW(for_each_index(20, 3,
                              [&](size_t i) {
                                ++ran;
                                if (i == 7) throw std::runtime_error("seven");
                              }),
               std::runtime_error);
  EXPECT_GE(ran.load(), 8);
}

TEST(TaskQueue, DoneOnlyWhenEveryHandedTaskFinished) {
  const std::vector<std::string> tasks = numbered(2);
  TaskQueue queue(tasks, {});
  EXPECT_FALSE(queue.done());
  const auto first = queue.take();
  const auto second = queue.take();
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(queue.take());
  queue.complete(*second, "b");
  EXPECT_FALSE(queue.done());
  queue.complete(*first, "a");
  EXPECT_TRUE(queue.done());
  const auto results = queue.results();
  EXPECT_EQ(*results[0], "a");
  EXPECT_EQ(*results[1], "b");
}

}  // namespace
}  // namespace ragged
