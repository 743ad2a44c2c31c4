// GpuMeshWorkload under expert parallelism (gpu_workload_mesh.hpp): the
// host's workload_ep.cpp on the GPU. Rank r of the ep group holds local
// experts [r L, (r + 1) L) of every MoE layer in the layer's experts unit;
// the rows move between the ranks as expert_rows.hpp lays them out:
//   forward   dispatch: each copy's norm-2 row (the block's kRoutedInput,
//             copy order) to its expert's rank, the counts first; the
//             owner's experts on every source's rows; combine: the outputs
//             back in copy order, where the source adds gate x y to its
//             tokens in expert order, then the shared experts' output (a
//             partial sum under tp, which tp's reduce-scatter adds into each
//             rank's rows), then the block's residual;
//   backward  each copy's output gradient gate x dout (and d loss / d gate,
//             kept in the routing tables for the block) to its expert's
//             rank; the owner's experts' backward; their input gradients
//             back in copy order, which the block's MLP backward adds to
//             its tokens in expert order before the shared experts' and the
//             router's.
// The host sends the local expert's index in front of each row; here it
// travels in the counts (a row per peer of L counts), which the owner
// needs on the host anyway to size its GEMMs.

#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/gpu_workload_mesh.hpp"
#include "backend/cuda/gpu_workload_mesh_state.hpp"
#include "backend/cuda/gpu_workload_moe_kernels.hpp"
#include "backend/cuda/workload_kernels.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {

using models::UnitPart;

namespace {

int pass_index(TpPass pass) {
  RAGGED_ASSERT(pass != TpPass::kAgain, "GPU mesh workload: no recomputed pass (the run refuses checkpointing)");
  return pass == TpPass::kForward ? 0 : 1;
}

}  // namespace

void GpuMeshWorkload::mlp_forward_apart(int unit, const std::vector<const void*>& params) {
  State& s = *state_;
  ExpertsUnit& experts = s.experts_unit(unit + 1);
  std::byte* cache = s.unit_at<std::byte>(s.plan.cache, unit + 1);
  detail::with_types(s.config, [&](auto storage, auto) {
    using S = decltype(storage);
    experts.routing = detail::moe_forward_apart<S>(s.gemms, s.block(unit), params, s.routing(), s.cache(unit),
                                                   reinterpret_cast<S*>(cache + experts.plan.shared_output));
  });
}

void GpuMeshWorkload::mlp_backward_apart(int unit, const std::vector<const void*>& params,
                                         const std::vector<void*>& grads) {
  State& s = *state_;
  const ExpertsUnit& experts = s.experts_unit(unit + 1);
  detail::with_types(s.config, [&](auto storage, auto gradient) {
    using S = decltype(storage);
    using G = decltype(gradient);
    detail::moe_backward_apart<S, G>(s.gemms, s.block(unit), params, grads, s.routing(), experts.routing, s.cache(unit),
                                     s.at<std::byte>(detail::kMeshScratch), s.at<S>(detail::kMeshGradGathered),
                                     s.at<S>(detail::kMeshExpertReceive));
  });
}

void GpuMeshWorkload::experts_forward(int unit, const std::vector<const void*>& params) {
  State& s = *state_;
  const ExpertsUnit& experts = s.experts_unit(unit);
  RAGGED_ASSERT(experts.second[0], "GPU mesh workload: an experts unit computes between its dispatch and combine");
  detail::with_types(s.config, [&](auto storage, auto) {
    using S = decltype(storage);
    detail::experts_forward<S>(s.gemms, experts.plan, params, experts.runs, s.unit_at<std::byte>(s.plan.cache, unit),
                               s.at<S>(detail::kMeshExpertSend));
  });
}

void GpuMeshWorkload::experts_backward(int unit, const std::vector<const void*>& params,
                                       const std::vector<void*>& grads) {
  State& s = *state_;
  const ExpertsUnit& experts = s.experts_unit(unit);
  RAGGED_ASSERT(experts.second[1], "GPU mesh workload: an experts unit's backward follows its output gradients");
  detail::with_types(s.config, [&](auto storage, auto gradient) {
    using S = decltype(storage);
    using G = decltype(gradient);
    detail::experts_backward<S, G>(s.gemms, experts.plan, params, grads, experts.runs,
                                   s.unit_at<std::byte>(s.plan.cache, unit),
                                   s.at<std::byte>(detail::kMeshExpertScratch), s.at<S>(detail::kMeshExpertReceive),
                                   s.at<S>(detail::kMeshExpertSend));
  });
}

ExpertRows GpuMeshWorkload::expert_counts(const EpStep& step, cudaStream_t stream) {
  State& s = *state_;
  ExpertsUnit& experts = s.experts_unit(step.unit);
  if (step.pass != TpPass::kForward || experts.second[0]) return {};  // the owners know them from the dispatch
  const int ranks = s.ep.size;
  experts.sent = expert_row_counts(experts.routing.offsets, ranks);
  const int64_t local = experts.plan.layout.local;
  auto* counts = s.at<int64_t>(detail::kMeshExpertCounts);
  CUDA_CHECK(cudaMemcpyAsync(counts, experts.sent.data(), experts.sent.size() * sizeof(int64_t), cudaMemcpyHostToDevice,
                             stream));
  ExpertRows x{counts, counts + ranks * local, 2 * local, ElementType::f32, {}, {}};
  for (int r = 0; r < ranks; ++r) {
    x.sends.push_back(RowBlock{r, r, 1});
    x.receives.push_back(RowBlock{r, r, 1});
  }
  return x;
}

