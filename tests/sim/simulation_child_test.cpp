// A child process the parent can watch and stop: cancel, progress, and the
// simulation result's round trip through bytes (what the dashboard runs).

#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::sim {
namespace {

using Clock = std::chrono::steady_clock;

// The child reports its pid as a progress "fraction" (pids are exact in a
// double), then sleeps far longer than the test; another thread cancels, as
// the dashboard's UI thread does, and the waiting thread must notice. The
// latency is printed, not bounded (no wall-clock bar in a unit test): the
// child sleeping for a minute bounds it.
TEST(ChildControl, CancelKillsTheChildAndThrowsCancelled) {
  std::atomic<bool> cancel{false};
  std::atomic<pid_t> child{0};
  ChildControl control;
  control.progress = [&](double value) { child = static_cast<pid_t>(std::lround(value * 1e9)); };
  control.cancelled = [&] { return cancel.load(); };
  const auto work = [](const std::function<void(double)>& progress) -> std::string {
    progress(static_cast<double>(::getpid()) * 1e-9);
    ::sleep(60);
    return "never";
  };
  Clock::time_point cancelled_at;
  std::thread canceller([&] {
    while (child.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the child is asleep by now
    cancelled_at = Clock::now();
    cancel = true;
  });
  EXPECT_THROW(run_in_child(work, control), Cancelled);
  const Clock::time_point thrown_at = Clock::now();
  canceller.join();
  const double latency_ms = std::chrono::duration<double, std::milli>(thrown_at - cancelled_at).count();
  std::printf("cancel to Cancelled: %.1f ms (the parent polls every %d ms)\n", latency_ms, control.poll_ms);
  ASSERT_GT(child.load(), 0);
  errno = 0;
  EXPECT_EQ(::kill(child.load(), 0), -1);  // killed and reaped: no such process
  EXPECT_EQ(errno, ESRCH);
}

// A simulation child dies with its parent: `ragged simulate` killed by
// SIGTERM left its child simulating at 100% CPU. The parent here is a forked
// process running run_in_child; the child sends its pid up a pipe and sleeps.
bool process_gone(pid_t pid) {
  std::FILE* stat = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r");
  if (stat == nullptr) return true;
  int id = 0;
  char name[256] = {}, state = '?';
  const int read = std::fscanf(stat, "%d %255s %c", &id, name, &state);
  std::fclose(stat);
  return read == 3 && (state == 'Z' || state == 'X');  // dead, not yet reaped by whoever adopted it
}

TEST(ChildControl, TheChildDiesWithItsParent) {
  int pids[2];
  ASSERT_EQ(::pipe(pids), 0);
  const pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    ::close(pids[0]);
    try {
      run_in_child([&] {
        const pid_t me = ::getpid();
        [[maybe_unused]] const ssize_t n = ::write(pids[1], &me, sizeof me);
        ::sleep(600);
        return std::string("never");
      });
    } catch (...) {
    }
    ::_exit(0);
  }
  ::close(pids[1]);
  pid_t child = 0;
  ASSERT_EQ(::read(pids[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ::close(pids[0]);
  ASSERT_FALSE(process_gone(child));
  ASSERT_EQ(::kill(parent, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(parent, &status, 0), parent);
  // Not a timing bar: a bound so that a regression fails instead of hanging.
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(60);
  while (!process_gone(child) && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const bool gone = process_gone(child);
  if (!gone) ::kill(child, SIGKILL);
  EXPECT_TRUE(gone) << "the simulation child " << child << " outlived its parent";
}

// A child that sleeps forever (as one does that inherited a lock another
// thread held at the fork) is killed and forked again; the forks count
// themselves in memory shared with the parent.
std::atomic<int>* shared_counter() {
  void* memory = ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return nullptr;
  return new (memory) std::atomic<int>(0);
}

TEST(ChildControl, AChildThatStallsIsForkedAgain) {
  std::atomic<int>* forks = shared_counter();
  ASSERT_NE(forks, nullptr);
  ChildControl control;
  control.stall_seconds = 0.5;
  const auto work = [forks](const std::function<void(double)>&) -> std::string {
    if (++*forks == 1) ::pause();  // the first fork is stuck
    return "done";
  };
  EXPECT_EQ(run_in_child(work, control), "done");
  EXPECT_EQ(forks->load(), 2);
  ::munmap(forks, sizeof *forks);
}

TEST(ChildControl, AChildThatAlwaysStallsFailsNamingTheStall) {
  std::atomic<int>* forks = shared_counter();
  ASSERT_NE(forks, nullptr);
  ChildControl control;
  control.stall_seconds = 0.3;
  const auto work = [forks](const std::function<void(double)>&) -> std::string {
    ++*forks;
    ::pause();
    return "never";
  };
  try {
    run_in_child(work, control);
    ADD_FAILURE() << "a child that never runs must fail";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("used no CPU and sent nothing for 0.3 s, 3 times"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(forks->load(), kForkAttempts);
  ::munmap(forks, sizeof *forks);
}

// A child that works slowly is left alone: a stall is no CPU at all.
TEST(ChildControl, ABusyChildIsNotTakenForAStalledOne) {
  ChildControl control;
  control.stall_seconds = 1;
  const auto work = [](const std::function<void(double)>&) -> std::string {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    volatile uint64_t spins = 0;
    while (std::chrono::steady_clock::now() < until) spins = spins + 1;
    return "worked";
  };
  EXPECT_EQ(run_in_child(work, control), "worked");
}

TEST(ChildControl, ProgressFractionsArriveInOrder) {
  std::vector<double> seen;
  ChildControl control;
  control.progress = [&](double fraction) { seen.push_back(fraction); };
  const auto work = [](const std::function<void(double)>& progress) -> std::string {
    for (int i = 1; i <= 5; ++i) {
      progress(i / 5.0);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));  // one report per parent poll
    }
    return "done";
  };
  EXPECT_EQ(run_in_child(work, control), "done");
  ASSERT_GE(seen.size(), 3u);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i], seen[i - 1]);
  EXPECT_EQ(seen.back(), 1.0);
}

TEST(ChildControl, NiceLowersTheChildsPriority) {
  ChildControl control;
  control.nice = 7;
  const int parent = ::getpriority(PRIO_PROCESS, 0);
  const std::string child = run_in_child(
      [](const auto&) { return std::to_string(::getpriority(PRIO_PROCESS, 0)); }, control);
  EXPECT_EQ(std::stoi(child), std::min(19, parent + 7));
}

TEST(ChildControl, ErrorsComeBackTyped) {
  ChildControl control;
  EXPECT_THROW(run_in_child([](const auto&) -> std::string { throw InputError("bad input"); }, control), InputError);
  EXPECT_THROW(run_in_child([](const auto&) -> std::string { throw std::runtime_error("boom"); }, control),
               InternalError);
  EXPECT_THROW(run_in_child([](const auto&) -> std::string { ::abort(); }, control), InternalError);
}

TEST(SimulationChild, ProgressReachesTheParent) {
  // 32 blocks: thousands of ops, reported every 256.
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::load_scenario("llama3-8b-8xh100"));
  std::vector<double> seen;
  ChildControl control;
  control.progress = [&](double fraction) { seen.push_back(fraction); };
  const SimulationResult result = simulate_in_child(resolved, {}, control);
  EXPECT_GT(result.trace.summary().step_time_s(), 0);
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen.front(), 0.0);
  EXPECT_EQ(seen.back(), 1.0);
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_GE(seen[i], seen[i - 1]);
  }
}

TEST(SimulationChild, ResultRoundTripsThroughBytes) {
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::load_scenario("tiny-llama-4xcpu"));
  ChildUsage usage;
  const SimulationResult result = simulate_in_child(resolved, {}, {}, &usage);
  EXPECT_GT(result.trace.events_size(), 0);
  EXPECT_GT(result.trace.summary().step_time_s(), 0);
  EXPECT_GT(result.stats.flows, 0);
  EXPECT_GT(usage.max_rss_bytes, 0);

