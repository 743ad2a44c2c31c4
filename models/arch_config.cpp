#include "models/arch_config.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/errors.hpp"

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

  [[noreturn]] void fail(const char* field, const std::string& what) const {
    throw FieldError(prefix_ + field, fmt::format("{}{} {}", prefix_, field, what));
  }

 private:
  const std::string& prefix_;
};

void check_attention(const ArchConfig& arch, const ArchChecker& check) {
  check.at_least("num_attention_heads", arch.heads, 1);
  if (arch.attention == AttentionKind::kGqa) {
    check.at_least("num_key_value_heads", arch.kv_heads, 1);
    if (arch.heads % arch.kv_heads != 0) {
      check.fail("num_key_value_heads",
                 fmt::format("must divide num_attention_heads ({}) (got {})", arch.heads, arch.kv_heads));
    }
    check.at_least("head_dim", arch.head_dim, 1);
  } else {
    check.at_least("q_lora_rank", arch.q_lora_rank, 0, " (0: q projected directly)");
    check.at_least("kv_lora_rank", arch.kv_lora_rank, 1, " for multi-head latent attention");
    check.at_least("qk_nope_head_dim", arch.qk_nope_head_dim, 1, " for multi-head latent attention");
    check.at_least("qk_rope_head_dim", arch.qk_rope_head_dim, 1, " for multi-head latent attention");
    check.at_least("v_head_dim", arch.v_head_dim, 1, " for multi-head latent attention");
  }
  check.at_least("sliding_window", arch.sliding_window, 0, " (0: full causal attention)");
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
  check.at_least("num_experts", arch.experts, 0, " (0: dense model)");
  if (!arch.is_moe()) {
    check.at_least("intermediate_size", arch.intermediate, 1, " for a dense MLP");
    return;
  }
  if (arch.experts_per_token < 1 || arch.experts_per_token > arch.experts) {
    check.fail("experts_per_token", fmt::format("must be between 1 and num_experts ({}) (got {})",
                                                arch.experts, arch.experts_per_token));
  }
  check.at_least("moe_intermediate_size", arch.moe_intermediate, 1, " for a mixture of experts");
  check.at_least("shared_experts", arch.shared_experts, 0);
  if (arch.first_dense_layers < 0 || arch.first_dense_layers > arch.layers) {
    check.fail("first_dense_layers", fmt::format("must be between 0 and num_layers ({}) (got {})",
                                                 arch.layers, arch.first_dense_layers));
  }
  if (arch.first_dense_layers > 0) {
    check.at_least("intermediate_size", arch.intermediate, 1, " for the leading dense layers");
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
    check.at_least("max_position_embeddings", arch.max_positions, 1, " for learned position embeddings");
    check.at_least("position_offset", arch.position_offset, 0);
  }
  if (arch.shared_block_norm && !arch.parallel_block) {
    check.fail("shared_block_norm", "must be false for a sequential block (its MLP norm reads the attention's sum)");
  }
  check.at_least("embed_dim", arch.embed_dim, 0, " (0: the token table is hidden_size wide)");
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
  check.at_least("hidden_size", arch.hidden, 1);
  check.at_least("num_layers", arch.layers, 1);
  check.at_least("vocab_size", arch.vocab, 1);
  check_attention(arch, check);
  check_mlp(arch, check);
  check_block_structure(arch, check);
}

}  // namespace ragged::models