ExpertRows GpuMeshWorkload::expert_begin(const EpStep& step, cudaStream_t stream) {
  State& s = *state_;
  ExpertsUnit& experts = s.experts_unit(step.unit);
  const bool second = experts.second[pass_index(step.pass)];
  const detail::ExpertsPlan& plan = experts.plan;
  std::byte* cache = s.unit_at<std::byte>(s.plan.cache, step.unit);
  if (step.pass == TpPass::kForward && !second) {
    // The counts arrived: where every row lands, and the owner's GEMMs.
    const int ranks = s.ep.size;
    const auto* counts = s.at<int64_t>(detail::kMeshExpertCounts) + ranks * plan.layout.local;
    experts.received.resize(experts.sent.size());
    CUDA_CHECK(cudaMemcpyAsync(experts.received.data(), counts, experts.received.size() * sizeof(int64_t),
                               cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    experts.source_blocks = source_row_blocks(experts.sent, ranks);
    experts.owner_blocks = owner_row_blocks(experts.received, ranks);
    experts.runs = owner_expert_runs(experts.received, ranks);
    const int64_t rows = experts.runs.back().first + experts.runs.back().rows;
    RAGGED_ASSERT(rows <= plan.rows, fmt::format("GPU mesh workload: {} rows came to {}'s experts, at most {} planned",
                                                 rows, s.model.units[static_cast<size_t>(step.unit)].name, plan.rows));
    const detail::Regions block = s.cache(step.unit - 1);
    return ExpertRows{block[detail::kRoutedInput], cache + plan.input,  plan.hidden, s.config.params,
                      experts.source_blocks,       experts.owner_blocks};
  }
  ExpertRows x;
  x.row_elements = plan.hidden;
  x.type = s.config.params;
  x.sends = second ? experts.owner_blocks : experts.source_blocks;  // back to each source, or to the experts' ranks
  x.receives = second ? experts.source_blocks : experts.owner_blocks;
  if (step.pass == TpPass::kForward) {  // the experts' outputs home
    x.send = s.at<std::byte>(detail::kMeshExpertSend);
    x.receive = cache + plan.combined;
    return x;
  }
  if (!second) {
    // Each copy's output gradient gate x dout, in place of its output; d loss
    // / d gate waits in the routing tables for the block's backward.
    if (s.tp.size == 1) {  // the output gradient's gather, in place (tp's, under tp)
      exchange_in_place(TpStep{step.unit, UnitPart::kWhole, TpPass::kBackward, TpCollective::kAllGather}, stream);
    }
    detail::upload_routing(experts.routing, s.routing(), stream);
    const detail::RoutingTables tab = detail::routing_tables(s.routing(), plan.tokens * plan.top_k);
    const std::vector<int64_t>& offsets = experts.routing.offsets;
    detail::with_types(s.config, [&](auto storage, auto) {
      using S = decltype(storage);
      auto* y = reinterpret_cast<S*>(cache + plan.combined);
      for (size_t e = 0; e + 1 < offsets.size(); ++e) {
        const int64_t first = offsets[e], count = offsets[e + 1] - offsets[e];
        if (count == 0) continue;
        gate_backward(y + first * plan.hidden, tab.dgates, s.at<S>(detail::kMeshGradGathered), tab.rows + first,
                      tab.slots + first, tab.gates + first, count, plan.hidden, stream);
      }
    });
    x.send = cache + plan.combined;
    x.receive = s.at<std::byte>(detail::kMeshExpertReceive);
    return x;
  }
  x.send = s.at<std::byte>(detail::kMeshExpertSend);  // the experts' input gradients home
  x.receive = s.at<std::byte>(detail::kMeshExpertReceive);
  return x;
}

void GpuMeshWorkload::expert_end(const EpStep& step, cudaStream_t stream) {
  State& s = *state_;
  ExpertsUnit& experts = s.experts_unit(step.unit);
  bool& second = experts.second[pass_index(step.pass)];
  second = !second;
  // Only the forward's combine feeds something now: the mixture's output.
  if (step.pass != TpPass::kForward || second) return;
  const detail::ExpertsPlan& plan = experts.plan;
  std::byte* cache = s.unit_at<std::byte>(s.plan.cache, step.unit);
  const int64_t t = plan.tokens, h = plan.hidden;
  detail::upload_routing(experts.routing, s.routing(), stream);
  const detail::RoutingTables tab = detail::routing_tables(s.routing(), t * plan.top_k);
  const std::vector<int64_t>& offsets = experts.routing.offsets;
  detail::with_types(s.config, [&](auto storage, auto) {
    using S = decltype(storage);
    S* out = s.at<S>(detail::kMeshPartial);
    const auto* y = reinterpret_cast<const S*>(cache + plan.combined);
    CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<size_t>(t * h) * sizeof(S), stream));
    for (size_t e = 0; e + 1 < offsets.size(); ++e) {
      const int64_t first = offsets[e], count = offsets[e + 1] - offsets[e];
      if (count > 0) add_gated_rows(out, y + first * h, tab.rows + first, tab.gates + first, count, h, stream);
    }
    if (plan.has_shared) add(out, out, reinterpret_cast<const S*>(cache + plan.shared_output), t * h, stream);
  });
  // The block's residual joins after tp's reduce-scatter (the Program's under tp).
  if (s.tp.size == 1) {
    exchange_in_place(TpStep{step.unit, UnitPart::kWhole, TpPass::kForward, TpCollective::kReduceScatter}, stream);
  }
}

}  // namespace ragged::backend::gpu