  const SimulationResult again = parse_result(serialize_result(result));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(again.trace, result.trace));
  EXPECT_EQ(again.stats.mode, result.stats.mode);
  EXPECT_EQ(again.stats.simulated_nodes, result.stats.simulated_nodes);
  EXPECT_EQ(again.stats.flows, result.stats.flows);
  EXPECT_EQ(again.stats.representative_rank, result.stats.representative_rank);
  EXPECT_EQ(again.stats.wall_seconds, result.stats.wall_seconds);
}

// The summary alone (what validation rows and tuning candidates read) is
// the full result's summary, and the statistics are the same.
TEST(SimulationChild, SummaryAloneIsTheFullResultsSummary) {
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::load_scenario("tiny-llama-4xcpu"));
  const SimulationResult full = simulate_in_child(resolved, {});
  const SimulationSummary alone = simulate_summary_in_child(resolved);
  EXPECT_GT(alone.summary.step_time_s(), 0);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(alone.summary, full.trace.summary()));
  EXPECT_EQ(alone.stats.mode, full.stats.mode);
  EXPECT_EQ(alone.stats.flows, full.stats.flows);
  EXPECT_EQ(alone.stats.simulated_nodes, full.stats.simulated_nodes);
}

TEST(SimulationChild, CancelStopsASimulation) {
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::load_scenario("llama3-8b-8xh100"));
  ChildControl control;
  control.cancelled = [] { return true; };
  EXPECT_THROW(simulate_in_child(resolved, {}, control), Cancelled);
}

}  // namespace
}  // namespace ragged::sim
