#pragma once
// Test hooks of `ragged run` and `ragged tune` under mpirun
// (tests/backend/stop_hook_test.sh): the
// rank named by RAGGED_TEST_STOP_RANK_AT_STARTUP stops itself before MPI
// starts, the one named by RAGGED_TEST_STOP_RANK_AT_EXIT once its work is
// done, as a rank whose node froze would, so the start-up deadline
// (backend/startup_deadline.hpp) or the exit deadline
// (backend/exit_deadline.hpp) is what ends the job.

#include <csignal>
#include <cstdlib>
#include <string>

#include "backend/communicator.hpp"

namespace ragged::cli {

inline void stop_here_if_asked(const char* variable = "RAGGED_TEST_STOP_RANK_AT_STARTUP") {
  const char* rank = std::getenv(variable);
  if (rank != nullptr && std::to_string(backend::launcher_rank()) == rank) std::raise(SIGSTOP);
}

}  // namespace ragged::cli
