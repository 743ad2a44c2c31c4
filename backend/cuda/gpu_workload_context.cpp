// GpuMeshWorkload under context parallelism (gpu_workload_mesh.hpp): the
// host's workload_cp.cpp on the GPU. A block's attention computes as its
// input part (the q, k, v projections of the rank's tokens) and its core
// (the attention of the rank's queries, at their positions, over every key
// of their sequences, then the o projection), between which the cp group
// all-gathers every rank's keys and values (KeyValueSlot, context_chunks.hpp)
// and, backward, reduce-scatters the gradients of each rank's keys and
// values back to it. The keys travel before the k norm: the attention
// kernels norm every key they read, as the whole block's do.

#include "backend/context_chunks.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/gpu_workload_mesh.hpp"
#include "backend/cuda/gpu_workload_mesh_state.hpp"
#include "backend/cuda/mesh_kernels.hpp"
#include "backend/cuda/workload_kernels.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {

using models::UnitPart;

void GpuMeshWorkload::context_forward_part(int unit, UnitPart part, const std::vector<const void*>& params) {
  State& s = *state_;
  RAGGED_ASSERT(s.cp.size > 1, "GPU mesh workload: the attention's input and core parts are context parallelism's");
  const detail::BlockPlan& plan = s.block(unit);
  const detail::Regions cache = s.cache(unit);
  detail::with_types(s.config, [&](auto storage, auto) {
    using S = decltype(storage);
    if (part == UnitPart::kAttentionInput) {
      // cache[kInput] holds the gathered input.
      rms_norm_forward(reinterpret_cast<S*>(cache[detail::kNorm1]), reinterpret_cast<const S*>(cache[detail::kInput]),
                       detail::param<S>(params, plan.layout.in_norm), s.plan.tokens, s.plan.hidden, s.stream());
      detail::attention_input_forward_part<S>(s.gemms, plan, params, cache);
    } else {
      detail::attention_core_forward_part<S>(s.gemms, plan, params, cache, s.gathered_keys<S>(unit),
                                             s.at<S>(detail::kMeshPartial));
    }
  });
}

void GpuMeshWorkload::context_backward_part(int unit, UnitPart part, const std::vector<const void*>& params,
                                            const std::vector<void*>& grads) {
  State& s = *state_;
  RAGGED_ASSERT(s.cp.size > 1, "GPU mesh workload: the attention's input and core parts are context parallelism's");
  const detail::BlockPlan& plan = s.block(unit);
  const detail::Regions cache = s.cache(unit);
  std::byte* scratch = s.at<std::byte>(detail::kMeshScratch);
  detail::with_types(s.config, [&](auto storage, auto gradient) {
    using S = decltype(storage);
    using G = decltype(gradient);
    if (part == UnitPart::kAttentionCore) {
      // dq of the rank's queries, dk and dv of every key: the cp group then
      // sums each rank's keys' gradients (the Program's reduce-scatter).
      detail::attention_core_backward_part<S, G>(
          s.gemms, plan, params, grads, cache, scratch, s.at<S>(detail::kMeshGradGathered), s.gathered_keys<S>(unit),
          s.at<S>(detail::kMeshKeyGradsAll), s.at<S>(detail::kMeshValueGradsAll));
    } else {
      // The reduce-scatter left the rank's own keys' gradients in the scratch.
      detail::attention_input_backward_part<S, G>(s.gemms, plan, params, grads, cache, scratch);
      s.norm_backward<S, G>(unit, detail::kDNorm1, detail::kInput, plan.layout.in_norm, params, grads);
    }
  });
}

MeshExchange GpuMeshWorkload::key_value_begin(const TpStep& step, cudaStream_t stream) {
  State& s = *state_;
  RAGGED_ASSERT(s.cp.size > 1, "GPU mesh workload: a key/value exchange without context parallelism");
  const KeyValueSlot slot = s.key_value_slot(step.unit);
  const int64_t element = s.plan.element, key_bytes = slot.key_width * element,
                value_bytes = slot.value_width * element;
  std::byte* kv = s.at<std::byte>(detail::kMeshKeyValues);
  const int32_t* key_rows = s.at<int32_t>(detail::kMeshKeyRows);
  if (step.collective == TpCollective::kKeyValueGather) {
    // The rank's keys (before the k norm) and values, into its slot.
    const detail::Regions cache = s.cache(step.unit);
    std::byte* mine = kv + s.cp.rank * slot.size() * element;
    CUDA_CHECK(cudaMemcpyAsync(mine, cache[detail::kKey], static_cast<size_t>(slot.tokens * key_bytes),
                               cudaMemcpyDeviceToDevice, stream));
    CUDA_CHECK(cudaMemcpyAsync(mine + slot.values_at() * element, cache[detail::kValue],
                               static_cast<size_t>(slot.tokens * value_bytes), cudaMemcpyDeviceToDevice, stream));
  } else {
    // Slot q: the gradients this rank computed for rank q's keys and values.
    for (int q = 0; q < s.cp.size; ++q) {
      std::byte* to = kv + q * slot.size() * element;
      const int32_t* rows = key_rows + q * slot.tokens;
      copy_rows_indexed(to, nullptr, s.at<std::byte>(detail::kMeshKeyGradsAll), rows, slot.tokens, key_bytes, stream);
      copy_rows_indexed(to + slot.values_at() * element, nullptr, s.at<std::byte>(detail::kMeshValueGradsAll), rows,
                        slot.tokens, value_bytes, stream);
    }
  }
  return {kv, slot.size(), s.config.params};
}

void GpuMeshWorkload::key_value_end(const TpStep& step, cudaStream_t stream) {
  State& s = *state_;
  const KeyValueSlot slot = s.key_value_slot(step.unit);
  const int64_t element = s.plan.element, key_bytes = slot.key_width * element,
                value_bytes = slot.value_width * element;
  const std::byte* kv = s.at<std::byte>(detail::kMeshKeyValues);
  if (step.collective == TpCollective::kKeyValueGather) {
    // Every rank's keys and values at their positions in their sequences.
    for (int r = 0; r < s.cp.size; ++r) {
      const std::byte* from = kv + r * slot.size() * element;
      const int32_t* rows = s.at<int32_t>(detail::kMeshKeyRows) + r * slot.tokens;
      copy_rows_indexed(s.at<std::byte>(detail::kMeshKeysAll), rows, from, nullptr, slot.tokens, key_bytes, stream);
      copy_rows_indexed(s.at<std::byte>(detail::kMeshValuesAll), rows, from + slot.values_at() * element, nullptr,
                        slot.tokens, value_bytes, stream);
    }
    return;
  }
  // The rank's own keys' and values' gradients, where the input part's backward reads them.
  const detail::BlockPlan& plan = s.block(step.unit);
  std::byte* scratch = s.at<std::byte>(detail::kMeshScratch);
  const std::byte* mine = kv + s.cp.rank * slot.size() * element;
  CUDA_CHECK(cudaMemcpyAsync(scratch + plan.scratch_offset[detail::kDKey], mine,
                             static_cast<size_t>(slot.tokens * key_bytes), cudaMemcpyDeviceToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(scratch + plan.scratch_offset[detail::kDValue], mine + slot.values_at() * element,
                             static_cast<size_t>(slot.tokens * value_bytes), cudaMemcpyDeviceToDevice, stream));
}

}  // namespace ragged::backend::gpu
