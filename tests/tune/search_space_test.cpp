// The search space: what a scenario and its constraints allow, and the
// constraints no search can meet (one clear InputError each).

#include "tune/search_space.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "common/errors.hpp"
#include "scenarios/scenario_rules.hpp"
#include "tests/tune/tune_test_util.hpp"
#include "tune/candidate_scenario.hpp"

namespace ragged::tune {
namespace {

using testing::small_scenario;

// 2 x 4 GPUs, 2 sequences per GPU: six strategies, shard groups 4 (HSDP)
// and 8, micro-batches 1 and 2, three checkpointing modes, prefetch 1 and
// 2, reshard or not.
TEST(SearchSpace, DefaultSpaceIsTheProductOfItsChoices) {
  const std::vector<Candidate> all = enumerate_candidates(small_scenario(), {});
  EXPECT_EQ(all.size(), 6u * 2 * 2 * 3 * 2 * 2);
  std::set<std::tuple<int, int64_t, int64_t, int, int, bool>> distinct;
  for (const Candidate& c : all) {
    EXPECT_EQ(c.micro_batch * c.grad_accum, 2);
    EXPECT_TRUE(c.shard_group == 4 || c.shard_group == 8) << c.shard_group;
    EXPECT_TRUE(c.granularity.empty());
    distinct.insert({c.strategy, c.shard_group, c.micro_batch, c.checkpointing, c.prefetch, c.reshard});
  }
  EXPECT_EQ(distinct.size(), all.size());
}

TEST(SearchSpace, GlobalBatchAndAccumulationLimitChooseTheMicroBatches) {
  Constraints c;
  c.strategies = {scenarios::FSDP2};
  c.global_batch_tokens = 32 * 1024;  // 32 sequences: 4 per GPU
  std::set<int64_t> micro;
  for (const Candidate& candidate : enumerate_candidates(small_scenario(), c)) micro.insert(candidate.micro_batch);
  EXPECT_EQ(micro, (std::set<int64_t>{1, 2, 4}));
  c.max_grad_accum = 2;
  micro.clear();
  for (const Candidate& candidate : enumerate_candidates(small_scenario(), c)) {
    micro.insert(candidate.micro_batch);
    EXPECT_LE(candidate.grad_accum, 2);
  }
  EXPECT_EQ(micro, (std::set<int64_t>{2, 4}));
  // A shorter sequence keeps the tokens: twice the sequences.
  c.sequence_length = 512;
  EXPECT_EQ(batch_shape(small_scenario().scenario, c).per_gpu_sequences, 8);
}

TEST(SearchSpace, GranularitiesVaryOnlyForTheRaggedShardStrategies) {
  Constraints c;
  c.strategies = {scenarios::RAGGED, scenarios::FSDP2};
  c.granularities = {"element", "rows:16"};
  size_t ragged = 0, fsdp2 = 0;
  for (const Candidate& candidate : enumerate_candidates(small_scenario(), c)) {
    if (candidate.strategy == scenarios::RAGGED) {
      ++ragged;
      EXPECT_FALSE(candidate.granularity.empty());
    } else {
      ++fsdp2;
      EXPECT_TRUE(candidate.granularity.empty());
    }
  }
  EXPECT_EQ(ragged, 2 * fsdp2);
}

TEST(SearchSpace, ShardGroupsThatDoNotDivideTheGpusAreLeftOut) {
  Constraints c;
  c.shard_groups = {2, 3, 8};
  std::set<int64_t> groups;
  for (const Candidate& candidate : enumerate_candidates(small_scenario(), c)) groups.insert(candidate.shard_group);
  EXPECT_EQ(groups, (std::set<int64_t>{2, 8}));
  c.shard_groups = {3, 5};
  EXPECT_THROW(enumerate_candidates(small_scenario(), c), InputError);
}

// Each bad constraint is one InputError whose message names the problem.
TEST(SearchSpace, BadConstraintsAreOneClearError) {
  auto message = [](const Constraints& c) -> std::string {
    try {
      enumerate_candidates(small_scenario(), c);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  Constraints full_headroom;
  full_headroom.headroom = 1.0;
  EXPECT_NE(message(full_headroom).find("below 100%"), std::string::npos) << message(full_headroom);
  Constraints negative_headroom;
  negative_headroom.headroom = -0.1;
  EXPECT_NE(message(negative_headroom).find("at least 0%"), std::string::npos);
  Constraints ragged_batch;
  ragged_batch.global_batch_tokens = 1000;
  EXPECT_NE(message(ragged_batch).find("not a whole number of 1024-token sequences"), std::string::npos);
  Constraints indivisible;
  indivisible.global_batch_tokens = 3 * 1024;
  EXPECT_NE(message(indivisible).find("does not divide over 8 GPUs"), std::string::npos) << message(indivisible);
  Constraints no_micro_batch;
  no_micro_batch.micro_batches = {3};
  EXPECT_NE(message(no_micro_batch).find("no micro-batch divides"), std::string::npos);
  Constraints too_much_accumulation;
  too_much_accumulation.global_batch_tokens = 64 * 1024;  // 8 per GPU
  too_much_accumulation.micro_batches = {1};
  too_much_accumulation.max_grad_accum = 4;
  EXPECT_NE(message(too_much_accumulation).find("at most 4 accumulation steps"), std::string::npos);
  Constraints bad_granularity;
  bad_granularity.granularities = {"rows:0"};
  EXPECT_NE(message(bad_granularity).find("granularity"), std::string::npos);
}

// A candidate's settings land in the scenario's training fields.
TEST(CandidateScenario, WritesEveryKnob) {
  const Candidate c{scenarios::ZERO3, 4, 1, 2, scenarios::FULL, 2, false, ""};
  const scenarios::Training t = candidate_scenario(small_scenario(), c, 512).scenario.training();
  EXPECT_EQ(t.strategy(), scenarios::ZERO3);
  EXPECT_EQ(t.shard_group_size(), 4);
  EXPECT_EQ(t.replicate_group_size(), 2);
  EXPECT_EQ(t.micro_batch_size(), 1);
  EXPECT_EQ(t.gradient_accumulation_steps(), 2);
  EXPECT_EQ(t.sequence_length(), 512);
  EXPECT_EQ(t.activation_checkpointing(), scenarios::FULL);
  EXPECT_EQ(t.prefetch_depth(), 2);
  EXPECT_FALSE(t.reshard_after_forward());
  const Candidate rows{scenarios::RAGGED, 8, 2, 1, scenarios::NONE, 1, true, "rows:16"};
  const scenarios::Training r = candidate_scenario(small_scenario(), rows, 1024).scenario.training();
  EXPECT_EQ(r.granularity().default_spec().kind(), scenarios::ROWS);
  EXPECT_EQ(r.granularity().default_spec().rows(), 16);
  EXPECT_EQ(describe(c, 8),
            "zero3, shard group 4 x 2 replicas, micro-batch 1 x 2, full checkpointing, prefetch 2, no reshard");
}

}  // namespace
}  // namespace ragged::tune
