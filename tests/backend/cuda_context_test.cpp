// Context parallelism on the GPU (gpu_workload_context.cpp): two cp ranks'
// mesh workloads on one GPU, their key/value exchanges run by the test (an
// all-gather copies each rank's slot to the other, a reduce-scatter sums
// the slots in rank order), in the Program's order for cp alone, against
// the whole-block workload on the whole sequences: the ranks' mean loss is
// the whole batch's, the mean of their gradients the whole batch's.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/gpu_workload_mesh.hpp"
#include "backend/mesh_step.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "tests/backend/gpu_workload_harness.hpp"

namespace ragged::backend::gpu {
namespace {

using models::UnitKind;
using models::UnitPart;

class GpuContextParallelTest : public gpu_test::GpuWorkloadTest {
 protected:
  using Ranks = std::vector<std::unique_ptr<GpuMeshWorkload>>;

  // Every rank's exchange of `step`, as NCCL's in-place collectives over the group would run it (fp32).
  void exchange(Ranks& ranks, const TpStep& step) {
    std::vector<MeshExchange> x;
    for (auto& w : ranks) x.push_back(w->exchange_begin(step, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    const auto n = static_cast<size_t>(x[0].count);
    const auto slot = [&](size_t rank, size_t of) { return static_cast<float*>(x[rank].buffer) + of * n; };
    if (sums_partials(step.collective)) {
      std::vector<std::vector<float>> all;
      for (size_t r = 0; r < x.size(); ++r) all.push_back(download(x[r].buffer, n * x.size(), ElementType::f32));
      for (size_t r = 0; r < x.size(); ++r) {
        std::vector<float> total(n, 0.0f);
        for (size_t q = 0; q < x.size(); ++q) {
          for (size_t i = 0; i < n; ++i) total[i] += all[q][r * n + i];
        }
        CUDA_CHECK(cudaMemcpy(slot(r, r), total.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      }
    } else {
      for (size_t r = 0; r < x.size(); ++r) {
        for (size_t q = 0; q < x.size(); ++q) {
          if (q != r) CUDA_CHECK(cudaMemcpy(slot(r, q), slot(q, q), n * sizeof(float), cudaMemcpyDeviceToDevice));
        }
      }
    }
    for (auto& w : ranks) w->exchange_end(step, stream_);
  }

  gpu_test::Result run_context(const test_util::ModelStore& store, const GpuWorkloadConfig& config, const Batch& batch,
                               int cp) {
    device_->arena().reset();
    const int units = store.units();
    std::vector<std::vector<const void*>> params(static_cast<size_t>(units));
    std::vector<std::vector<std::vector<void*>>> grads(static_cast<size_t>(cp));  // [rank][unit][tensor]
    for (int u = 0; u < units; ++u) {
      for (const std::vector<float>& tensor : store.params[static_cast<size_t>(u)]) {
        params[static_cast<size_t>(u)].push_back(upload(tensor, config.params));
      }
    }
    Ranks ranks;
    for (int r = 0; r < cp; ++r) {
      ranks.push_back(std::make_unique<GpuMeshWorkload>(store.model, config, TensorParallelRank{0, 1},
                                                        ContextParallelRank{r, cp}, ExpertParallelRank{},
                                                        device_->cublas(), stream_, device_->arena()));
      grads[static_cast<size_t>(r)].resize(static_cast<size_t>(units));
      for (int u = 0; u < units; ++u) {
        for (const std::vector<float>& tensor : store.params[static_cast<size_t>(u)]) {
          grads[static_cast<size_t>(r)][static_cast<size_t>(u)].push_back(
              device_->arena().allocate(tensor.size() * static_cast<size_t>(element_bytes(config.grads))));
        }
      }
      ranks.back()->set_batch(batch);  // the same sequences: each rank keeps its chunks
    }
    const auto each = [&](auto&& call) {
      for (int r = 0; r < cp; ++r) call(*ranks[static_cast<size_t>(r)], grads[static_cast<size_t>(r)]);
    };
    const auto key_values = [&](int u, UnitPart part, TpPass pass, TpCollective collective) {
      exchange(ranks, TpStep{u, part, pass, collective});
    };
    for (int u = 0; u < units; ++u) {
      const auto p = static_cast<size_t>(u);
      if (store.model.units[p].kind != UnitKind::kBlock) {
        each([&](GpuMeshWorkload& w, auto&) { w.forward(u, params[p]); });
        continue;
      }
      each([&](GpuMeshWorkload& w, auto&) { w.forward_part(u, UnitPart::kAttentionInput, params[p]); });
      key_values(u, UnitPart::kAttentionCore, TpPass::kForward, TpCollective::kKeyValueGather);
      each([&](GpuMeshWorkload& w, auto&) { w.forward_part(u, UnitPart::kAttentionCore, params[p]); });
      each([&](GpuMeshWorkload& w, auto&) { w.forward_part(u, UnitPart::kMlp, params[p]); });
    }
    for (int u = units - 1; u >= 0; --u) {
      const auto p = static_cast<size_t>(u);
      if (store.model.units[p].kind != UnitKind::kBlock) {
        each([&](GpuMeshWorkload& w, auto& g) { w.backward(u, params[p], g[p]); });
        continue;
      }
      each([&](GpuMeshWorkload& w, auto& g) { w.backward_part(u, UnitPart::kMlp, params[p], g[p]); });
      key_values(u, UnitPart::kAttentionCore, TpPass::kBackward, TpCollective::kKeyValueGather);
      each([&](GpuMeshWorkload& w, auto& g) { w.backward_part(u, UnitPart::kAttentionCore, params[p], g[p]); });
      key_values(u, UnitPart::kAttentionCore, TpPass::kBackward, TpCollective::kKeyValueGradientScatter);
      each([&](GpuMeshWorkload& w, auto& g) { w.backward_part(u, UnitPart::kAttentionInput, params[p], g[p]); });
    }
    // The whole batch's loss and gradients are the ranks' means.
    gpu_test::Result mean;
    for (int r = 0; r < cp; ++r) {
      const gpu_test::Result rank = result_of(store, ranks[static_cast<size_t>(r)]->take_mean_loss(),
                                              grads[static_cast<size_t>(r)], config.grads);
      mean.loss += rank.loss / cp;
      if (r == 0) mean.grads = rank.grads;
      for (size_t u = 0; r > 0 && u < rank.grads.size(); ++u) {
        for (size_t t = 0; t < rank.grads[u].size(); ++t) {
          for (size_t i = 0; i < rank.grads[u][t].size(); ++i) mean.grads[u][t][i] += rank.grads[u][t][i];
        }
      }
    }
    for (auto& unit : mean.grads) {
      for (auto& tensor : unit) {
        for (float& g : tensor) g /= static_cast<float>(cp);
      }
    }
    return mean;
  }
};

// Dense and mixture-of-experts blocks (each rank routes its own tokens).
TEST_F(GpuContextParallelTest, TwoRanksChunksMakeTheWholeSequencesLossAndGradients) {
  for (const std::string name : {"tiny-llama-4xcpu", "tiny-moe-4xcpu"}) {
    SCOPED_TRACE(name);
    const planner::ResolvedScenario r = planner::resolve_scenario(scenarios::load_scenario(name));
    test_util::ModelStore store(r.model, 11);
    const GpuWorkloadConfig config{2, 128, ElementType::f32, ElementType::f32};
    const Batch batch = synthetic_batch(5, 0, 2, 128, r.model.arch.vocab);
    const gpu_test::Result whole = run(store, config, batch);
    const gpu_test::Result chunks = run_context(store, config, batch, 2);
    EXPECT_NEAR(chunks.loss, whole.loss, 1e-5 * whole.loss);
    gpu_test::expect_gradients(chunks, whole, r.model, 1e-4);
  }
}

}  // namespace
}  // namespace ragged::backend::gpu
