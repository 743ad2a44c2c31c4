#pragma once
// The MPI test runner (mpi_test_main.cpp): GoogleTest under mpirun. Every
// rank runs every test in the same order, so tests must call the same
// collectives on every rank: use EXPECT_*, not ASSERT_* (an early return on
// one rank leaves the others waiting in a collective).

#include "backend/communicator.hpp"

namespace ragged::backend {

// The communicator of the whole launch, made once by the runner.
Communicator& mpi_test_world();

}  // namespace ragged::backend
