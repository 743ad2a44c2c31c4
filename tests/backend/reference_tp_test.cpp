// The mesh reference (reference_train_tensor_parallel): a data place's
// cp x tp ranks computing Megatron's sequence-parallel split and the
// head-tail context split in one process train the model as the plain
// reference does, to rounding: the host's mesh math is the model's math.
// (MPI runs are then checked against it bit for bit: tests_runtime.cmake's
// tensor- and context-parallel checks.)

#include <gtest/gtest.h>

#include <cstdio>

#include "backend/reference.hpp"
#include "backend/run_support.hpp"
#include "backend/tensor_pieces.hpp"
#include "backend/workload.hpp"
#include "common/errors.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::backend {
namespace {

planner::ResolvedScenario with_tp(const std::string& name, int tp, bool tied = false, int cp = 1) {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario(name), tp * cp);
  loaded.written.mutable_training()->mutable_mesh()->set_tp(tp);
  loaded.written.mutable_training()->mutable_mesh()->set_cp(cp);
  if (tied) loaded.written.mutable_model()->mutable_inline_spec()->set_tie_word_embeddings(true);
  return planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
}

TEST(TensorParallelReference, TrainsAsThePlainReferenceDoesToRounding) {
  for (int tp : {2, 4}) {
    for (bool tied : {false, true}) {
      const planner::ResolvedScenario r = with_tp("tiny-llama-4xcpu", tp, tied);
      ASSERT_EQ(r.model.split.tp, tp);
      const scenarios::Training& training = r.scenario().training();
      const ModelParams split = reference_train_tensor_parallel(r.whole(), r.model, training, 1, 1, 2, 1234);
      const ModelParams plain = reference_train(r.whole(), training, 1, 1, 2, 1234);
      const ParamError e = compare_params(r.whole(), split, plain);
      std::printf("tp %d%s, 2 steps: max relative difference %.3g (%s), %lld of %lld elements differ bitwise\n", tp,
                  tied ? " (tied embeddings)" : "", e.max_relative, e.worst_tensor.c_str(),
                  static_cast<long long>(e.differing_elements), static_cast<long long>(e.elements));
      EXPECT_LT(e.max_relative, 1e-4) << "tp " << tp;
      EXPECT_EQ(e.non_finite_elements, 0);
      // The split sums in another order: not every bit agrees, but it trained.
      EXPECT_GT(e.differing_elements, 0);
    }
  }
}

TEST(TensorParallelReference, MixtureOfExpertsTrainsAsThePlainReferenceDoesToRounding) {
  // The router whole on every tp rank (every rank routes alike), the
  // experts' and shared experts' columns cut: partial outputs, gate and
  // router gradients, summed by the group; 2 data-parallel places. Under ep 2
  // the two places are played out together, each holding half the routed
  // experts, the rows exchanged between the places at one tp rank.
  for (const int ep : {1, 2}) {
    auto loaded = scenarios::with_total_gpus(scenarios::load_scenario("tiny-moe-4xcpu"), 4);
    loaded.written.mutable_training()->mutable_mesh()->set_tp(2);
    loaded.written.mutable_training()->mutable_mesh()->set_ep(ep);
    const planner::ResolvedScenario r = planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
    ASSERT_EQ(r.model.split.ep, ep);
    const scenarios::Training& training = r.scenario().training();
    const ModelParams split = reference_train_tensor_parallel(r.whole(), r.model, training, 2, 2, 2, 1234, 1, ep);
    const ModelParams plain = reference_train(r.whole(), training, 2, 2, 2, 1234);
    const ParamError e = compare_params(r.whole(), split, plain);
    std::printf("tiny MoE, tp 2 x ep %d, 2 places, 2 steps: max relative difference %.3g (%s)\n", ep, e.max_relative,
                e.worst_tensor.c_str());
    EXPECT_LT(e.max_relative, 1e-4) << "ep " << ep;
    EXPECT_EQ(e.non_finite_elements, 0);
    EXPECT_GT(e.differing_elements, 0);
  }
}

