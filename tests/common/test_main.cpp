// The main of every GoogleTest executable but the MPI one (ragged_add_test
// links it): the heap policy of the ragged binaries first
// (common/heap_policy.hpp), so that what a test runs in-process allocates as
// it does in them (a tensor-parallel reference run took 11.0 s of CPU, 6.3 s
// with the policy), then every test.

#include <gtest/gtest.h>

#include "common/heap_policy.hpp"

int main(int argc, char** argv) {
  ragged::keep_freed_memory_in_the_heap();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
