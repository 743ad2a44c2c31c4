// Where each tensor of a unit sits, found by its Hugging Face name; shapes are
// checked against the architecture, and a tensor the workload does not know
// is an error rather than a parameter silently left without a gradient.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/workload_internal.hpp"
#include "common/errors.hpp"

namespace ragged::backend::detail {
namespace {

using models::ArchConfig;
using models::UnitSpec;

class TensorMap {
 public:
  // Names are looked up without `prefix` (default: the unit's name and a dot).
  explicit TensorMap(const UnitSpec& unit, std::string prefix = "") : unit_(unit), used_(unit.tensors.size(), false) {
    if (prefix.empty()) prefix = unit.name + ".";
    for (size_t i = 0; i < unit.tensors.size(); ++i) {
      std::string_view name = unit.tensors[i].name;
      if (name.starts_with(prefix)) name.remove_prefix(prefix.size());
      index_.emplace(std::string(name), static_cast<int>(i));
    }
  }

  bool has(const std::string& local) const { return index_.contains(local); }

  // The tensor's index, or -1; a tensor found counts as used.
  int find(const std::string& local, const std::vector<int64_t>& shape) {
    auto it = index_.find(local);
    if (it == index_.end()) return -1;
    const int i = it->second;
    const std::vector<int64_t>& actual = unit_.tensors[static_cast<size_t>(i)].shape;
    if (actual != shape) {
      throw InternalError(fmt::format("host workload: tensor {} has shape [{}], expected [{}]",
                                      unit_.tensors[static_cast<size_t>(i)].name, fmt::join(actual, ", "),
                                      fmt::join(shape, ", ")));
    }
    used_[static_cast<size_t>(i)] = true;
    return i;
  }

  int need(const std::string& local, const std::vector<int64_t>& shape) {
    const int i = find(local, shape);
    if (i < 0) throw InternalError(fmt::format("host workload: unit {} has no tensor {}", unit_.name, local));
    return i;
  }

  const std::vector<int64_t>& shape_of(const std::string& local) const {
    return unit_.tensors[static_cast<size_t>(index_.at(local))].shape;
  }

  LinearSlot projection(const std::string& name, int64_t out, int64_t in) {
    return LinearSlot{need(name + ".weight", {out, in}), find(name + ".bias", {out}), out, in};
  }

  void check_all_used() const {
    for (size_t i = 0; i < used_.size(); ++i) {
      if (used_[i]) continue;
      throw InternalError(
          fmt::format("host workload: tensor {} of unit {} is not supported yet", unit_.tensors[i].name, unit_.name));
    }
  }

