// The MPI task farm under mpirun (np 1 to 5): every task answered in its
// slot, tasks spread over the ranks, several maps in a row, stop, and a
// failure on any rank coming back to rank 0 with its type. Rank 0 maps; the
// other ranks serve until rank 0's farm finishes (its destructor), then
// compare notes through the world communicator.

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "backend/task_farm_mpi.hpp"
#include "common/errors.hpp"
#include "tests/backend/mpi_test_main.hpp"

namespace ragged::backend {
namespace {

Communicator& world() { return mpi_test_world(); }

std::vector<std::string> numbered(int n) {
  std::vector<std::string> tasks;
  for (int i = 0; i < n; ++i) tasks.push_back(std::to_string(i));
  return tasks;
}

// "<task> on <rank>", after a pause long enough for every rank to ask.
TaskWork work_on(int rank) {
  return [rank](const std::string& task) -> std::string {
    if (task == "bad input") throw InputError("task 'bad input' refused on rank " + std::to_string(rank));
    if (task == "bug") throw InternalError("task 'bug' broke on rank " + std::to_string(rank));
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    return task + " on " + std::to_string(rank);
  };
}

TEST(TaskFarm, EveryTaskAnsweredInItsSlotAndSpreadOverTheRanks) {
  const int rank = world().rank(), size = world().size();
  double served = 0;
  {
    MpiTaskFarm farm(work_on(rank), 2);
    EXPECT_EQ(farm.ranks(), size);
    EXPECT_EQ(farm.workers(), 2 * size);
    if (farm.is_root()) {
      std::set<std::string> ranks_seen;
      for (int round = 0; round < 3; ++round) {  // several maps, one farm
        const auto results = farm.map(numbered(60));
        EXPECT_EQ(results.size(), 60u);
        for (int i = 0; i < 60 && i < static_cast<int>(results.size()); ++i) {
          if (!results[static_cast<size_t>(i)]) {
            ADD_FAILURE() << "task " << i << " unanswered";
            continue;
          }
          const std::string& r = *results[static_cast<size_t>(i)];
          EXPECT_EQ(r.rfind(std::to_string(i) + " on ", 0), 0u) << r;
          ranks_seen.insert(r.substr(r.find(" on ") + 4));
        }
      }
      EXPECT_EQ(ranks_seen.size(), static_cast<size_t>(size));  // every rank worked
    } else {
      farm.serve();
      served = 1;
    }
  }
  EXPECT_EQ(world().sum(served), size - 1);  // every worker left serve()
}

TEST(TaskFarm, StopHandsOutNoMoreTasks) {
  const int rank = world().rank();
  MpiTaskFarm farm(work_on(rank), 1);
  if (!farm.is_root()) {
    farm.serve();
    return;
  }
  MapOptions options;
  options.stop = [](const std::string& result) { return result.rfind("5 on ", 0) == 0; };
  const auto results = farm.map(numbered(200), options);
  size_t answered = 0;
  for (const auto& r : results) answered += r.has_value() ? 1 : 0;
  EXPECT_TRUE(results[5].has_value());
  EXPECT_LT(answered, 200u);
  EXPECT_GE(answered, 6u);
}

TEST(TaskFarm, FailuresComeBackToRankZeroWithTheirType) {
  const int rank = world().rank();
  MpiTaskFarm farm(work_on(rank), 1);
  if (!farm.is_root()) {
    farm.serve();
    return;
  }
  std::vector<std::string> tasks = numbered(20);
  tasks[7] = "bad input";
  EXPECT_THROW(farm.map(tasks), InputError);
  tasks[7] = "bug";
  EXPECT_THROW(farm.map(tasks), InternalError);
  // The farm still works after a failed map.
  const auto results = farm.map(numbered(4));
  EXPECT_TRUE(results[3].has_value());
}

}  // namespace
}  // namespace ragged::backend
