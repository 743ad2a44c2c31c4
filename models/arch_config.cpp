#include "models/arch_config.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/input_limits.hpp"

namespace ragged::models {
namespace {

// Names fields as `prefix` + the scenario's ModelArch field name.
class ArchChecker {
 public:
  explicit ArchChecker(const std::string& prefix) : prefix_(prefix) {}

  void at_least(const char* field, int64_t value, int64_t minimum, const char* why = "") const {
    if (value >= minimum) return;
    throw FieldError(prefix_ + field, fmt::format("{}{} must be >= {}{} (got {})", prefix_, field, minimum, why, value));
  }

  void at_most(const char* field, int64_t value, int64_t maximum) const {
    if (value <= maximum) return;
    throw FieldError(prefix_ + field, fmt::format("{}{} must be at most {} (got {}); docs/RELIABILITY.md lists the "
                                                  "limits", prefix_, field, maximum, value));
  }

  void between(const char* field, int64_t value, int64_t minimum, int64_t maximum, const char* why = "") const {
    at_least(field, value, minimum, why);
    at_most(field, value, maximum);
  }

  [[noreturn]] void fail(const char* field, const std::string& what) const {
    throw FieldError(prefix_ + field, fmt::format("{}{} {}", prefix_, field, what));
  }

 private:
  const std::string& prefix_;
};

void check_attention(const ArchConfig& arch, const ArchChecker& check) {
  check.between("num_attention_heads", arch.heads, 1, limits::kMaxHeads);
  if (arch.attention == AttentionKind::kGqa) {
    check.between("num_key_value_heads", arch.kv_heads, 1, limits::kMaxHeads);
    if (arch.heads % arch.kv_heads != 0) {
      check.fail("num_key_value_heads",
                 fmt::format("must divide num_attention_heads ({}) (got {})", arch.heads, arch.kv_heads));
    }
    check.between("head_dim", arch.head_dim, 1, limits::kMaxHeads);
    check.at_most("head_dim", arch.heads * arch.head_dim, limits::kMaxHeadWidth);
  } else {
    check.between("q_lora_rank", arch.q_lora_rank, 0, limits::kMaxLoraRank, " (0: q projected directly)");
    check.between("kv_lora_rank", arch.kv_lora_rank, 1, limits::kMaxLoraRank, " for multi-head latent attention");
    check.between("qk_nope_head_dim", arch.qk_nope_head_dim, 1, limits::kMaxHeads, " for multi-head latent attention");
    check.between("qk_rope_head_dim", arch.qk_rope_head_dim, 1, limits::kMaxHeads, " for multi-head latent attention");
    check.between("v_head_dim", arch.v_head_dim, 1, limits::kMaxHeads, " for multi-head latent attention");
    check.at_most("qk_nope_head_dim", arch.heads * (arch.qk_nope_head_dim + arch.qk_rope_head_dim), limits::kMaxHeadWidth);
    check.at_most("v_head_dim", arch.heads * arch.v_head_dim, limits::kMaxHeadWidth);
  }
  check.between("sliding_window", arch.sliding_window, 0, limits::kMaxPositions, " (0: full causal attention)");
  if (!arch.sliding_layers.empty() && static_cast<int64_t>(arch.sliding_layers.size()) != arch.layers) {
    check.fail("sliding_layers", fmt::format("must have one entry per layer ({}) or none (got {})",
                                             arch.layers, arch.sliding_layers.size()));
  }
  bool any_sliding = std::find(arch.sliding_layers.begin(), arch.sliding_layers.end(), true) !=
                     arch.sliding_layers.end();
  if (any_sliding && arch.sliding_window == 0) {
    check.fail("sliding_window", "must be >= 1 when sliding_layers marks a layer as sliding (got 0)");
  }
}

void check_mlp(const ArchConfig& arch, const ArchChecker& check) {
  check.between("num_experts", arch.experts, 0, limits::kMaxExperts, " (0: dense model)");
  check.at_most("intermediate_size", arch.intermediate, limits::kMaxIntermediate);
  if (!arch.is_moe()) {
    check.at_least("intermediate_size", arch.intermediate, 1, " for a dense MLP");
    return;
  }
  if (arch.experts_per_token < 1 || arch.experts_per_token > arch.experts) {
    check.fail("experts_per_token", fmt::format("must be between 1 and num_experts ({}) (got {})",
                                                arch.experts, arch.experts_per_token));
  }
  check.between("moe_intermediate_size", arch.moe_intermediate, 1, limits::kMaxIntermediate, " for a mixture of experts");
  check.between("shared_experts", arch.shared_experts, 0, limits::kMaxExperts);
  if (arch.first_dense_layers < 0 || arch.first_dense_layers > arch.layers) {
    check.fail("first_dense_layers", fmt::format("must be between 0 and num_layers ({}) (got {})",
                                                 arch.layers, arch.first_dense_layers));
  }
  if (arch.first_dense_layers > 0) {
    check.at_least("intermediate_size", arch.intermediate, 1, " for the leading dense layers");
  }
  if (!(arch.glu_clamp >= 0.0) || !std::isfinite(arch.glu_clamp)) {
    check.fail("glu_clamp", fmt::format("must be a finite number >= 0 (0: no clamp; GPT-OSS's swiglu_limit is 7) "
                                        "(got {})",
                                        arch.glu_clamp));
  }
}

// The fields of the GPT-2 / GPT-NeoX / MPT / OPT / Falcon / BLOOM block forms.
void check_block_structure(const ArchConfig& arch, const ArchChecker& check) {
  if (arch.norm_bias && arch.norm != NormKind::kLayerNorm) check.fail("norm_bias", "must be false for an RMSNorm");
  if (arch.qkv_fused && arch.attention != AttentionKind::kGqa) {
    check.fail("qkv_fused", "must be false for multi-head latent attention (it has its own projections)");
  }
  if (arch.mlp == MlpKind::kPlain && arch.is_moe()) {
    check.fail("mlp", "must be gated for a mixture of experts (two-matrix MLPs are modelled in dense models only)");
  }
  if (arch.positions == PositionKind::kRotary && arch.attention == AttentionKind::kGqa &&
      (arch.rotary_dim < 0 || arch.rotary_dim > arch.head_dim || arch.rotary_dim % 2 != 0)) {
    check.fail("rotary_dim", fmt::format("must be an even number from 0 (the whole head) to head_dim ({}) (got {})",
                                         arch.head_dim, arch.rotary_dim));
  }
  if (arch.positions == PositionKind::kLearned) {
    check.between("max_position_embeddings", arch.max_positions, 1, limits::kMaxPositions, " for learned position embeddings");
    check.between("position_offset", arch.position_offset, 0, limits::kMaxPositions);
  }
  if (arch.shared_block_norm && !arch.parallel_block) {
    check.fail("shared_block_norm", "must be false for a sequential block (its MLP norm reads the attention's sum)");
  }
  check.between("embed_dim", arch.embed_dim, 0, limits::kMaxHidden, " (0: the token table is hidden_size wide)");
}

}  // namespace

bool ArchConfig::is_sliding_layer(int64_t layer) const {
  if (sliding_window <= 0 || layer < 0 || layer >= static_cast<int64_t>(sliding_layers.size())) {
    return false;
  }
  return sliding_layers[static_cast<size_t>(layer)];
}

void validate_arch(const ArchConfig& arch, const std::string& field_prefix) {
  ArchChecker check(field_prefix);
  check.between("hidden_size", arch.hidden, 1, limits::kMaxHidden);
  check.between("num_layers", arch.layers, 1, limits::kMaxLayers);
  check.between("vocab_size", arch.vocab, 1, limits::kMaxVocab);
  check_attention(arch, check);
  check_mlp(arch, check);
  check_block_structure(arch, check);
  check_arch_size(arch, field_prefix);
}

}  // namespace ragged::models
