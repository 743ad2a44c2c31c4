// Expert parallelism on the GPU (gpu_workload_mesh_experts.cpp): two ep
// ranks' mesh workloads on one GPU, each with its half of every layer's
// experts (expert_pieces.hpp) and its own sequences, their dispatches and
// combines run by the test (each rank's blocks to a peer copied into the
// peer's blocks from it, in order, as NCCL's grouped sends and receives
// match them), in the Program's order for ep alone, against the whole-model
// workload on each rank's sequences: a rank's loss and its dense gradients
// are the whole model's on its tokens, an expert's gradients on its rank
// the sum of the whole model's over both ranks' tokens. fp32; the owner's
// GEMMs run on both sources' rows at once (other row counts than the whole
// model's per-rank ones, and one weight-gradient sum over both), so cuBLAS
// may round differently: within 1e-4 relative per tensor, the bound the
// context-parallel test uses.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/gpu_workload_mesh.hpp"
#include "backend/expert_pieces.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"
#include "tests/backend/gpu_workload_harness.hpp"

namespace ragged::backend::gpu {
namespace {

using models::UnitKind;
using Tensors3 = std::vector<std::vector<std::vector<float>>>;  // [unit][tensor][element]

planner::ResolvedScenario with_ep(const std::string& name, int ep) {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario(name), ep);
  loaded.written.mutable_training()->mutable_mesh()->set_ep(ep);
  return planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
}

class GpuExpertParallelTest : public gpu_test::GpuWorkloadTest {
 protected:
  using Ranks = std::vector<std::unique_ptr<GpuMeshWorkload>>;

  // Each rank's blocks to `to`, in order, into `to`'s blocks from it.
  void move_rows(const std::vector<ExpertRows>& x) {
    const auto bytes = [&](const ExpertRows& r, int64_t rows) {
      return static_cast<size_t>(rows * r.row_elements * element_bytes(r.type));
    };
    for (size_t from = 0; from < x.size(); ++from) {
      for (size_t to = 0; to < x.size(); ++to) {
        std::vector<RowBlock> sends, receives;
        for (const RowBlock& b : x[from].sends) {
          if (b.peer == static_cast<int>(to)) sends.push_back(b);
        }
        for (const RowBlock& b : x[to].receives) {
          if (b.peer == static_cast<int>(from)) receives.push_back(b);
        }
        ASSERT_EQ(sends.size(), receives.size()) << from << " to " << to;
        for (size_t i = 0; i < sends.size(); ++i) {
          ASSERT_EQ(sends[i].rows, receives[i].rows) << from << " to " << to << ", block " << i;
          CUDA_CHECK(cudaMemcpyAsync(static_cast<std::byte*>(x[to].receive) + bytes(x[to], receives[i].first),
                                     static_cast<const std::byte*>(x[from].send) + bytes(x[from], sends[i].first),
                                     bytes(x[from], sends[i].rows), cudaMemcpyDeviceToDevice, stream_));
        }
      }
    }
  }

  void exchange(Ranks& ranks, const EpStep& step) {
    std::vector<ExpertRows> counts, rows;
    for (auto& w : ranks) counts.push_back(w->expert_counts(step, stream_));
    if (!counts[0].sends.empty()) move_rows(counts);
    for (auto& w : ranks) rows.push_back(w->expert_begin(step, stream_));
    move_rows(rows);
    for (auto& w : ranks) w->expert_end(step, stream_);
  }

