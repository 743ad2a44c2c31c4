// What the GPU workload supports and the bytes it needs, without a GPU: the
// support check, each unit's cache and scratch layout, the private block.

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "backend/cuda/attention_gemm.hpp"
#include "backend/cuda/gpu_workload.hpp"
#include "backend/cuda/gpu_workload_layout.hpp"
#include "backend/workload.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu {

int64_t element_bytes(ElementType type) { return type == ElementType::f32 ? 4 : 2; }

int64_t GpuUnitBytes::kept(models::Checkpointing mode) const {
  switch (mode) {
    case models::Checkpointing::kNone:
      return saved;
    case models::Checkpointing::kSelective:
      return selective;
    case models::Checkpointing::kFull:
      return input;
  }
  return saved;
}

namespace detail {
namespace {

using models::UnitKind;
using models::UnitSpec;

[[noreturn]] void unsupported(const std::string& unit, const std::string& what) {
  throw InputError(
      fmt::format("unit {}: the GPU workload does not support {}; this model runs on --device cpu", unit, what));
}

void check_config(const GpuWorkloadConfig& config) {
  RAGGED_ASSERT(config.sequences > 0 && config.seq_len > 0, "GPU workload: a micro-batch has at least one token");
  if (config.params == ElementType::f32 && config.grads == ElementType::bf16) {
    throw InputError(
        "the GPU workload writes fp32 gradients for fp32 parameters (bf16 gradients need bf16 parameters)");
  }
}

const UnitSpec& unit_of(const models::ModelSpec& model, int unit, UnitKind kind) {
  RAGGED_ASSERT(unit >= 0 && unit < static_cast<int>(model.units.size()),
                fmt::format("GPU workload: no unit {}", unit));
  const UnitSpec& spec = model.units[static_cast<size_t>(unit)];
  RAGGED_ASSERT(spec.kind == kind, fmt::format("GPU workload: unit {} is not of the expected kind", spec.name));
  return spec;
}

bool has_bias(const ragged::backend::detail::GluLayout& glu) {
  return glu.gate.bias >= 0 || glu.up.bias >= 0 || glu.down.bias >= 0;
}

void check_experts(const std::string& unit, const ragged::backend::detail::MoeLayout& moe) {
  if (moe.routed.size() == 1 && moe.routed[0].fused) {
    unsupported(unit, "mixture-of-experts with fused expert tensors (one tensor holding every expert, gpt-oss style)");
  }
  bool biased = moe.has_shared && has_bias(moe.shared);
  for (const ragged::backend::detail::GluLayout& glu : moe.routed) biased = biased || has_bias(glu);
  if (biased) unsupported(unit, "mixture-of-experts with expert biases");
  // A token's experts must differ, so that one expert's rows are distinct tokens.
  if (moe.top_k > moe.experts) unsupported(unit, "mixture-of-experts routing a token to more experts than exist");
}

}  // namespace

void check_experts_unit(const models::ModelSpec& model, int unit) {
  const UnitSpec& spec = unit_of(model, unit, UnitKind::kExperts);
  const ragged::backend::detail::ExpertsLayout lay = ragged::backend::detail::experts_layout(model, spec);
  if (lay.routed.size() == 1 && lay.routed[0].fused) {
    unsupported(spec.name, "fused expert tensors (one tensor holding every expert, gpt-oss style)");
  }
  for (const ragged::backend::detail::GluLayout& glu : lay.routed) {
    if (has_bias(glu)) unsupported(spec.name, "expert biases");
  }
}

namespace {

ragged::backend::detail::BlockLayout supported_block_layout(const models::ModelSpec& model, const UnitSpec& spec) {
  if (model.arch.attention == models::AttentionKind::kMla) unsupported(spec.name, "multi-head latent attention (MLA)");
  ragged::backend::detail::BlockLayout lay;
  try {
    lay = ragged::backend::detail::block_layout(model, spec);
  } catch (const InternalError& e) {
    unsupported(spec.name, fmt::format("its tensors ({})", e.what()));
  }
  const ragged::backend::detail::AttentionLayout& att = lay.attention;
  if (lay.moe) check_experts(spec.name, lay.experts);
  if (att.sinks >= 0) unsupported(spec.name, "attention sinks");
  if (att.qk_dim != att.v_dim) unsupported(spec.name, "q/k heads wider than v heads");
  if (att.qk_dim > 1024) unsupported(spec.name, "heads wider than 1024");
  // The softmax's statistics (16 bytes per token and head) borrow the
  // norm-1 gradient's scratch (hidden elements per token, 2 bytes or more).
  if (16 * att.heads > 2 * model.arch.hidden) unsupported(spec.name, "more than hidden / 8 heads");
  if (att.kv_heads <= 0 || att.heads % att.kv_heads != 0)
    unsupported(spec.name, "kv heads that do not divide the heads");
  return lay;
}

// Full checkpointing: the forward scratch slot of each dropped region;
// regions sharing a slot are never live at once (gpu_workload_block.cpp,
// gpu_workload_moe.cpp): the logits take k's slot, the routed rows q's, the
// shared experts' gate v's (they live while the routed experts run).
constexpr std::array<int, kBlockRegions> kFullSlots = {-1, 0, 1, 2, 3, 1, 0, 4, 5, 6, 5,
                                                       2,  1, 5, 6, 5, 3, 7, 3};
constexpr int kFullSlotCount = 8;

}  // namespace

int64_t round_up(int64_t bytes, int64_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }

bool block_keeps(BlockRegion region, Checkpointing mode, bool moe) {
  switch (mode) {
    case Checkpointing::kNone:
      return true;
    case Checkpointing::kSelective:
      if (!moe) return region == kInput || region == kQuery || region == kValue || region == kMixed || region == kGate;
      return region != kNorm1 && region != kNorm2 && region != kProduct && region != kRoutedProduct &&
             region != kSharedProduct;
    case Checkpointing::kFull:
      return region == kInput;
  }
  return true;
}

int64_t BlockPlan::kept_bytes(Checkpointing mode) const {
  int64_t total = 0;
  for (int r = 0; r < kBlockRegions; ++r) {
    if (block_keeps(static_cast<BlockRegion>(r), mode, layout.moe)) total += bytes[static_cast<size_t>(r)];
  }
  return total;
}

int64_t BlockPlan::offset(BlockRegion region, Checkpointing mode) const {
  const bool kept = block_keeps(region, mode, layout.moe);
  int64_t at = 0;
  for (int r = 0; r < region; ++r) {
    if (block_keeps(static_cast<BlockRegion>(r), mode, layout.moe) == kept) at += bytes[static_cast<size_t>(r)];
  }
  return at;
}

int64_t BlockPlan::forward_offset(BlockRegion region, Checkpointing mode) const {
  RAGGED_ASSERT(!block_keeps(region, mode, layout.moe), "GPU workload: a kept region has no forward scratch");
  // Mixture of experts: norm 1, norm 2, the products, one after the other in
  // one slot. Dense: the rebuilt regions overlap in time (k with norm 1; the
  // residual with norm 2, up and the product): each has its own place.
  if (mode == Checkpointing::kSelective) return layout.moe ? 0 : offset(region, mode);
  std::array<int64_t, kFullSlotCount> slot_bytes{};
  for (int r = 1; r < kBlockRegions; ++r) {
    int64_t& slot = slot_bytes[static_cast<size_t>(kFullSlots[static_cast<size_t>(r)])];
    slot = std::max(slot, bytes[static_cast<size_t>(r)]);
  }
  int64_t at = 0;
  for (int s = 0; s < kFullSlots[static_cast<size_t>(region)]; ++s) at += slot_bytes[static_cast<size_t>(s)];
  return at;
}

int64_t BlockPlan::forward_scratch_bytes(Checkpointing mode) const {
  int64_t end = 0;
  for (int r = 0; r < kBlockRegions; ++r) {
    const auto region = static_cast<BlockRegion>(r);
    if (!block_keeps(region, mode, layout.moe)) end = std::max(end, forward_offset(region, mode) + bytes[static_cast<size_t>(r)]);
  }
  return end;
}

Regions BlockPlan::regions(Checkpointing mode, std::byte* saved, std::byte* dropped, bool forward_scratch) const {
  Regions out{};
  for (int r = 0; r < kBlockRegions; ++r) {
    const auto region = static_cast<BlockRegion>(r);
    if (block_keeps(region, mode, layout.moe)) {
      out[static_cast<size_t>(r)] = saved + offset(region, mode);
    } else {
      out[static_cast<size_t>(r)] = dropped + (forward_scratch ? forward_offset(region, mode) : offset(region, mode));
    }
  }
  return out;
}

Checkpointing BlockPlan::mode_for(int64_t capacity, int64_t carved, const std::string& unit) const {
  Checkpointing mode = Checkpointing::kNone;
  if (capacity < saved_bytes()) mode = Checkpointing::kSelective;
  if (capacity < kept_bytes(Checkpointing::kSelective)) mode = Checkpointing::kFull;
  if (capacity < kept_bytes(Checkpointing::kFull)) {
    throw InputError(
        fmt::format("GPU workload: forward of {} keeps at least its input, {} bytes; its activation "
                    "buffer holds {} bytes",
                    unit, kept_bytes(Checkpointing::kFull), capacity));
  }
  if (forward_scratch_bytes(mode) > carved) {
    throw InputError(
        fmt::format("GPU workload: forward of {} keeps {} of its {} bytes in an activation buffer of {} "
                    "bytes (activation checkpointing) and needs {} bytes of forward scratch, but {} "
                    "bytes were carved (configure the workload's checkpointing as the run's)",
                    unit, kept_bytes(mode), saved_bytes(), capacity, forward_scratch_bytes(mode), carved));
  }
  return mode;
}

BlockPlan block_plan(const models::ModelSpec& model, const GpuWorkloadConfig& config, int unit) {
  check_config(config);
  const UnitSpec& spec = unit_of(model, unit, UnitKind::kBlock);
  BlockPlan p;
  p.layout = supported_block_layout(model, spec);
  const ragged::backend::detail::AttentionLayout& att = p.layout.attention;
  p.tokens = config.sequences * config.seq_len;
  p.seq_len = config.seq_len;
  p.hidden = model.arch.hidden;
  p.q_width = att.heads * att.qk_dim;
  p.kv_width = att.kv_heads * att.qk_dim;
  p.ffn = p.layout.dense.width;
  p.element = element_bytes(config.params);
  auto region = [&](int64_t width) { return round_up(p.tokens * width * p.element); };
  const int64_t h = region(p.hidden), q = region(p.q_width), kv = region(p.kv_width), f = region(p.ffn);
  p.bytes = {h, h, q, kv, kv, q, h, h, f, f, f, 0, 0, 0, 0, 0, 0, 0, 0};
  p.scratch_offset = {0, f, 2 * f, 0, 0, 0, q, q + kv, q + 2 * kv};
  const int64_t attention_scratch = q + 2 * kv + h;
  p.scratch_bytes = std::max(2 * f + h, attention_scratch);
  if (!p.layout.moe) return p;

  const ragged::backend::detail::MoeLayout& moe = p.layout.experts;
  // Expert parallelism: the routed experts are the next unit's (experts_plan).
  p.expert_ffn = moe.routed.empty() ? 0 : moe.routed.front().width;
  p.shared_ffn = moe.has_shared ? moe.shared.width : 0;
  p.expert_rows = p.tokens;
  auto copies = [&](int64_t width) { return round_up(p.tokens * moe.top_k * width * p.element); };
  const int64_t routed = copies(p.expert_ffn), shared = region(p.shared_ffn);
  p.bytes[kLogits] = round_up(p.tokens * moe.experts * 4);
  p.bytes[kRoutedInput] = copies(p.hidden);
  p.bytes[kRoutedGate] = p.bytes[kRoutedUp] = p.bytes[kRoutedProduct] = routed;
  p.bytes[kSharedGate] = p.bytes[kSharedUp] = p.bytes[kSharedProduct] = shared;
  // One expert at a time (the shared experts: every token): its rows of
  // hidden width (output, then input gradient) and its gate/up gradients;
  // then the logits' gradient in the rows' place.
  const int64_t wide = round_up(p.expert_rows * std::max(p.hidden, moe.experts) * p.element);
  const int64_t narrow = round_up(p.expert_rows * std::max(p.expert_ffn, p.shared_ffn) * p.element);
  p.scratch_offset[kDNorm2] = 0;
  p.scratch_offset[kDRows] = p.scratch_offset[kDLogits] = h;
  p.scratch_offset[kDGate] = h + wide;
  p.scratch_offset[kDUp] = h + wide + narrow;
  p.scratch_bytes = std::max(h + wide + 2 * narrow, attention_scratch);
  return p;
}

HeadPlan head_plan(const models::ModelSpec& model, const GpuWorkloadConfig& config) {
  check_config(config);
  const int unit = static_cast<int>(model.units.size()) - 1;
  const UnitSpec& spec = unit_of(model, unit, UnitKind::kHead);
  if (head_reads_embedding(model)) unsupported(spec.name, "tied embeddings (the head reading the embedding table)");
  HeadPlan p;
  const ragged::backend::detail::HeadLayout lay = ragged::backend::detail::head_layout(model, spec);
  p.norm = lay.norm;
  p.weight = lay.weight;
  p.tokens = config.sequences * config.seq_len;
  p.hidden = model.arch.hidden;
  p.vocab = model.arch.vocab;
  p.element = element_bytes(config.params);
  p.input_bytes = round_up(p.tokens * p.hidden * p.element);
  p.norm_bytes = p.input_bytes;
  p.probs_bytes = round_up(p.tokens * p.vocab * 4);
  // fp32: the logits' gradient overwrites the probabilities.
  p.dlogits_bytes = config.params == ElementType::f32 ? 0 : round_up(p.tokens * p.vocab * p.element);
  p.dnorm_bytes = p.input_bytes;
  return p;
}

ExpertBuffers expert_buffers(const models::ModelSpec& model, const GpuWorkloadConfig& config) {
  const int64_t tokens = config.sequences * config.seq_len;
  ExpertBuffers out;
  for (int u = 1; u + 1 < static_cast<int>(model.units.size()); ++u) {
    if (model.units[static_cast<size_t>(u)].kind == UnitKind::kExperts) continue;
    const BlockPlan block = block_plan(model, config, u);
    if (!block.layout.moe) continue;
    out.tables = std::max(out.tables, routing_layout(tokens * block.layout.experts.top_k).bytes);
    out.output = std::max(out.output, block.expert_rows * block.hidden * block.element);
  }
  return out;
}

int64_t gemm_attention_private_bytes(const models::ModelSpec& model, const GpuWorkloadConfig& config) {
  const char* choice = std::getenv("RAGGED_GPU_ATTENTION");
  if (choice != nullptr && std::string_view(choice) == "reference") return 0;
  for (int u = 1; u + 1 < static_cast<int>(model.units.size()); ++u) {
    if (model.units[static_cast<size_t>(u)].kind == UnitKind::kExperts) continue;
    const ragged::backend::detail::AttentionLayout& att = block_plan(model, config, u).layout.attention;
    if (att.q_norm >= 0 || att.k_norm >= 0 || att.sinks >= 0) return 0;
  }
  return gemm_attention_scratch_bytes(config.seq_len, element_bytes(config.params));
}

PrivatePlan private_plan(const models::ModelSpec& model, const GpuWorkloadConfig& config) {
  check_config(config);
  const int64_t tokens = config.sequences * config.seq_len;
  int64_t forward_scratch = 0;
  for (int u = 1; u + 1 < static_cast<int>(model.units.size()) && config.checkpointing != Checkpointing::kNone; ++u) {
    if (model.units[static_cast<size_t>(u)].kind == UnitKind::kExperts) continue;
    const BlockPlan block = block_plan(model, config, u);
    forward_scratch = std::max({forward_scratch, block.forward_scratch_bytes(config.checkpointing),
                                block.forward_scratch_bytes(Checkpointing::kSelective)});
  }
  const ExpertBuffers experts = expert_buffers(model, config);
  const int64_t stream = tokens * model.arch.hidden * element_bytes(config.params);
  const std::array<int64_t, kPrivateBuffers> sizes = {stream,
                                                      stream,
                                                      4 * tokens,
                                                      4 * tokens,
                                                      4 * tokens,
                                                      4 * (model.arch.vocab + 1),
                                                      experts.tables,
                                                      experts.output,
                                                      8 * tokens,
                                                      8,
                                                      forward_scratch,
                                                      gemm_attention_private_bytes(model, config)};
  PrivatePlan plan;
  plan.forward_scratch = forward_scratch;
  plan.attention_scratch = sizes[kAttentionScratch];
  for (size_t i = 0; i < sizes.size(); ++i) {
    plan.offset[i] = plan.bytes;
    plan.bytes = round_up(plan.bytes + sizes[i], 256);
  }
  return plan;
}

void group_by_token(const std::vector<int32_t>& tokens, int64_t vocab, std::vector<int32_t>& order,
                    std::vector<int32_t>& rows) {
  rows.assign(static_cast<size_t>(vocab + 1), 0);
  for (int32_t token : tokens) {
    if (token >= 0) ++rows[static_cast<size_t>(token) + 1];
  }
  for (size_t v = 1; v < rows.size(); ++v) rows[v] += rows[v - 1];
  std::vector<int32_t> next(rows.begin(), rows.end() - 1);
  order.assign(static_cast<size_t>(rows.back()), 0);
  for (size_t p = 0; p < tokens.size(); ++p) {
    if (tokens[p] >= 0) order[static_cast<size_t>(next[static_cast<size_t>(tokens[p])]++)] = static_cast<int32_t>(p);
  }
}

RoutingLayout routing_layout(int64_t copies) {
  RoutingLayout out;
  out.gates = 4 * copies;
  out.slots = 8 * copies;
  out.slot_experts = 12 * copies;
  out.slot_gates = 16 * copies;
  out.dgates = round_up(20 * copies, 8);
  out.bytes = out.dgates + 8 * copies;
  return out;
}

}  // namespace detail

