// Shampoo sharded over the launch's ranks (np 1 to 5): blocks that cut
// tiny-moe's 128-wide matrices (48 + 48 + 32), roots every second step, the
// factors kept by each matrix's owner across steps; every parameter equals
// the single-process reference bit for bit.

#include <gtest/gtest.h>

#include <cmath>

#include "backend/run.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"
#include "tests/backend/mpi_test_main.hpp"

namespace ragged::backend {
namespace {

TEST(ShampooRun, BlocksAndStaleRootsOnOwnersMatchTheReferenceBitwise) {
  Communicator& world = mpi_test_world();
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario("tiny-moe-4xcpu"), world.size());
  scenarios::Shampoo* shampoo = loaded.written.mutable_training()->mutable_optimizer()->mutable_shampoo();
  shampoo->set_block_size(48);
  shampoo->set_precondition_frequency(2);
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
  RunOptions options;
  options.steps = 3;
  options.check_reference = true;
  options.ordered_reductions = true;  // the reference's sum order: bitwise
  const RunResult r = run(resolved, options, world);
  for (double loss : r.losses) EXPECT_TRUE(std::isfinite(loss)) << loss;
  if (world.rank() == 0) {  // the reference is trained and compared on rank 0
    EXPECT_TRUE(r.reference_ok);
    EXPECT_EQ(r.reference_differing, 0) << r.worst_tensor;
    EXPECT_GT(r.reference_elements, 0);
  }
}

}  // namespace
}  // namespace ragged::backend