  // Each rank's loss and gradients ([rank] of [unit][tensor]).
  std::vector<gpu_test::Result> run_experts(const planner::ResolvedScenario& r, const Tensors3& whole,
                                            const GpuWorkloadConfig& config, const std::vector<Batch>& batches) {
    device_->arena().reset();
    const models::ModelSpec& split = r.model;
    const auto ep = static_cast<int>(batches.size());
    const int units = static_cast<int>(split.units.size());
    // The whole model's tensors in model order, as TensorOrigin::id counts them.
    std::vector<const std::vector<float>*> flat;
    for (const auto& unit : whole) {
      for (const auto& tensor : unit) flat.push_back(&tensor);
    }
    Ranks ranks;
    std::vector<std::vector<std::vector<const void*>>> params(static_cast<size_t>(ep));
    std::vector<std::vector<std::vector<void*>>> grads(static_cast<size_t>(ep));
    for (int rank = 0; rank < ep; ++rank) {
      const std::vector<std::vector<TensorOrigin>> origins = tensor_origins(r.whole(), split, rank);
      auto& p = params[static_cast<size_t>(rank)];
      auto& g = grads[static_cast<size_t>(rank)];
      p.resize(static_cast<size_t>(units));
      g.resize(static_cast<size_t>(units));
      for (size_t u = 0; u < split.units.size(); ++u) {
        for (size_t t = 0; t < split.units[u].tensors.size(); ++t) {
          const TensorOrigin& o = origins[u][t];
          const auto begin = flat[static_cast<size_t>(o.id)]->begin() + o.first;
          const std::vector<float> piece(begin, begin + split.units[u].tensors[t].numel());
          p[u].push_back(upload(piece, config.params));
          g[u].push_back(device_->arena().allocate(piece.size() * static_cast<size_t>(element_bytes(config.grads))));
        }
      }
      ranks.push_back(std::make_unique<GpuMeshWorkload>(split, config, TensorParallelRank{}, ContextParallelRank{},
                                                        ExpertParallelRank{rank, ep}, device_->cublas(), stream_,
                                                        device_->arena()));
      ranks.back()->set_batch(batches[static_cast<size_t>(rank)]);
    }
    const auto is_experts = [&](int u) { return split.units[static_cast<size_t>(u)].kind == UnitKind::kExperts; };
    for (int u = 0; u < units; ++u) {
      if (is_experts(u)) exchange(ranks, EpStep{u, TpPass::kForward});
      for (int rank = 0; rank < ep; ++rank) {
        ranks[static_cast<size_t>(rank)]->forward(u, params[static_cast<size_t>(rank)][static_cast<size_t>(u)]);
      }
      if (is_experts(u)) exchange(ranks, EpStep{u, TpPass::kForward});
    }
    for (int u = units - 1; u >= 0; --u) {
      if (is_experts(u)) exchange(ranks, EpStep{u, TpPass::kBackward});
      for (int rank = 0; rank < ep; ++rank) {
        const auto at = static_cast<size_t>(rank);
        ranks[at]->backward(u, params[at][static_cast<size_t>(u)], grads[at][static_cast<size_t>(u)]);
      }
      if (is_experts(u)) exchange(ranks, EpStep{u, TpPass::kBackward});
    }
    std::vector<gpu_test::Result> out;
    for (int rank = 0; rank < ep; ++rank) {
      gpu_test::Result result;
      result.loss = ranks[static_cast<size_t>(rank)]->take_mean_loss();
      for (size_t u = 0; u < split.units.size(); ++u) {
        result.grads.emplace_back();
        for (size_t t = 0; t < split.units[u].tensors.size(); ++t) {
          result.grads.back().push_back(download(grads[static_cast<size_t>(rank)][u][t],
                                                 static_cast<size_t>(split.units[u].tensors[t].numel()), config.grads));
        }
      }
      out.push_back(std::move(result));
    }
    return out;
  }
};

TEST_F(GpuExpertParallelTest, TwoRanksComputeTheWholeModelOnTheirTokens) {
  const planner::ResolvedScenario r = with_ep("tiny-moe-4xcpu", 2);
  ASSERT_EQ(r.model.split.ep, 2);
  test_util::ModelStore store(r.whole(), 11);
  const GpuWorkloadConfig config{2, 64, ElementType::f32, ElementType::f32};
  std::vector<Batch> batches;
  std::vector<gpu_test::Result> whole;
  for (int rank = 0; rank < 2; ++rank) {
    batches.push_back(synthetic_batch(5, rank * 2, 2, 64, r.whole().arch.vocab));
    whole.push_back(run(store, config, batches.back()));
  }
  const std::vector<gpu_test::Result> ranks = run_experts(r, store.params, config, batches);
  // The whole model's gradients in model order, per rank.
  std::vector<std::vector<const std::vector<float>*>> flat(2);
  for (int rank = 0; rank < 2; ++rank) {
    for (const auto& unit : whole[static_cast<size_t>(rank)].grads) {
      for (const auto& tensor : unit) flat[static_cast<size_t>(rank)].push_back(&tensor);
    }
  }
  int experts_tensors = 0;
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(testing::Message() << "ep rank " << rank);
    const gpu_test::Result& got = ranks[static_cast<size_t>(rank)];
    EXPECT_NEAR(got.loss, whole[static_cast<size_t>(rank)].loss, 1e-5 * whole[static_cast<size_t>(rank)].loss);
    const std::vector<std::vector<TensorOrigin>> origins = tensor_origins(r.whole(), r.model, rank);
    for (size_t u = 0; u < r.model.units.size(); ++u) {
      const bool experts = r.model.units[u].kind == UnitKind::kExperts;
      for (size_t t = 0; t < r.model.units[u].tensors.size(); ++t) {
        const TensorOrigin& o = origins[u][t];
        std::vector<float> expected(got.grads[u][t].size(), 0.0f);
        for (int source = 0; source < 2; ++source) {
          if (!experts && source != rank) continue;
          const std::vector<float>& g = *flat[static_cast<size_t>(source)][static_cast<size_t>(o.id)];
          for (size_t i = 0; i < expected.size(); ++i) expected[i] += g[static_cast<size_t>(o.first) + i];
        }
        experts_tensors += experts ? 1 : 0;
        EXPECT_LE(gpu_test::relative_error(got.grads[u][t], expected), 1e-4) << r.model.units[u].tensors[t].name;
      }
    }
  }
  EXPECT_EQ(experts_tensors, 2 * 2 * 4 * 3);  // 2 ranks x 2 layers x 4 local experts x gate, up, down
}

}  // namespace
}  // namespace ragged::backend::gpu