void check_gpu_supported(const models::ModelSpec& model) {
  check_workload_supported(model);
  const auto units = static_cast<int>(model.units.size());
  RAGGED_ASSERT(units >= 2 && model.units.front().kind == models::UnitKind::kEmbedding &&
                    model.units.back().kind == models::UnitKind::kHead,
                "GPU workload: a model starts with its embedding and ends with its head");
  const models::UnitSpec& embed = model.units.front();
  if (embed.tensors.size() != 1 ||
      embed.tensors[0].shape != std::vector<int64_t>{model.arch.vocab, model.arch.hidden}) {
    detail::unsupported(embed.name, "an embedding other than one [vocab, hidden] table");
  }
  const GpuWorkloadConfig any;
  detail::head_plan(model, any);
  for (int u = 1; u + 1 < units; ++u) {
    if (model.units[static_cast<size_t>(u)].kind == models::UnitKind::kExperts) {
      detail::check_experts_unit(model, u);
    } else {
      detail::block_plan(model, any, u);
    }
  }
}

GpuUnitBytes gpu_unit_bytes(const models::ModelSpec& model, const GpuWorkloadConfig& config, int unit) {
  RAGGED_ASSERT(unit >= 0 && unit < static_cast<int>(model.units.size()),
                fmt::format("GPU workload: no unit {}", unit));
  GpuUnitBytes out;
  switch (model.units[static_cast<size_t>(unit)].kind) {
    case models::UnitKind::kEmbedding:
      return out;
    case models::UnitKind::kExperts:
      throw InputError(
          "GPU workload: experts in units of their own (training.mesh.ep > 1) run in the mesh workload "
          "(gpu_workload_mesh.hpp), which keeps their activations itself");
    case models::UnitKind::kBlock: {
      const detail::BlockPlan p = detail::block_plan(model, config, unit);
      out.saved = p.saved_bytes();
      out.selective = p.kept_bytes(models::Checkpointing::kSelective);
      out.input = p.kept_bytes(models::Checkpointing::kFull);
      out.workspace = p.scratch_bytes;
      break;
    }
    case models::UnitKind::kHead: {
      const detail::HeadPlan p = detail::head_plan(model, config);
      out.saved = out.selective = out.input = p.saved_bytes();
      out.workspace = p.scratch_bytes();
      out.loss_gradient = p.dlogits_bytes;
      break;
    }
  }
  out.recompute = out.saved - out.input;
  return out;
}

int64_t gpu_private_bytes(const models::ModelSpec& model, const GpuWorkloadConfig& config) {
  return detail::private_plan(model, config).bytes;
}

}  // namespace ragged::backend::gpu
