// The search space: what a scenario and its constraints allow, and the
// constraints no search can meet (one clear InputError each).

#include "tune/search_space.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "common/errors.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_rules.hpp"
#include "tests/tune/tune_test_util.hpp"
#include "tune/candidate_scenario.hpp"

namespace ragged::tune {
namespace {

using testing::small_scenario;

// The tiny mixture of experts' space at these tp and ep sizes, no cp or stages.
Constraints moe_constraints(std::vector<int64_t> tps, std::vector<int64_t> eps) {
  Constraints c;
  c.tps = std::move(tps);
  c.eps = std::move(eps);
  c.pps = {1};
  c.cps = {1};
  return c;
}

// 2 x 4 GPUs, 2 sequences per GPU: six strategies, shard groups 4 (HSDP)
// and 8, micro-batches 1 and 2, three checkpointing modes, prefetch 1 and
// 2, reshard or not; FSDP alone, which trains this batch.
TEST(SearchSpace, DefaultSpaceIsTheProductOfItsChoices) {
  const std::vector<Candidate> all = enumerate_candidates(small_scenario(), {});
  EXPECT_EQ(all.size(), 6u * 2 * 2 * 3 * 2 * 2);
  for (const Candidate& c : all) EXPECT_EQ(c.tp, 1);
}

// With tensor parallelism's default sizes, three meshes (tp 1, 2 and 4: the
// tiny model's 8 heads, 4 key/value heads and 704-wide MLP split, a node
// holds 4; its 1,024-token sequences get no cp; no experts, no ep):
// tp 1: 2 sequences per rank (micro-batch 1, 2), shard groups 4 (HSDP) and 8;
// tp 2: 4 per data-parallel rank (1, 2, 4), groups 2 and 4 of its 4 ranks;
// tp 4: 8 (1, 2, 4, 8), groups 1 and 2.
TEST(SearchSpace, MeshSpaceIsTheProductOfItsChoices) {
  Constraints tensor_parallel = with_tensor_parallel_defaults({});
  tensor_parallel.pps = {1};
  const std::vector<Candidate> all = enumerate_candidates(small_scenario(), tensor_parallel);
  EXPECT_EQ(all.size(), 6u * (2 * 2 + 2 * 3 + 2 * 4) * 3 * 2 * 2);
  std::set<std::tuple<int, int64_t, int64_t, int64_t, int, int, bool>> distinct;
  for (const Candidate& c : all) {
    EXPECT_EQ(c.micro_batch * c.grad_accum * 8 / c.tp, 16) << "every candidate trains the global batch";
    EXPECT_TRUE(c.tp == 1 || c.tp == 2 || c.tp == 4) << c.tp;
    EXPECT_EQ(c.cp, 1);
    EXPECT_EQ(c.ep, 1);
    EXPECT_EQ(8 / c.tp % c.shard_group, 0) << c.shard_group;
    EXPECT_TRUE(c.granularity.empty());
    distinct.insert({c.strategy, c.tp, c.shard_group, c.micro_batch, c.checkpointing, c.prefetch, c.reshard});
  }
  EXPECT_EQ(distinct.size(), all.size());
}

// A global batch smaller than one sequence per GPU needs ranks that share
// sequences: only meshes whose data-parallel ranks divide it are searched.
TEST(SearchSpace, AGlobalBatchBelowTheGpusIsTrainedByAMesh) {
  Constraints c;
  c.global_batch_tokens = 2 * 1024;  // 2 sequences on 8 GPUs
  std::set<int64_t> tps;
  for (const Candidate& candidate : enumerate_candidates(small_scenario(), c)) {
    tps.insert(candidate.tp);
    EXPECT_EQ(candidate.micro_batch * candidate.grad_accum * 8 / (candidate.tp * candidate.pp), 2);
  }
  EXPECT_EQ(tps, (std::set<int64_t>{4}));
  c.tps = {1, 2};
  try {
    enumerate_candidates(small_scenario(), c);
    ADD_FAILURE() << "no mesh of tp 1 or 2 trains 2 sequences on 8 GPUs";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tp 2 x cp 1: 2 sequences over 4 data-parallel ranks"), std::string::npos)
        << e.what();
  }
}

TEST(SearchSpace, MeshDimensionsTheModelCannotSplitAreLeftOut) {
  Constraints c;
  c.tps = {1, 3, 8};  // 8 heads: 3 does not divide them; 8 is larger than the 4 key/value heads but a multiple
  c.strategies = {scenarios::RAGGED};
  std::set<int64_t> tps;
  for (const Candidate& candidate : enumerate_candidates(small_scenario(), c)) tps.insert(candidate.tp);
  EXPECT_EQ(tps, (std::set<int64_t>{1, 8}));
  c.tps = {1};
  c.eps = {2};  // a dense model
  EXPECT_THROW(enumerate_candidates(small_scenario(), c), InputError);
}

TEST(SearchSpace, GlobalBatchAndAccumulationLimitChooseTheMicroBatches) {
  Constraints c;
  c.strategies = {scenarios::FSDP2};
  c.tps = {1};
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
  EXPECT_EQ(batch_shape(small_scenario().scenario, c).global_sequences, 64);
  EXPECT_EQ(batch_shape(small_scenario().scenario, c).tokens_per_gpu(), 4 * 1024);
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
  c.tps = {1};
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
  indivisible.pps = {1};  // two stages of tp 4 would train it (PipelineStagesTrainWhatDataParallelismCannot)
  EXPECT_NE(message(indivisible).find("no configuration trains the global batch of 3 sequences"), std::string::npos)
      << message(indivisible);
  EXPECT_NE(message(indivisible).find("tp 1 x cp 1: 3 sequences over 8 data-parallel ranks"), std::string::npos);
  Constraints no_micro_batch;
  no_micro_batch.tps = {1};
  no_micro_batch.micro_batches = {3};
  EXPECT_NE(message(no_micro_batch).find("no micro-batch divides"), std::string::npos);
  Constraints too_much_accumulation;
  too_much_accumulation.global_batch_tokens = 64 * 1024;  // 8 per GPU
  too_much_accumulation.micro_batches = {1};
  too_much_accumulation.tps = {1};
  too_much_accumulation.max_grad_accum = 4;
  EXPECT_NE(message(too_much_accumulation).find("at most 4 accumulation steps"), std::string::npos);
  Constraints bad_granularity;
  bad_granularity.granularities = {"rows:0"};
  EXPECT_NE(message(bad_granularity).find("granularity"), std::string::npos);
}

// 3 sequences on 8 GPUs: no data-parallel split of them, but one copy of
// the model as 2 stages of tp 4 runs them as 3 micro-batches (1F1B: 3 is
// not a whole number of rounds of 2 for interleaved 1F1B); the stages keep
// their parameters gathered (no reshard) and gather once a step (one
// prefetch depth unless --prefetch lists more).
TEST(SearchSpace, PipelineStagesTrainWhatDataParallelismCannot) {
  Constraints c;
  c.global_batch_tokens = 3 * 1024;
  const std::vector<Candidate> all = enumerate_candidates(small_scenario(), c);
  ASSERT_FALSE(all.empty());
  for (const Candidate& candidate : all) {
    EXPECT_EQ(candidate.tp, 4);
    EXPECT_EQ(candidate.pp, 2);
    EXPECT_EQ(candidate.micro_batch * candidate.grad_accum, 3);
    EXPECT_EQ(candidate.schedule, scenarios::ONE_F_ONE_B);
    EXPECT_FALSE(candidate.reshard);
    EXPECT_EQ(candidate.prefetch, 1) << "the stage gathers once a step: one prefetch depth unless asked";
  }
  c.prefetch_depths = {1, 2};
  std::set<int> prefetches;
  for (const Candidate& candidate : enumerate_candidates(small_scenario(), c)) prefetches.insert(candidate.prefetch);
  EXPECT_EQ(prefetches, (std::set<int>{1, 2}));
  c.prefetch_depths.clear();
  // 2 sequences per copy: 2 rounds of 2 stages, interleaved too.
  c.global_batch_tokens = 4 * 1024;
  c.tps = {4};
  c.pps = {2};
  // Interleaved over the most chunks the 4 blocks, the embedding and the
  // head make: 3 a stage (the embedding and the head alone).
  std::set<std::pair<scenarios::PipelineSchedule, int64_t>> schedules;
  for (const Candidate& candidate : enumerate_candidates(small_scenario(), c)) {
    schedules.insert({candidate.schedule, candidate.virtual_stages});
    EXPECT_GE(candidate.grad_accum, 2) << "a micro-batch per stage at least";
  }
  EXPECT_EQ(schedules, (std::set<std::pair<scenarios::PipelineSchedule, int64_t>>{
                           {scenarios::ONE_F_ONE_B, 1}, {scenarios::INTERLEAVED_1F1B, 3}}));
  // Four stages cannot each hold two chunks of the 4 blocks, the embedding and the head.
  c.tps = {2};
  c.pps = {4};
  c.global_batch_tokens = 8 * 1024;
  for (const Candidate& candidate : enumerate_candidates(small_scenario(), c)) {
    EXPECT_EQ(candidate.schedule, scenarios::ONE_F_ONE_B);
  }
}

// A scenario written for Megatron's DDP (or torch's) keeps its strategy's
// block only in candidates of that strategy: the others drop it, so they
// resolve instead of failing validation one and all.
TEST(CandidateScenario, AnotherStrategysCandidateDropsTheScenariosStrategyBlock) {
  scenarios::LoadedScenario megatron = small_scenario();
  megatron.written.mutable_training()->set_strategy(scenarios::MEGATRON_DDP);
  megatron.written.mutable_training()->mutable_megatron_ddp()->set_overlap_grad_reduce(true);
  megatron = scenarios::rebuild(std::move(megatron));
  scenarios::LoadedScenario torch_ddp = small_scenario();
  torch_ddp.written.mutable_training()->set_strategy(scenarios::DDP);
  torch_ddp.written.mutable_training()->mutable_ddp()->set_bucket_cap_mb(50);
  torch_ddp.written.mutable_training()->clear_shard_group_size();
  torch_ddp = scenarios::rebuild(std::move(torch_ddp));
  Candidate c;
  c.shard_group = 8;
  c.strategy = scenarios::RAGGED;
  for (const scenarios::LoadedScenario* base : {&megatron, &torch_ddp}) {
    const scenarios::LoadedScenario ragged = candidate_scenario(*base, c, 1024);
    EXPECT_FALSE(ragged.written.training().has_megatron_ddp());
    EXPECT_FALSE(ragged.written.training().has_ddp());
    EXPECT_NO_THROW(planner::resolve_scenario(ragged));
  }
  c.strategy = scenarios::MEGATRON_DDP;
  EXPECT_TRUE(candidate_scenario(megatron, c, 1024).written.training().megatron_ddp().overlap_grad_reduce());
  c.strategy = scenarios::DDP;
  c.shard_group = 1;
  EXPECT_EQ(candidate_scenario(torch_ddp, c, 1024).written.training().ddp().bucket_cap_mb(), 50);
}

// The stack's dispatcher, routing and tp overlap are the runtime's, not the
// search's: a candidate keeps them (the overlap only where it has tp).
TEST(CandidateScenario, ACandidateKeepsTheStacksDispatcherAndOverlap) {
  scenarios::LoadedScenario base = small_scenario();
  scenarios::Mesh* mesh = base.written.mutable_training()->mutable_mesh();
  mesh->set_tp(2);
  mesh->set_tp_overlap(scenarios::ASYNC_TP);
  mesh->set_expert_dispatcher(scenarios::DEEPEP);
  mesh->set_expert_routing(scenarios::CONSECUTIVE);
  base.written.mutable_training()->set_shard_group_size(4);
  base = scenarios::rebuild(std::move(base));
  Candidate c;
  c.tp = 2;
  c.shard_group = 4;
  const scenarios::Mesh kept = candidate_scenario(base, c, 1024).written.training().mesh();
  EXPECT_EQ(kept.tp_overlap(), scenarios::ASYNC_TP);
  EXPECT_EQ(kept.expert_dispatcher(), scenarios::DEEPEP);
  EXPECT_EQ(kept.expert_routing(), scenarios::CONSECUTIVE);
  c.tp = 1;
  c.shard_group = 8;
  const scenarios::LoadedScenario plain = candidate_scenario(base, c, 1024);
  EXPECT_EQ(plain.written.training().mesh().tp_overlap(), scenarios::TP_OVERLAP_UNSPECIFIED);
  EXPECT_EQ(plain.written.training().mesh().expert_dispatcher(), scenarios::DEEPEP);
  EXPECT_NO_THROW(planner::resolve_scenario(plain));
}

// The experts' own checkpointing (Megatron's --recompute-modules moe) is a
// checkpointing choice, which the search makes: a candidate leaves it to the
// block, so one without ep (where it is an error) is still valid.
// A candidate of 2 stages under interleaved 1F1B, 4 micro-batches, each
// stage's parameters kept gathered.
Candidate interleaved_pp2(int64_t shard_group) {
  Candidate c;
  c.pp = 2;
  c.shard_group = shard_group;
  c.grad_accum = 4;
  c.reshard = false;
  c.schedule = scenarios::INTERLEAVED_1F1B;
  return c;
}

// Mixtral 8x7B on 2 nodes of 8 H100, its training block `training`.
scenarios::LoadedScenario mixtral_on_16_h100(const std::string& training) {
  return scenarios::parse_scenario("model { catalog: \"mixtral-8x7b\" }\n"
                                   "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 2 }\n"
                                   "training { " +
                                       training + " }\n",
                                   scenarios::ScenarioFormat::kText, "moe.textproto", RAGGED_SOURCE_DIR);
}

TEST(CandidateScenario, ACandidateLeavesTheExpertsCheckpointingToItsBlock) {
  const scenarios::LoadedScenario base =
      mixtral_on_16_h100("micro_batch_size: 1 sequence_length: 4096 mesh { ep: 8 } experts { checkpointing: FULL }");
  ASSERT_NO_THROW(planner::resolve_scenario(base));
  Candidate c;
  c.shard_group = 16;
  c.checkpointing = scenarios::SELECTIVE;
  const scenarios::LoadedScenario candidate = candidate_scenario(base, c, 4096);
  EXPECT_EQ(candidate.written.training().experts().checkpointing(), scenarios::CHECKPOINTING_UNSPECIFIED);
  EXPECT_NO_THROW(planner::resolve_scenario(candidate));
}

// Megatron-Core's overlapped all-to-alls are a choice the search makes: a
// candidate writes them as it says (with the scenario's delayed weight
// gradients kept beside them), and one without them drops both, so every
// candidate loads; expert_overlap_runs says where they can run (Megatron's
// DDP, ep, interleaved stages or none, no full recompute).
TEST(CandidateScenario, ACandidateWritesTheOverlappedAllToAllsItWasGiven) {
  const scenarios::LoadedScenario base = mixtral_on_16_h100(
      "strategy: MEGATRON_DDP micro_batch_size: 1 sequence_length: 4096 gradient_accumulation_steps: 4 "
      "mesh { ep: 8 pp: 2 } pipeline { schedule: INTERLEAVED_1F1B virtual_stages: 2 } "
      "megatron_ddp { gradient_accumulation_fusion: true } "
      "experts { overlap_all_to_all: true delay_weight_gradients: true }");
  ASSERT_NO_THROW(planner::resolve_scenario(base));
  Candidate c = interleaved_pp2(8);
  c.strategy = scenarios::MEGATRON_DDP;
  c.ep = 8;
  c.checkpointing = scenarios::SELECTIVE;
  c.expert_overlap = true;
  ASSERT_TRUE(expert_overlap_runs(c));
  const scenarios::LoadedScenario overlapped = candidate_scenario(base, c, 4096);
  EXPECT_TRUE(overlapped.written.training().experts().overlap_all_to_all());
  EXPECT_TRUE(overlapped.written.training().experts().delay_weight_gradients());
  EXPECT_NE(describe(c, 16).find("(all-to-alls overlapped)"), std::string::npos) << describe(c, 16);
  EXPECT_NO_THROW(planner::resolve_scenario(overlapped));
  Candidate unstaged = c;  // Megatron's combined step without pipeline stages
  unstaged.pp = 1;
  unstaged.shard_group = 16;
  EXPECT_TRUE(expert_overlap_runs(unstaged));
  EXPECT_TRUE(candidate_scenario(base, unstaged, 4096).written.training().experts().overlap_all_to_all());
  Candidate plain = c;
  plain.expert_overlap = false;
  const scenarios::LoadedScenario without = candidate_scenario(base, plain, 4096);
  EXPECT_FALSE(without.written.training().experts().overlap_all_to_all());
  EXPECT_FALSE(without.written.training().experts().delay_weight_gradients());
  EXPECT_NO_THROW(planner::resolve_scenario(without));
  for (const auto& change : std::vector<std::function<void(Candidate&)>>{
           [](Candidate& d) { d.strategy = scenarios::FSDP2; },
           [](Candidate& d) { d.schedule = scenarios::ONE_F_ONE_B; },
           [](Candidate& d) { d.checkpointing = scenarios::FULL; }, [](Candidate& d) { d.experts_recompute = true; },
           [](Candidate& d) { d.ep = 1; },
           [](Candidate& d) {
             d.strategy = scenarios::MEGATRON;
             d.pp = 1;
             d.shard_group = 16;
           }}) {
    Candidate d = c;
    change(d);
    EXPECT_FALSE(expert_overlap_runs(d)) << describe(d, 16);
  }
}

// The search tries the overlapped all-to-alls beside every candidate that
// can run them (one each), none elsewhere, and only as asked.
TEST(SearchSpace, TheOverlappedAllToAllsAreTriedWhereTheyRun) {
  const scenarios::LoadedScenario base =
      mixtral_on_16_h100("strategy: MEGATRON_DDP micro_batch_size: 1 sequence_length: 4096 mesh { ep: 8 }");
  Constraints c;
  c.strategies = {scenarios::MEGATRON_DDP, scenarios::FSDP2};
  c.tps = {1};
  c.cps = {1};
  c.pps = {1};
  c.eps = {1, 8};
  c.global_batch_tokens = 64 * 4096;
  int overlapped = 0, runnable = 0;
  const std::vector<Candidate> all = enumerate_candidates(base, c);
  for (const Candidate& cand : all) {
    if (cand.expert_overlap) {
      ++overlapped;
      EXPECT_TRUE(expert_overlap_runs(cand)) << describe(cand, 16);
      Candidate without = cand;
      without.expert_overlap = false;
      EXPECT_NE(std::find(all.begin(), all.end(), without), all.end()) << describe(cand, 16);
    } else {
      Candidate with = cand;
      with.expert_overlap = true;
      if (expert_overlap_runs(with)) ++runnable;
    }
  }
  EXPECT_GT(overlapped, 0);
  EXPECT_EQ(overlapped, runnable);
  c.expert_overlaps = {false};
  for (const Candidate& cand : enumerate_candidates(base, c)) EXPECT_FALSE(cand.expert_overlap) << describe(cand, 16);
  c.expert_overlaps = {true};
  for (const Candidate& cand : enumerate_candidates(base, c)) {
    EXPECT_EQ(cand.expert_overlap, expert_overlap_runs(cand)) << describe(cand, 16);
  }
}

TEST(CandidateScenario, APipelineCandidateWritesItsStagesAndSchedule) {
  Candidate c = interleaved_pp2(2);
  c.tp = 2;
  const scenarios::Training t = candidate_scenario(small_scenario(), c, 1024).scenario.training();
  EXPECT_EQ(t.mesh().pp(), 2);
  EXPECT_EQ(t.pipeline().schedule(), scenarios::INTERLEAVED_1F1B);
  EXPECT_EQ(t.pipeline().virtual_stages(), 2);
  EXPECT_EQ(t.pipeline().micro_batches(), 4);
  EXPECT_EQ(mesh_text(c), "tp 2 x pp 2 (interleaved)");
  c.virtual_stages = 3;
  EXPECT_EQ(candidate_scenario(small_scenario(), c, 1024).scenario.training().pipeline().virtual_stages(), 3);
  EXPECT_EQ(mesh_text(c), "tp 2 x pp 2 (interleaved, 3 chunks per stage)");
}

// A mixture of experts under tp: each ep with the routed experts split over
// tp (ep carved out of the shard group) and whole (expert_tp 1, ep carved out
// of tp x the shard group), so an ep the shard group alone cannot hold still
// has candidates, whole ones; each writes its expert_tp and loads.
TEST(SearchSpace, MixturesOfExpertsUnderTpTryWholeExperts) {
  Constraints c = moe_constraints({2}, {2, 4});
  const scenarios::LoadedScenario moe = scenarios::load_scenario("tiny-moe-4xcpu");
  std::map<std::pair<int64_t, bool>, int> count;  // (ep, whole) -> candidates
  for (const Candidate& cand : enumerate_candidates(moe, c)) {
    ++count[{cand.ep, cand.whole_experts}];
    EXPECT_EQ((cand.whole_experts ? cand.shard_group * cand.tp : cand.shard_group) % cand.ep, 0) << describe(cand, 4);
    const scenarios::Training t = candidate_scenario(moe, cand, 1024).scenario.training();
    EXPECT_EQ(t.mesh().expert_tp(), cand.whole_experts ? 1 : 2) << describe(cand, 4);
  }
  for (const auto& [key, n] : count) std::printf("ep %lld, experts %s: %d candidates\n", static_cast<long long>(key.first),
                                                 key.second ? "whole" : "split over tp", n);
  const int split2 = count[{2, false}], whole2 = count[{2, true}], split4 = count[{4, false}],
            whole4 = count[{4, true}];
  EXPECT_GT(split2, 0);
  EXPECT_GT(whole2, split2);  // whole: shard groups of 1 hold an ep group too
  EXPECT_EQ(split4, 0);       // a tp rank's 2 ranks cannot hold ep 4
  EXPECT_GT(whole4, 0);
  Candidate whole;
  whole.tp = 2;
  whole.ep = 4;
  whole.shard_group = 2;
  whole.whole_experts = true;
  EXPECT_EQ(mesh_text(whole), "tp 2 x ep 4 (experts whole)");
}

// Under ep the experts' own recompute is tried beside every block mode short
// of full (a fully checkpointed block reruns them already), never without
// ep (the experts are then part of their block), and only as asked.
TEST(SearchSpace, TheExpertsOwnRecomputeIsTriedUnderEpBelowFullCheckpointing) {
  Constraints c = moe_constraints({1}, {1, 2});
  const scenarios::LoadedScenario moe = scenarios::load_scenario("tiny-moe-4xcpu");
  std::map<std::tuple<int64_t, int, bool>, int> count;  // (ep, block mode, experts recompute) -> candidates
  for (const Candidate& cand : enumerate_candidates(moe, c)) {
    ++count[std::make_tuple(cand.ep, static_cast<int>(cand.checkpointing), cand.experts_recompute)];
    const scenarios::LoadedScenario written = candidate_scenario(moe, cand, 1024);
    EXPECT_EQ(written.written.training().experts().checkpointing(),
              cand.experts_recompute ? scenarios::FULL : scenarios::CHECKPOINTING_UNSPECIFIED)
        << describe(cand, 4);
    if (cand.experts_recompute) {
      EXPECT_NE(describe(cand, 4).find("checkpointing (experts recomputed)"), std::string::npos) << describe(cand, 4);
      EXPECT_NO_THROW(planner::resolve_scenario(written)) << describe(cand, 4);
    }
  }
  const auto n = [&](int64_t ep, scenarios::Checkpointing mode, bool recompute) {
    return count[std::make_tuple(ep, static_cast<int>(mode), recompute)];
  };
  for (scenarios::Checkpointing mode : {scenarios::NONE, scenarios::SELECTIVE, scenarios::FULL}) {
    EXPECT_GT(n(1, mode, false), 0);
    EXPECT_EQ(n(1, mode, true), 0) << "no experts of their own without ep";
    EXPECT_GT(n(2, mode, false), 0);
  }
  EXPECT_EQ(n(2, scenarios::NONE, true), n(2, scenarios::NONE, false));
  EXPECT_EQ(n(2, scenarios::SELECTIVE, true), n(2, scenarios::SELECTIVE, false));
  EXPECT_EQ(n(2, scenarios::FULL, true), 0) << "a fully checkpointed block reruns its experts already";

  c.experts_recompute = {false};
  for (const Candidate& cand : enumerate_candidates(moe, c)) EXPECT_FALSE(cand.experts_recompute) << describe(cand, 4);
  c.experts_recompute = {true};
  for (const Candidate& cand : enumerate_candidates(moe, c)) {
    EXPECT_EQ(cand.experts_recompute, cand.ep > 1 && cand.checkpointing != scenarios::FULL) << describe(cand, 4);
  }
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
  Candidate meshed = c;
  meshed.tp = 2;
  meshed.shard_group = 2;
  const scenarios::Training m = candidate_scenario(small_scenario(), meshed, 512).scenario.training();
  EXPECT_EQ(m.mesh().tp(), 2);
  EXPECT_EQ(m.shard_group_size(), 2);
  EXPECT_EQ(m.replicate_group_size(), 2);
  EXPECT_EQ(describe(meshed, 8),
            "zero3, tp 2, shard group 2 x 2 replicas, micro-batch 1 x 2, full checkpointing, prefetch 2, no reshard");
}

}  // namespace
}  // namespace ragged::tune
