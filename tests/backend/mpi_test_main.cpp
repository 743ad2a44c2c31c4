// Runs the MPI tests under mpirun: GoogleTest on every rank, full output from
// rank 0 only, failures of other ranks on stderr with their rank. A test
// fails if it failed on any rank; rank 0 prints one summary line
// ("N passed, N failed") and every rank exits non-zero if any test failed.
// MPI is initialised by make_mpi_communicator() and finalised at exit, as in
// `ragged run`.

#include "tests/backend/mpi_test_main.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>

namespace ragged::backend {
namespace {

std::unique_ptr<Communicator> world;

// Prints failed assertions of a rank other than 0.
class RankFailurePrinter final : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestStart(const testing::TestInfo& info) override {
    test_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s: %s:%d: %s\n", rank_, test_.c_str(),
                 result.file_name() ? result.file_name() : "?", result.line_number(), result.summary());
  }

 private:
  int rank_;
  std::string test_;
};

}  // namespace

Communicator& mpi_test_world() { return *world; }

}  // namespace ragged::backend

int main(int argc, char** argv) {
  using ragged::backend::world;
  testing::InitGoogleTest(&argc, argv);
  try {
    world = ragged::backend::make_mpi_communicator();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "test_backend_mpi: cannot start MPI: %s\n", error.what());
    return 1;
  }
  const int rank = world->rank();
  const int ranks = world->size();
  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new ragged::backend::RankFailurePrinter(rank));
  }
  [[maybe_unused]] const int this_rank_failed = RUN_ALL_TESTS();  // the group's verdict is below

  int passed = 0, failed = 0;
  std::string failures;
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const testing::TestSuite& suite = *unit.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const testing::TestInfo& info = *suite.GetTestInfo(t);
      if (!info.should_run()) continue;
      const double failed_on = world->sum(info.result()->Failed() ? 1.0 : 0.0);
      if (failed_on == 0.0) {
        ++passed;
        continue;
      }
      ++failed;
      failures += "  FAILED " + std::string(suite.name()) + "." + info.name() + " on " +
                  std::to_string(static_cast<int>(failed_on)) + " of " + std::to_string(ranks) + " ranks\n";
    }
  }
  if (rank == 0) {
    std::fputs(failures.c_str(), stdout);
    std::printf("test_backend_mpi on %d ranks: %d passed, %d failed\n", ranks, passed, failed);
    std::fflush(stdout);
  }
  world.reset();  // free the communicator before MPI_Finalize runs at exit
  return failed == 0 ? 0 : 1;
}
