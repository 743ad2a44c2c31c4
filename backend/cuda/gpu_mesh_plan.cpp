// Where a tensor-parallel rank's GPU workload keeps what it computes
// (gpu_workload_layout.hpp, MeshPlan), known without a GPU.

#include <fmt/format.h>

#include <algorithm>

#include "backend/context_chunks.hpp"
#include "backend/cuda/gpu_workload_layout.hpp"
#include "backend/expert_rows.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu::detail {

namespace {

bool is_experts(const models::ModelSpec& model, int unit) {
  return model.units[static_cast<size_t>(unit)].kind == models::UnitKind::kExperts;
}

}  // namespace

ExpertsPlan experts_plan(const models::ModelSpec& model, const GpuWorkloadConfig& config, int unit) {
  check_experts_unit(model, unit);
  RAGGED_ASSERT(unit > 1 && !is_experts(model, unit - 1), "GPU workload: an experts unit follows its block");
  ExpertsPlan p;
  p.layout = ragged::backend::detail::experts_layout(model, model.units[static_cast<size_t>(unit)]);
  const ragged::backend::detail::MoeLayout moe =
      ragged::backend::detail::block_layout(model, model.units[static_cast<size_t>(unit) - 1]).experts;
  p.has_shared = moe.has_shared;
  p.ranks = model.split.ep;
  p.tokens = config.sequences * config.seq_len;
  p.top_k = moe.top_k;
  p.hidden = model.arch.hidden;
  p.ffn = p.layout.routed.front().width;
  p.element = element_bytes(config.params);
  p.rows = owner_row_bound(p.ranks, p.tokens, p.top_k, p.layout.local);
  const int64_t copies = p.tokens * p.top_k;
  const auto carve = [&p](int64_t bytes) {
    const int64_t at = p.bytes;
    p.bytes += round_up(bytes);
    return at;
  };
  p.combined = carve(copies * p.hidden * p.element);
  p.shared_output = carve(p.has_shared ? p.tokens * p.hidden * p.element : 0);
  p.input = carve(p.rows * p.hidden * p.element);
  p.gate = carve(p.rows * p.ffn * p.element);
  p.up = carve(p.rows * p.ffn * p.element);
  p.product = carve(p.rows * p.ffn * p.element);
  p.send_bytes = p.rows * p.hidden * p.element;
  p.receive_bytes = std::max(p.rows, copies) * p.hidden * p.element;
  p.scratch_bytes = 2 * round_up(p.rows * p.ffn * p.element);
  p.counts_bytes = 2 * p.ranks * p.layout.local * 8;
  return p;
}

GpuWorkloadConfig context_local(const GpuWorkloadConfig& config, int cp) {
  check_context_split(cp, config.seq_len);
  GpuWorkloadConfig local = config;
  local.seq_len = config.seq_len / cp;
  return local;
}

MeshPlan mesh_plan(const models::ModelSpec& model, const GpuWorkloadConfig& sequences, int tp, int cp) {
  MeshPlan p;
  p.cp = cp;
  p.sequences = sequences.sequences;
  p.seq_len = sequences.seq_len;
  const GpuWorkloadConfig config = cp > 1 ? context_local(sequences, cp) : sequences;
  p.tokens = config.sequences * config.seq_len;
  if (tp < 1 || p.tokens % tp != 0) {
    throw InputError(fmt::format("training.mesh.tp {}: a micro-batch of {} tokens does not split into equal rows; use "
                                 "a micro_batch_size x sequence_length that tp divides",
                                 tp, p.tokens));
  }
  p.rows = p.tokens / tp;
  p.hidden = model.arch.hidden;
  p.vocab = model.arch.vocab;
  p.element = element_bytes(config.params);
  const HeadPlan head = head_plan(model, config);
  const int64_t whole = p.tokens * p.hidden * p.element, rows = p.rows * p.hidden * p.element;
  int64_t scratch = head.dnorm_bytes;
  const auto units = static_cast<int>(model.units.size());
  std::vector<int64_t> cache_bytes(static_cast<size_t>(units), 0);
  ExpertsPlan exchange;  // the largest exchange buffers of the experts units
  for (int u = 1; u + 1 < units; ++u) {
    if (is_experts(model, u)) {
      const ExpertsPlan experts = experts_plan(model, config, u);
      cache_bytes[static_cast<size_t>(u)] = experts.bytes;
      exchange.send_bytes = std::max(exchange.send_bytes, experts.send_bytes);
      exchange.receive_bytes = std::max(exchange.receive_bytes, experts.receive_bytes);
      exchange.scratch_bytes = std::max(exchange.scratch_bytes, experts.scratch_bytes);
      exchange.counts_bytes = std::max(exchange.counts_bytes, experts.counts_bytes);
      continue;
    }
    const BlockPlan block = block_plan(model, config, u);
    cache_bytes[static_cast<size_t>(u)] = block.saved_bytes();
    scratch = std::max(scratch, block.scratch_bytes);
    p.kv_width = std::max(p.kv_width, block.kv_width);
  }
  const ExpertBuffers experts = expert_buffers(model, config);
  // Context parallelism's keys and values (a value is as wide as a key on the GPU).
  const int64_t group_tokens = cp > 1 ? cp * p.tokens : 0;
  const int64_t every_key = group_tokens * p.kv_width * p.element;
  const std::array<int64_t, kMeshBuffers> sizes = {head.saved_bytes(),
                                                   tp * p.tokens * 3 * 8,
                                                   p.tokens * 8,
                                                   8,
                                                   head.dlogits_bytes,
                                                   whole,
                                                   whole,
                                                   scratch,
                                                   rows,
                                                   rows,
                                                   4 * p.tokens,
                                                   4 * p.tokens,
                                                   4 * p.tokens,
                                                   4 * (p.vocab + 1),
                                                   2 * every_key,
                                                   every_key,
                                                   every_key,
                                                   every_key,
                                                   every_key,
                                                   cp > 1 ? 4 * p.tokens : 0,
                                                   4 * group_tokens,
                                                   experts.tables,
                                                   experts.output,
                                                   exchange.send_bytes,
                                                   exchange.receive_bytes,
                                                   exchange.scratch_bytes,
                                                   exchange.counts_bytes};
  const auto carve = [&p](int64_t bytes) {
    const int64_t at = p.bytes;
    p.bytes = round_up(p.bytes + bytes, 256);
    return at;
  };
  for (size_t i = 0; i < sizes.size(); ++i) p.offset[i] = carve(sizes[i]);
  p.output.assign(static_cast<size_t>(units), -1);
  p.residual.assign(static_cast<size_t>(units), -1);
  p.cache.assign(static_cast<size_t>(units), -1);
  for (int u = 0; u + 1 < units; ++u) {
    const auto i = static_cast<size_t>(u);
    p.output[i] = carve(rows);
    if (u == 0) continue;
    if (!is_experts(model, u)) p.residual[i] = carve(rows);  // an experts unit adds its block's
    p.cache[i] = carve(cache_bytes[i]);
  }
  return p;
}

}  // namespace ragged::backend::gpu::detail