 private:
  const UnitSpec& unit_;
  std::vector<bool> used_;
  std::unordered_map<std::string, int> index_;
};

AttentionLayout gqa_layout(const ArchConfig& arch, TensorMap& map) {
  AttentionLayout lay;
  lay.heads = arch.heads;
  lay.kv_heads = arch.kv_heads;
  lay.qk_dim = arch.head_dim;
  lay.v_dim = arch.head_dim;
  const int64_t h = arch.hidden;
  const int64_t q = arch.heads * arch.head_dim;
  const int64_t kv = arch.kv_heads * arch.head_dim;
  lay.q = map.projection("self_attn.q_proj", q, h);
  lay.k = map.projection("self_attn.k_proj", kv, h);
  lay.v = map.projection("self_attn.v_proj", kv, h);
  lay.o = map.projection("self_attn.o_proj", h, q);
  lay.q_norm = map.find("self_attn.q_norm.weight", {arch.head_dim});
  lay.k_norm = map.find("self_attn.k_norm.weight", {arch.head_dim});
  lay.sinks = map.find("self_attn.sinks", {arch.heads});
  return lay;
}

AttentionLayout mla_layout(const ArchConfig& arch, TensorMap& map) {
  AttentionLayout lay;
  lay.mla = true;
  lay.heads = arch.heads;
  lay.kv_heads = arch.heads;
  lay.nope = arch.qk_nope_head_dim;
  lay.rope = arch.qk_rope_head_dim;
  lay.qk_dim = lay.nope + lay.rope;
  lay.v_dim = arch.v_head_dim;
  lay.q_lora = arch.q_lora_rank;
  lay.kv_lora = arch.kv_lora_rank;
  const int64_t h = arch.hidden;
  const int64_t q = lay.heads * lay.qk_dim;
  if (lay.q_lora > 0) {
    lay.q_a = map.projection("self_attn.q_a_proj", lay.q_lora, h);
    lay.q_a_norm = map.need("self_attn.q_a_layernorm.weight", {lay.q_lora});
    lay.q_b = map.projection("self_attn.q_b_proj", q, lay.q_lora);
  } else {
    lay.q = map.projection("self_attn.q_proj", q, h);
  }
  lay.kv_a = map.projection("self_attn.kv_a_proj_with_mqa", lay.kv_lora + lay.rope, h);
  lay.kv_a_norm = map.need("self_attn.kv_a_layernorm.weight", {lay.kv_lora});
  lay.kv_b = map.projection("self_attn.kv_b_proj", lay.heads * (lay.nope + lay.v_dim), lay.kv_lora);
  lay.o = map.projection("self_attn.o_proj", h, lay.heads * lay.v_dim);
  return lay;
}

GluLayout swiglu_layout(TensorMap& map, const std::string& base, const std::string& gate, const std::string& up,
                        const std::string& down, int64_t hidden, int64_t width) {
  GluLayout lay;
  lay.width = width;
  lay.gate = map.projection(base + gate, width, hidden);
  lay.up = map.projection(base + up, width, hidden);
  lay.down = map.projection(base + down, hidden, width);
  return lay;
}

// Mixtral names its block "block_sparse_moe.", the others "mlp.".
std::string moe_block(const TensorMap& map) {
  return map.has("block_sparse_moe.gate.weight") || map.has("block_sparse_moe.experts.0.w1.weight")
             ? "block_sparse_moe."
             : "mlp.";
}

bool has_routed(const TensorMap& map) {
  const std::string block = moe_block(map);
  return map.has(block + "experts.0.w1.weight") || map.has(block + "experts.0.gate_proj.weight") ||
         map.has("mlp.experts.gate_up_proj");
}

// `count` routed experts: one fused set or one SwiGLU each.
std::vector<GluLayout> routed_layout(const ArchConfig& arch, TensorMap& map, int64_t count) {
  const int64_t h = arch.hidden;
  const int64_t f = arch.moe_intermediate;
  std::vector<GluLayout> routed;
  if (map.has("mlp.experts.gate_up_proj")) {
    GluLayout glu;
    glu.fused = true;
    glu.width = f;
    glu.gate = LinearSlot{map.need("mlp.experts.gate_up_proj", {count, h, 2 * f}),
                          map.find("mlp.experts.gate_up_proj_bias", {count, 2 * f}), 2 * f, h};
    glu.down = LinearSlot{map.need("mlp.experts.down_proj", {count, f, h}),
                          map.find("mlp.experts.down_proj_bias", {count, h}), h, f};
    routed.push_back(glu);
    return routed;
  }
  const std::string block = moe_block(map);
  const bool w123 = map.has(block + "experts.0.w1.weight");
  for (int64_t i = 0; i < count; ++i) {
    const std::string base = block + "experts." + std::to_string(i) + ".";
    routed.push_back(w123 ? swiglu_layout(map, base, "w1", "w3", "w2", h, f)
                          : swiglu_layout(map, base, "gate_proj", "up_proj", "down_proj", h, f));
  }
  return routed;
}

// The router, the shared experts and (unless in a unit of their own) the routed experts.
MoeLayout moe_layout(const ArchConfig& arch, TensorMap& map) {
  MoeLayout lay;
  lay.experts = arch.experts;
  lay.top_k = arch.experts_per_token;
  if (lay.top_k < 1 || lay.top_k > lay.experts) {
    throw InternalError(fmt::format("host workload: top_k {} of {} experts", lay.top_k, lay.experts));
  }
  const int64_t h = arch.hidden;
  const int64_t e = arch.experts;
  const std::string block = moe_block(map);
  const std::string router = block + (map.has("mlp.router.weight") ? "router" : "gate");
  lay.router = LinearSlot{map.need(router + ".weight", {e, h}), map.find(router + ".bias", {e}), e, h};
  if (lay.router.bias < 0) lay.router.bias = map.find(router + ".e_score_correction_bias", {e});
  if (has_routed(map)) lay.routed = routed_layout(arch, map, e);
  const std::string shared = block + "shared_experts.";
  if (map.has(shared + "gate_proj.weight")) {
    lay.has_shared = true;
    const int64_t width = map.shape_of(shared + "gate_proj.weight").at(0);
    lay.shared = swiglu_layout(map, shared, "gate_proj", "up_proj", "down_proj", h, width);
  }
  return lay;
}

}  // namespace

BlockLayout block_layout(const models::ModelSpec& model, const UnitSpec& unit) {
  const ArchConfig& arch = model.arch;
  TensorMap map(unit);
  BlockLayout lay;
  lay.in_norm = map.need("input_layernorm.weight", {arch.hidden});
  lay.post_norm = map.need("post_attention_layernorm.weight", {arch.hidden});
  lay.attention = arch.attention == models::AttentionKind::kMla ? mla_layout(arch, map) : gqa_layout(arch, map);
  lay.moe = map.has("mlp.gate.weight") || map.has("mlp.router.weight") || map.has("block_sparse_moe.gate.weight");
  if (lay.moe) {
    lay.experts = moe_layout(arch, map);
    lay.experts_apart = lay.experts.routed.empty();
  } else {
    lay.dense = swiglu_layout(map, "mlp.", "gate_proj", "up_proj", "down_proj", arch.hidden, arch.intermediate);
  }
  map.check_all_used();
  return lay;
}

ExpertsLayout experts_layout(const models::ModelSpec& model, const UnitSpec& unit) {
  // "layers.3.experts" holds tensors named after their block, "layers.3.".
  const std::string suffix = ".experts";
  RAGGED_ASSERT(unit.kind == models::UnitKind::kExperts && unit.name.ends_with(suffix),
                "host workload: a unit of routed experts is named after its block");
  TensorMap map(unit, unit.name.substr(0, unit.name.size() - suffix.size()) + ".");
  ExpertsLayout lay;
  RAGGED_ASSERT(model.split.ep >= 1 && model.arch.experts % model.split.ep == 0, "host workload: ep divides the experts");
  lay.local = model.arch.experts / model.split.ep;
  lay.routed = routed_layout(model.arch, map, lay.local);
  map.check_all_used();
  return lay;
}

HeadLayout head_layout(const models::ModelSpec& model, const UnitSpec& unit) {
  TensorMap map(unit);
  HeadLayout lay;
  lay.norm = map.need("norm.weight", {model.arch.hidden});
  lay.weight = map.find("lm_head.weight", {model.arch.vocab, model.arch.hidden});
  if (lay.weight < 0 && !model.arch.tie_embeddings) {
    throw InternalError("host workload: the head has no lm_head.weight and the embeddings are not tied");
  }
  map.check_all_used();
  return lay;
}

}  // namespace ragged::backend::detail
