// The exit deadline's line (backend/exit_deadline.hpp): the ranks that did
// not end, named, a long list shortened. The meeting itself runs under
// mpirun: backend.run.np2.stopped_at_exit_times_out (stop_hook_test.sh).

#include <vector>

#include <gtest/gtest.h>

#include "backend/exit_deadline.hpp"

namespace ragged::backend {
namespace {

TEST(ExitDeadline, TheLineNamesTheRanksThatDidNotEnd) {
  EXPECT_EQ(ranks_that_did_not_end_line({1}, 3, "--collective-timeout"),
            "ragged: error: rank 0: rank 1 did not reach the end of the job within --collective-timeout 3 s (stopped, "
            "or its node hung); ending the job");
  EXPECT_EQ(ranks_that_did_not_end_line({2, 5, 7}, 600, "--task-timeout"),
            "ragged: error: rank 0: ranks 2, 5 and 7 did not reach the end of the job within --task-timeout 600 s "
            "(stopped, or its node hung); ending the job");
}

TEST(ExitDeadline, AThousandMissingRanksStayOneShortLine) {
  std::vector<int> missing;
  for (int r = 1; r <= 1000; ++r) missing.push_back(r);
  const std::string line = ranks_that_did_not_end_line(missing, 300, "--collective-timeout");
  EXPECT_NE(line.find("ranks 1, 2, 3, 4, 5, 6, 7, 8 and 992 more did not"), std::string::npos) << line;
  EXPECT_LE(line.size(), 300u);
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(ExitDeadline, WithoutAnMpiLaunchNothingIsArmedAndTheMeetingReturns) {
  arm_exit_deadline(3);  // this test process was not started by mpirun
  meet_at_exit();        // must return at once, touching no MPI
  SUCCEED();
}

}  // namespace
}  // namespace ragged::backend
