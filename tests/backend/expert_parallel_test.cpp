// Expert parallelism on the host: an ep rank's experts are the whole
// model's (expert_pieces), two ep ranks exchanging their routed rows in one
// process compute what the whole model computes on each rank's tokens, bit
// for bit, and the reference sums the experts' gradients where the run
// makes them. (MPI runs are then checked bit for bit against the reference:
// tests_runtime.cmake's expert-parallel checks.)

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "backend/expert_pieces.hpp"
#include "backend/reference.hpp"
#include "backend/workload.hpp"
#include "common/errors.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::backend {
namespace {

planner::ResolvedScenario with_ep(const std::string& name, int gpus, int ep) {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario(name), gpus);
  loaded.written.mutable_training()->mutable_mesh()->set_ep(ep);
  return planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
}

const models::TensorSpec* find(const models::ModelSpec& model, const std::string& name) {
  for (const models::UnitSpec& unit : model.units) {
    for (const models::TensorSpec& t : unit.tensors) {
      if (t.name == name) return &t;
    }
  }
  return nullptr;
}

TEST(ExpertPieces, AnEpRanksExpertsAreTheWholeModelsBlockOfExperts) {
  const planner::ResolvedScenario r = with_ep("tiny-moe-4xcpu", 2, 2);
  ASSERT_EQ(r.model.split.ep, 2);
  // 8 experts, 2 a rank... of 2 ranks: 4 each; rank 1's local expert 3 is the whole model's 7.
  const std::vector<std::vector<TensorOrigin>> origins = tensor_origins(r.whole(), r.model, 1);
  ASSERT_EQ(origins.size(), r.model.units.size());
  int experts_tensors = 0;
  for (size_t u = 0; u < r.model.units.size(); ++u) {
    const models::UnitSpec& unit = r.model.units[u];
    for (size_t t = 0; t < unit.tensors.size(); ++t) {
      const TensorOrigin& o = origins[u][t];
      ASSERT_NE(o.whole, nullptr);
      EXPECT_EQ(o.whole->numel(), unit.tensors[t].numel()) << unit.tensors[t].name;
      EXPECT_EQ(o.first, 0);
      if (unit.kind != models::UnitKind::kExperts) {
        EXPECT_EQ(o.whole->name, unit.tensors[t].name);
        continue;
      }
      ++experts_tensors;
      std::string expected = unit.tensors[t].name;
      const size_t at = expected.find("experts.") + 8;
      const int local = expected[at] - '0';
      expected.replace(at, 1, std::to_string(4 + local));
      EXPECT_EQ(o.whole->name, expected);
      EXPECT_EQ(o.whole, find(r.whole(), expected));
    }
  }
  EXPECT_EQ(experts_tensors, 2 * 4 * 3);  // 2 layers x 4 local experts x gate, up, down
}

TEST(ExpertPieces, FusedExpertsAreRowsOfTheWholeTensor) {
  // GPT-OSS stores every expert of a layer in one [E, h, 2f] tensor.
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario("gpt-oss-120b-256xh800"), 256);
  loaded.written.mutable_training()->mutable_mesh()->set_ep(8);
  const planner::ResolvedScenario r = planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
  const std::vector<std::vector<TensorOrigin>> origins = tensor_origins(r.whole(), r.model, 3);
  bool seen = false;
  for (size_t u = 0; u < r.model.units.size() && !seen; ++u) {
    const models::UnitSpec& unit = r.model.units[u];
    for (size_t t = 0; t < unit.tensors.size(); ++t) {
      if (unit.tensors[t].name.find("experts.gate_up_proj") == std::string::npos) continue;
      const TensorOrigin& o = origins[u][t];
      EXPECT_EQ(o.whole->shape.front(), 8 * unit.tensors[t].shape.front());
      EXPECT_EQ(o.first, 3 * unit.tensors[t].numel());
      const ExpertSlices slices = expert_slices(*o.whole, r.whole().arch);
      EXPECT_EQ(slices.first_expert, 0);
      EXPECT_EQ(slices.experts, r.whole().arch.experts);
      seen = true;
    }
  }
  EXPECT_TRUE(seen);
}

