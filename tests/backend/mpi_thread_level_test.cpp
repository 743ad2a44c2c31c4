// What Ragged needs of MPI's thread support (backend/mpi_thread_level.hpp),
// checked for every level MPI can provide: the pure check that
// ensure_mpi_initialized() and the watchdog's start run on `provided`.

#include "backend/mpi_thread_level.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "common/errors.hpp"

namespace ragged::backend {
namespace {

constexpr std::array kLevels = {MpiThreadLevel::kSingle, MpiThreadLevel::kFunneled, MpiThreadLevel::kSerialized,
                                MpiThreadLevel::kMultiple};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(MpiThreadLevel, NamesAreMpis) {
  EXPECT_EQ(mpi_thread_level_name(MpiThreadLevel::kSingle), "MPI_THREAD_SINGLE");
  EXPECT_EQ(mpi_thread_level_name(MpiThreadLevel::kFunneled), "MPI_THREAD_FUNNELED");
  EXPECT_EQ(mpi_thread_level_name(MpiThreadLevel::kSerialized), "MPI_THREAD_SERIALIZED");
  EXPECT_EQ(mpi_thread_level_name(MpiThreadLevel::kMultiple), "MPI_THREAD_MULTIPLE");
}

TEST(MpiThreadLevel, CommunicatorsNeedFunneled) {
  EXPECT_EQ(needed_mpi_thread_level(MpiThreadUse::kCommunicators), MpiThreadLevel::kFunneled);
  for (MpiThreadLevel provided : kLevels) {
    const std::string problem = mpi_thread_level_problem(provided, MpiThreadUse::kCommunicators);
    EXPECT_EQ(problem.empty(), provided != MpiThreadLevel::kSingle) << mpi_thread_level_name(provided);
  }
  const std::string problem = mpi_thread_level_problem(MpiThreadLevel::kSingle, MpiThreadUse::kCommunicators);
  EXPECT_TRUE(contains(problem, "provides only MPI_THREAD_SINGLE")) << problem;
  EXPECT_TRUE(contains(problem, "need MPI_THREAD_FUNNELED")) << problem;
  EXPECT_TRUE(contains(problem, "built with thread support")) << problem;
  EXPECT_THROW(check_mpi_thread_level(MpiThreadLevel::kSingle, MpiThreadUse::kCommunicators), InputError);
  EXPECT_NO_THROW(check_mpi_thread_level(MpiThreadLevel::kFunneled, MpiThreadUse::kCommunicators));
}

// The watchdog's thread sends heartbeats while the run's thread is inside a
// collective: only MPI_THREAD_MULTIPLE allows that. Below it the error names
// both ways out: a threaded MPI, or no watchdog.
TEST(MpiThreadLevel, TheWatchdogNeedsMultipleAndSaysHowToDoWithout) {
  EXPECT_EQ(needed_mpi_thread_level(MpiThreadUse::kWatchdog), MpiThreadLevel::kMultiple);
  for (MpiThreadLevel provided : kLevels) {
    const std::string problem = mpi_thread_level_problem(provided, MpiThreadUse::kWatchdog);
    if (provided == MpiThreadLevel::kMultiple) {
      EXPECT_TRUE(problem.empty()) << problem;
      EXPECT_NO_THROW(check_mpi_thread_level(provided, MpiThreadUse::kWatchdog));
      continue;
    }
    EXPECT_TRUE(contains(problem, "needs MPI_THREAD_MULTIPLE")) << problem;
    EXPECT_TRUE(contains(problem, "provides only " + std::string(mpi_thread_level_name(provided)))) << problem;
    EXPECT_TRUE(contains(problem, "ompi_info")) << problem;
    EXPECT_TRUE(contains(problem, "--collective-timeout 0")) << problem;
    EXPECT_THROW(check_mpi_thread_level(provided, MpiThreadUse::kWatchdog), InputError);
  }
}

}  // namespace
}  // namespace ragged::backend
