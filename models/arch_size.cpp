// The size of a model from its numbers alone, before any tensor is built:
// an upper estimate of its parameters and the count of tensors stored one per
// expert, against the limits of common/input_limits.hpp. Every number here is
// a double of values already range-checked, so nothing overflows.

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/input_limits.hpp"
#include "common/units.hpp"
#include "models/arch_config.hpp"

namespace ragged::models {
namespace {

double attention_params(const ArchConfig& a) {
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  if (a.attention == AttentionKind::kGqa) {
    const double q = d(a.heads) * d(a.head_dim);
    const double kv = d(a.kv_heads) * d(a.head_dim);
    return d(a.hidden) * (2 * q + 2 * kv) + 2 * q + 2 * kv;
  }
  const double qk = d(a.heads) * d(a.qk_nope_head_dim + a.qk_rope_head_dim);
  const double q = a.q_lora_rank > 0 ? d(a.hidden) * d(a.q_lora_rank) + d(a.q_lora_rank) * qk : d(a.hidden) * qk;
  const double kv = d(a.hidden) * d(a.kv_lora_rank + a.qk_rope_head_dim) +
                    d(a.kv_lora_rank) * d(a.heads) * d(a.qk_nope_head_dim + a.v_head_dim);
  return q + kv + d(a.heads) * d(a.v_head_dim) * d(a.hidden);
}

// Every layer counted with both a dense MLP and its experts, biases included.
double layer_params(const ArchConfig& a) {
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  const double dense = 3 * d(a.hidden) * d(a.intermediate) + 2 * d(a.intermediate);
  const double experts = d(a.experts + a.shared_experts) * (3 * d(a.hidden) * d(a.moe_intermediate) + 2 * d(a.moe_intermediate)) +
                         d(a.experts) * (d(a.hidden) + 1);
  return attention_params(a) + dense + experts + 16 * d(a.hidden);
}

double embedding_params(const ArchConfig& a) {
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  return 2 * d(a.vocab) * d(a.embedding_width()) + d(a.max_positions + a.position_offset) * d(a.hidden) +
         2 * d(a.embed_dim) * d(a.hidden);
}

}  // namespace

void check_arch_size(const ArchConfig& arch, const std::string& field_prefix) {
  const double blocks = static_cast<double>(arch.layers) * layer_params(arch);
  const double embeddings = embedding_params(arch);
  if (blocks + embeddings > limits::kMaxParams) {
    const char* field = blocks >= embeddings ? "num_layers" : "vocab_size";
    throw FieldError(field_prefix + field, fmt::format("{} must be smaller: about {} parameters, above the limit of {}; "
                                                       "use smaller widths, layers or experts",
                                                       field, format_count(blocks + embeddings), format_count(limits::kMaxParams)));
  }
  if (arch.is_moe() && arch.expert_storage == ExpertStorage::kPerExpert) {
    const int64_t stored = (arch.layers - arch.first_dense_layers) * arch.experts;
    if (stored > limits::kMaxExpertTensors) {
      throw FieldError(field_prefix + "num_experts",
                       fmt::format("num_experts must be smaller: {} MoE layers x {} experts stored one by one is {}; "
                                   "at most {} (or set experts_fused)", arch.layers - arch.first_dense_layers,
                                   arch.experts, format_integer(stored), format_integer(limits::kMaxExpertTensors)));
    }
  }
}

}  // namespace ragged::models
