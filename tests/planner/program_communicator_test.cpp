// Communicators in the Program: the baselines' shard-group collectives share
// one communicator, which runs them in issue order, so each waits for the
// previous whatever its stream; ragged gives each stream its own, so its
// prefetching all-gathers never wait for a reduce-scatter.

#include <gtest/gtest.h>

#include <vector>

#include "planner/strategy_traits.hpp"
#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::depends_on;
using program_test::kAllStrategies;
using program_test::ProgramSetup;
using program_test::strategy_field;

std::vector<const Op*> shard_collectives(const Program& program) {
  std::vector<const Op*> out;
  for (const Op& op : program.ops) {
    if (op.group == Group::kShard) out.push_back(&op);
  }
  return out;
}

TEST(ProgramCommunicators, OneCommunicatorRunsTheShardCollectivesInIssueOrder) {
  for (scenarios::Strategy strategy : kAllStrategies) {
    ProgramSetup setup(strategy_field(strategy) + "gradient_accumulation_steps: 2");
    const Program program = setup.build();
    const std::vector<const Op*> collectives = shard_collectives(program);
    ASSERT_GT(collectives.size(), 10u);
    int waits_across_streams = 0;
    int serialised = 0;
    for (size_t i = 1; i < collectives.size(); ++i) {
      const Op& op = *collectives[i];
      const Op& previous = *collectives[i - 1];
      if (depends_on(program, op.id, previous.id, true)) ++serialised;
      if (previous.stream != op.stream && depends_on(program, op.id, previous.id)) ++waits_across_streams;
    }
    if (strategy_traits(strategy).one_communicator) {
      EXPECT_EQ(serialised, static_cast<int>(collectives.size()) - 1) << scenarios::Strategy_Name(strategy);
      // Through explicit waits where the stream changes.
      EXPECT_GT(waits_across_streams, 0) << scenarios::Strategy_Name(strategy);
    } else {
      // Some all-gather is free to run beside the reduce-scatter issued before it.
      EXPECT_LT(serialised, static_cast<int>(collectives.size()) - 1) << scenarios::Strategy_Name(strategy);
    }
  }
}

TEST(ProgramCommunicators, TheBaselinesShareOneAndRaggedDoesNot) {
  EXPECT_TRUE(strategy_traits(scenarios::FSDP1).one_communicator);
  EXPECT_TRUE(strategy_traits(scenarios::FSDP2).one_communicator);
  EXPECT_TRUE(strategy_traits(scenarios::ZERO3).one_communicator);
  EXPECT_TRUE(strategy_traits(scenarios::MEGATRON).one_communicator);
  EXPECT_FALSE(strategy_traits(scenarios::RAGGED).one_communicator);
  EXPECT_FALSE(strategy_traits(scenarios::VESCALE_PAPER).one_communicator);
}

}  // namespace
}  // namespace ragged::planner