// Each tensor of an ep rank's model as the whole model's values there.
ModelParams split_params(const models::ModelSpec& split, const std::vector<std::vector<TensorOrigin>>& origins,
                         const ModelParams& whole) {
  ModelParams out;
  for (size_t u = 0; u < split.units.size(); ++u) {
    for (size_t t = 0; t < split.units[u].tensors.size(); ++t) {
      const TensorOrigin& o = origins[u][t];
      const std::vector<float>& values = whole[static_cast<size_t>(o.id)];
      out.emplace_back(values.begin() + o.first, values.begin() + o.first + split.units[u].tensors[t].numel());
    }
  }
  return out;
}

struct Tensors2 {
  ConstTensors params;
  Tensors grads;
};

Tensors2 unit_tensors(const models::ModelSpec& model, int unit, const ModelParams& params, ModelParams& grads) {
  size_t base = 0;
  for (int u = 0; u < unit; ++u) base += model.units[static_cast<size_t>(u)].tensors.size();
  Tensors2 out;
  for (size_t t = 0; t < model.units[static_cast<size_t>(unit)].tensors.size(); ++t) {
    out.params.push_back(params[base + t].data());
    out.grads.push_back(grads[base + t].data());
  }
  return out;
}

ModelParams zeros_like(const ModelParams& params) {
  ModelParams z;
  for (const auto& p : params) z.emplace_back(p.size(), 0.0f);
  return z;
}

