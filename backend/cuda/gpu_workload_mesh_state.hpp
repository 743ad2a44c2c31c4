#pragma once
// Internal to the GPU mesh workload: what one rank's GpuMeshWorkload holds
// (gpu_workload_mesh.cpp runs the tp parts and exchanges,
// gpu_workload_context.cpp context parallelism's).

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/context_chunks.hpp"
#include "backend/cuda/gpu_workload_internal.hpp"
#include "backend/cuda/gpu_workload_mesh.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {

// An experts unit under expert parallelism: its memory, its block's routing
// (kept on the host from the block's forward), the rows it sent each rank's
// local experts and received from each source (expert_row_counts' order)
// and where they lie, and which exchange of a pass comes next.
struct ExpertsUnit {
  detail::ExpertsPlan plan;
  detail::ExpertRouting routing;
  std::vector<int64_t> sent, received;
  std::vector<RowBlock> source_blocks, owner_blocks;
  std::vector<ExpertRun> runs;
  bool second[2] = {false, false};  // per pass (forward, backward): its first exchange ran
};

struct GpuMeshWorkload::State {
  models::ModelSpec model;
  GpuWorkloadConfig config;  // a cp rank's: seq_len / cp tokens of each sequence
  TensorParallelRank tp;
  ContextParallelRank cp;
  ExpertParallelRank ep;
  detail::Gemms gemms;
  std::vector<detail::BlockPlan> blocks;  // unit u at u - 1 (an experts unit's: empty)
  std::vector<ExpertsUnit> experts;       // per unit (an experts unit's)
  detail::HeadPlan head;
  detail::MeshPlan plan;
  std::byte* base = nullptr;
  std::vector<int32_t> tokens_host, labels_host, order_host, rows_host;
  // Context parallelism: each local token's position, gathered_key_rows (uploaded once).
  std::vector<int32_t> positions_host, key_rows_host;
  int head_forwards = 0;
  bool head_dlogits = false;  // loss_backward ran since the head's forward

  State(const models::ModelSpec& spec, const GpuWorkloadConfig& c, TensorParallelRank tp_rank,
        ContextParallelRank cp_rank, ExpertParallelRank ep_rank, cublasHandle_t cublas, cudaStream_t stream)
      : model(spec),
        config(cp_rank.size > 1 ? detail::context_local(c, cp_rank.size) : c),
        tp(tp_rank),
        cp(cp_rank),
        ep(ep_rank),
        gemms(cublas, stream, c) {}

  cudaStream_t stream() const { return gemms.stream(); }
  int units() const { return static_cast<int>(model.units.size()); }
  template <typename T>
  T* at(detail::MeshBuffer which) const {
    return reinterpret_cast<T*>(base + plan.offset[which]);
  }
  template <typename T>
  T* unit_at(const std::vector<int64_t>& offsets, int unit) const {
    const int64_t offset = offsets.at(static_cast<size_t>(unit));
    RAGGED_ASSERT(offset >= 0, fmt::format("GPU mesh workload: unit {} keeps no such buffer", unit));
    return reinterpret_cast<T*>(base + offset);
  }
  const detail::BlockPlan& block(int unit) const { return blocks.at(static_cast<size_t>(unit) - 1); }
  bool is_experts(int unit) const {
    return model.units.at(static_cast<size_t>(unit)).kind == models::UnitKind::kExperts;
  }
  // A block whose routed experts are the next unit's (expert parallelism).
  bool experts_apart(int unit) const { return block(unit).layout.experts_apart; }
  ExpertsUnit& experts_unit(int unit) {
    RAGGED_ASSERT(is_experts(unit), fmt::format("GPU mesh workload: unit {} is no experts unit", unit));
    return experts.at(static_cast<size_t>(unit));
  }
  detail::Regions cache(int unit) const {
    return block(unit).regions(models::Checkpointing::kNone, unit_at<std::byte>(plan.cache, unit), nullptr, false);
  }
  detail::HeadCache head_cache() const {
    std::byte* saved = at<std::byte>(detail::kMeshHeadCache);
    return detail::HeadCache{saved, saved + head.input_bytes,
                             reinterpret_cast<float*>(saved + head.input_bytes + head.norm_bytes)};
  }
  const models::UnitSpec& unit_checked(int unit, size_t pointers) const {
    RAGGED_ASSERT(unit >= 0 && unit < units(), fmt::format("GPU mesh workload: no unit {}", unit));
    const models::UnitSpec& spec = model.units[static_cast<size_t>(unit)];
    RAGGED_ASSERT(pointers == spec.tensors.size(), fmt::format("GPU mesh workload: unit {} takes {} tensors, got {}",
                                                               spec.name, spec.tensors.size(), pointers));
    return spec;
  }
  // Where the running MoE block routes (the private expert buffers).
  detail::MoeRouting routing() const {
    return {at<int32_t>(detail::kMeshExpertRows), at<std::byte>(detail::kMeshExpertOutput)};
  }
  // A rank's slot of a hidden state: its rows.
  int64_t slot() const { return plan.rows * plan.hidden; }
  int64_t slot_bytes() const { return slot() * plan.element; }
  // The backward of a block's norm over the gathered rows: its weight's
  // gradient written, its input gradient into kMeshPartial, a partial sum
  // (the rank's heads or columns) that the Program reduce-scatters.
  template <typename S, typename G>
  void norm_backward(int unit, detail::BlockScratch dnorm, detail::BlockRegion input, int weight,
                     const detail::Params& params, const detail::Grads& grads) const {
    const S* dn = reinterpret_cast<const S*>(at<std::byte>(detail::kMeshScratch) + block(unit).scratch_offset[dnorm]);
    const S* x = reinterpret_cast<const S*>(cache(unit)[input]);
    const int64_t t = plan.tokens, h = plan.hidden;
    rms_norm_weight_grad(detail::grad<G>(grads, weight), dn, x, t, h, stream());
    rms_norm_backward<S>(at<S>(detail::kMeshPartial), nullptr, dn, x, detail::param<S>(params, weight), t, h, stream());
  }
  // A cp rank's slot of unit `unit`'s key/value exchange.
  KeyValueSlot key_value_slot(int unit) const { return {plan.tokens, block(unit).kv_width, block(unit).kv_width}; }
  // The keys and values every token of the rank's sequences (gathered) gives
  // the core of `unit`, its queries at their positions.
  template <typename S>
  detail::KeysRead<S> gathered_keys(int unit) const {
    const ragged::backend::detail::AttentionLayout& att = block(unit).layout.attention;
    AttentionShape shape{plan.tokens, plan.seq_len, att.heads, att.kv_heads, att.qk_dim};
    shape.queries = plan.seq_len / cp.size;
    shape.positions = at<int32_t>(detail::kMeshPositions);
    return {at<S>(detail::kMeshKeysAll), at<S>(detail::kMeshValuesAll), shape};
  }
};

}  // namespace ragged::backend::gpu
