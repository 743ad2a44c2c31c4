// A shard's initial values are the model's, whichever thread wrote them:
// UnitShard::initialise splits tensors of a million elements and more over
// the machine's threads, and the result must be the serial loop's bit for bit.

#include <gtest/gtest.h>

#include <algorithm>

#include "backend/reference.hpp"
#include "backend/run_support.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::backend {
namespace {

TEST(UnitShardInitialise, ThreadedPiecesAreTheSerialValues) {
  // A vocabulary of 8,192 at width 256: a 2.1M-element embedding, cut into pieces.
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario("tiny-llama-4xcpu"), 1);
  loaded.written.mutable_model()->mutable_inline_spec()->set_vocab_size(8192);
  const planner::ResolvedScenario r = planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
  const planner::Plan plan = plan_for_run(r, models::DType::kF32);
  std::vector<UnitShard> shards = make_shards(r.model, plan, 0, 1234, &r.whole(), 0);
  auto comm = make_local_communicator();
  const ModelParams mine = gather_params(shards, *comm);
  const ModelParams whole = initial_params(r.whole(), 1234);
  ASSERT_EQ(mine.size(), whole.size());
  size_t largest = 0;
  for (size_t t = 0; t < whole.size(); ++t) {
    largest = std::max(largest, whole[t].size());
    EXPECT_EQ(mine[t], whole[t]) << "tensor " << t;
  }
  EXPECT_GE(largest, size_t{1} << 21);
}

}  // namespace
}  // namespace ragged::backend