TEST(ExpertParallelWorkload, TwoRanksComputeTheWholeModelOnTheirTokensBitForBit) {
  const planner::ResolvedScenario r = with_ep("tiny-moe-4xcpu", 2, 2);
  const models::ModelSpec& whole = r.whole();
  const models::ModelSpec& split = r.model;
  const scenarios::Training& training = r.scenario().training();
  const int64_t sequences = training.micro_batch_size(), seq_len = training.sequence_length();
  const ModelParams params = initial_params(whole, 1234);
  std::vector<Batch> batches;
  for (int rank = 0; rank < 2; ++rank) {
    batches.push_back(synthetic_batch(77, rank * sequences, sequences, seq_len, whole.arch.vocab));
  }

  // The whole model on each rank's tokens, its gradients apart.
  std::vector<double> whole_loss;
  std::vector<ModelParams> whole_grads;
  for (const Batch& batch : batches) {
    HostWorkload w(whole, sequences, seq_len);
    ModelParams grads = zeros_like(params);
    w.set_batch(batch);
    const int units = static_cast<int>(whole.units.size());
    for (int u = 0; u < units; ++u) w.forward(u, unit_tensors(whole, u, params, grads).params);
    whole_loss.push_back(w.loss());
    for (int u = units - 1; u >= 0; --u) {
      Tensors2 t = unit_tensors(whole, u, params, grads);
      w.backward(u, t.params, t.grads);
    }
    whole_grads.push_back(std::move(grads));
  }

  // The two ep ranks, their routed rows exchanged.
  std::vector<std::vector<std::vector<TensorOrigin>>> origins;
  std::vector<ModelParams> split_values, split_grads;
  std::vector<std::unique_ptr<HostWorkload>> workloads;
  std::vector<HostWorkload*> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    origins.push_back(tensor_origins(whole, split, rank));
    split_values.push_back(split_params(split, origins.back(), params));
    split_grads.push_back(zeros_like(split_values.back()));
    workloads.push_back(std::make_unique<HostWorkload>(split, sequences, seq_len, TensorParallelRank{},
                                                       ContextParallelRank{}, ExpertParallelRank{rank, 2}));
    workloads.back()->set_batch(batches[static_cast<size_t>(rank)]);
    ranks.push_back(workloads.back().get());
  }
  const int units = static_cast<int>(split.units.size());
  const auto is_experts = [&split](int u) { return split.units[static_cast<size_t>(u)].kind == models::UnitKind::kExperts; };
  for (int u = 0; u < units; ++u) {
    if (is_experts(u)) expert_exchange(ranks, EpStep{u, TpPass::kForward});
    for (int rank = 0; rank < 2; ++rank) {
      ranks[static_cast<size_t>(rank)]->forward(u, unit_tensors(split, u, split_values[static_cast<size_t>(rank)],
                                                                split_grads[static_cast<size_t>(rank)]).params);
    }
    if (is_experts(u)) expert_exchange(ranks, EpStep{u, TpPass::kForward});
  }
  for (int rank = 0; rank < 2; ++rank) {
    const double loss = ranks[static_cast<size_t>(rank)]->loss();
    EXPECT_EQ(loss, whole_loss[static_cast<size_t>(rank)]) << "rank " << rank;
  }
  // A recomputed pass moves the rows again and changes nothing.
  expert_exchange(ranks, EpStep{2, TpPass::kAgain});
  expert_exchange(ranks, EpStep{2, TpPass::kAgain});
  for (int u = units - 1; u >= 0; --u) {
    if (is_experts(u)) expert_exchange(ranks, EpStep{u, TpPass::kBackward});
    for (int rank = 0; rank < 2; ++rank) {
      Tensors2 t = unit_tensors(split, u, split_values[static_cast<size_t>(rank)], split_grads[static_cast<size_t>(rank)]);
      ranks[static_cast<size_t>(rank)]->backward(u, t.params, t.grads);
    }
    if (is_experts(u)) expert_exchange(ranks, EpStep{u, TpPass::kBackward});
  }

  // Each rank's own tensors carry its own tokens' gradients; an expert's,
  // on its rank, the two ranks' gradients added in rank order.
  int64_t compared = 0, differing = 0;
  for (int rank = 0; rank < 2; ++rank) {
    size_t flat = 0;
    for (size_t u = 0; u < split.units.size(); ++u) {
      for (size_t t = 0; t < split.units[u].tensors.size(); ++t, ++flat) {
        const TensorOrigin& o = origins[static_cast<size_t>(rank)][u][t];
        const std::vector<float>& got = split_grads[static_cast<size_t>(rank)][flat];
        for (size_t e = 0; e < got.size(); ++e) {
          const size_t at = static_cast<size_t>(o.first) + e;
          float expected = whole_grads[static_cast<size_t>(rank)][static_cast<size_t>(o.id)][at];
          if (split.units[u].kind == models::UnitKind::kExperts) {
            expected = 0.0f;
            for (int source = 0; source < 2; ++source) expected += whole_grads[static_cast<size_t>(source)][static_cast<size_t>(o.id)][at];
          }
          ++compared;
          differing += std::memcmp(&expected, &got[e], sizeof(float)) != 0;
        }
      }
    }
  }
  std::printf("ep 2 in one process: %lld of %lld gradient elements differ bitwise from the whole model's\n",
              static_cast<long long>(differing), static_cast<long long>(compared));
  EXPECT_EQ(differing, 0);
  EXPECT_GT(compared, 100000);
}

TEST(ExpertParallelReference, SumsAnExpertsGradientsOnItsRankAndStaysTheModelsTraining) {
  // 4 ranks in ep groups of 2: the experts' gradients are added within
  // each group first, so the sums round differently from the plain
  // reference's rank-order sum, and train the same model to rounding.
  const planner::ResolvedScenario r = with_ep("tiny-moe-4xcpu", 4, 2);
  const scenarios::Training& training = r.scenario().training();
  const ModelParams grouped = reference_train(r.whole(), training, 4, 4, 2, 1234, false, 2);
  const ModelParams plain = reference_train(r.whole(), training, 4, 4, 2, 1234);
  const ParamError e = compare_params(r.whole(), grouped, plain);
  std::printf("ep 2 of 4 ranks, 2 steps: max relative difference %.3g (%s), %lld of %lld elements differ bitwise\n",
              e.max_relative, e.worst_tensor.c_str(), static_cast<long long>(e.differing_elements),
              static_cast<long long>(e.elements));
  EXPECT_LT(e.max_relative, 1e-4);
  EXPECT_EQ(e.non_finite_elements, 0);
  EXPECT_GT(e.differing_elements, 0);
}

}  // namespace
}  // namespace ragged::backend