TEST(TensorParallelReference, ContextParallelTrainsAsThePlainReferenceDoesToRounding) {
  // Each cp rank attends from its head-tail chunks over every key of the
  // sequence; alone and under tp 2.
  for (const auto& [tp, cp] : {std::pair{1, 2}, std::pair{1, 4}, std::pair{2, 2}}) {
    const planner::ResolvedScenario r = with_tp("tiny-llama-4xcpu", tp, false, cp);
    const scenarios::Training& training = r.scenario().training();
    ASSERT_EQ(training.shard_group_size(), cp);
    const ModelParams split = reference_train_tensor_parallel(r.whole(), r.model, training, 1, cp, 2, 1234, cp);
    const ModelParams plain = reference_train(r.whole(), training, 1, 1, 2, 1234);
    const ParamError e = compare_params(r.whole(), split, plain);
    std::printf("tp %d x cp %d, 2 steps: max relative difference %.3g (%s)\n", tp, cp, e.max_relative,
                e.worst_tensor.c_str());
    EXPECT_LT(e.max_relative, 1e-4) << "tp " << tp << " cp " << cp;
    EXPECT_EQ(e.non_finite_elements, 0);
  }
}

TEST(TensorParallelReference, ContextChunksAreHeadAndTail) {
  // cp 2, 8 tokens a sequence, 4 a rank: rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2.
  std::vector<int64_t> zero, one;
  for (int64_t i = 0; i < 4; ++i) {
    zero.push_back(context_position(0, 2, i, 4));
    one.push_back(context_position(1, 2, i, 4));
  }
  EXPECT_EQ(zero, (std::vector<int64_t>{0, 1, 6, 7}));
  EXPECT_EQ(one, (std::vector<int64_t>{2, 3, 4, 5}));
}

TEST(TensorParallelReference, ARanksShardsStartAsItsPiecesOfTheWholeModel) {
  const planner::ResolvedScenario r = with_tp("tiny-llama-4xcpu", 2);
  const ModelParams whole = initial_params(r.whole(), 1234);
  const planner::Plan plan = plan_for_run(r, models::DType::kF32);
  auto comm = make_local_communicator();
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<UnitShard> shards = make_shards(r.model, plan, 0, 1234, &r.whole(), rank);
    const ModelParams mine = gather_params(shards, *comm);
    size_t flat = 0, cut = 0;
    for (size_t u = 0; u < r.model.units.size(); ++u) {
      for (size_t t = 0; t < r.model.units[u].tensors.size(); ++t, ++flat) {
        const models::TensorSpec& piece = r.model.units[u].tensors[t];
        cut += piece.tp_cut != models::TensorCut::kWhole;
        EXPECT_EQ(mine[flat], piece_of(piece, r.whole().units[u].tensors[t], rank, whole[flat])) << piece.name;
      }
    }
    EXPECT_GT(cut, 0u);
  }
}

TEST(TensorParallelReference, WhatTheHostCannotSplitIsAnInputError) {
  // GPT-OSS adds biases after its row-parallel projections (o_proj, the
  // experts' down_proj): every tp rank would add them once.
  const planner::ResolvedScenario biased = with_tp("gpt-oss-120b-256xh800", 2);
  try {
    HostWorkload w(biased.model, 1, 128, TensorParallelRank{0, 2});
    FAIL() << "biases after row-parallel projections under tp on the host";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("o_proj.bias"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("down_proj_bias"), std::string::npos) << e.what();
  }
  const planner::ResolvedScenario llama = with_tp("tiny-llama-4xcpu", 2);
  EXPECT_THROW(HostWorkload(llama.model, 1, 127, TensorParallelRank{0, 2}), InputError);  // 127 rows in 2
}

}  // namespace
}  // namespace ragged::backend
