#pragma once
// The architecture hyper-parameters a ModelSpec is built from: the fields of a
// Hugging Face config.json that decide tensors, shapes and compute. The catalog,
// the config.json importer and a scenario's inline model all produce one.

#include <cstdint>
#include <string>
#include <vector>

#include "models/dtype.hpp"

namespace ragged::models {

enum class AttentionKind {
  kGqa,  // grouped-query attention (MHA and MQA are special cases)
  kMla,  // DeepSeek multi-head latent attention
};

enum class ExpertStorage {
  kPerExpert,  // one tensor per expert and projection (DeepSeek, Qwen3, Mixtral)
  kFused,      // one tensor per projection holding every expert (GPT-OSS)
};

enum class NormKind {
  kRmsNorm,    // a weight (Llama and the MoE families)
  kLayerNorm,  // a weight and, with norm_bias, a bias (GPT-2, GPT-NeoX, OPT, Falcon, BLOOM; MPT without bias)
};

enum class MlpKind {
  kGated,  // act(gate) * up, then down: three matrices (SwiGLU)
  kPlain,  // act(up), then down: two matrices (GELU or ReLU)
};

enum class PositionKind {
  kRotary,   // rotary embedding of q and k: no tensor
  kLearned,  // a learned table added to the token embedding (GPT-2 wpe, OPT embed_positions)
  kAlibi,    // a per-head linear bias inside the attention kernel: no tensor, no rotary
};

struct ArchConfig {
  std::string name;         // "llama3-8b"
  std::string family;       // the HF model_type it follows: llama, mixtral, qwen3_moe, gpt_oss, deepseek_v3, ...
  DType dtype = DType::kBF16;

  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t vocab = 0;
  int64_t intermediate = 0;  // dense MLP width (dense layers of a MoE model too)
  bool tie_embeddings = false;
  // A tied model split over pipeline stages (planner/resolved_scenario.cpp):
  // the head on the last stage holds a copy of the table as its own weight
  // (tie_embeddings then false), whose gradient and the embedding's are
  // summed each step (Megatron-LM's shared embedding and its embedding
  // group; nanotron's tied parameters).
  bool table_copied_across_stages = false;

  AttentionKind attention = AttentionKind::kGqa;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;           // GQA head dimension
  bool attention_bias = false;    // q/k/v/o biases (GPT-OSS, Llama with attention_bias)
  bool qkv_bias = false;          // q/k/v biases only (Qwen2)
  bool attention_sinks = false;   // one learned sink logit per head (GPT-OSS)
  bool qk_norm = false;           // RMSNorm over q and k heads (Qwen3)
  int64_t sliding_window = 0;     // 0: every layer attends to the whole causal context
  std::vector<bool> sliding_layers;  // per layer: uses the sliding window (empty: none do)

  // Multi-head latent attention (attention == kMla).
  int64_t q_lora_rank = 0;  // 0: q is projected directly from the hidden state
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;

  // Mixture of experts (experts == 0: dense model).
  int64_t experts = 0;
  int64_t experts_per_token = 0;
  int64_t moe_intermediate = 0;   // width of one expert's MLP
  int64_t shared_experts = 0;     // always-active experts of width moe_intermediate
  int64_t first_dense_layers = 0; // leading layers that use the dense MLP
  ExpertStorage expert_storage = ExpertStorage::kPerExpert;
  bool expert_bias = false;       // biases on expert projections (GPT-OSS)
  bool router_bias = false;       // a bias on the router (GPT-OSS) or a score-correction bias (DeepSeek-V3)
  double glu_clamp = 0;           // the experts' GLU inputs clamped to +-this (GPT-OSS swiglu_limit 7); 0: none

  // Block structure beyond the Llama defaults (the GPT-2 / GPT-NeoX / MPT / OPT / Falcon / BLOOM families).
  NormKind norm = NormKind::kRmsNorm;
  bool norm_bias = false;              // LayerNorm biases
  MlpKind mlp = MlpKind::kGated;       // the dense MLP's form
  bool mlp_bias = false;               // biases on the dense MLP's projections
  bool qkv_fused = false;              // q, k and v in one [(heads + 2 kv_heads) * head_dim, hidden] projection
  bool gate_up_fused = false;          // a gated MLP's gate and up in one [2 x width, hidden] projection (experts too)
  PositionKind positions = PositionKind::kRotary;
  int64_t rotary_dim = 0;              // rotated dims of each head; 0: all of them (GPT-NeoX rotates a quarter)
  int64_t max_positions = 0;           // rows of the learned position table the model reads
  int64_t position_offset = 0;         // extra rows the table stores (OPT: 2)
  bool parallel_block = false;         // attention and MLP both read the block input (GPT-NeoX, Falcon)
  bool shared_block_norm = false;      // a parallel block's attention and MLP share one input norm (Falcon-7B)
  bool final_norm = true;              // a norm before the head (OPT with post-norm blocks has none)
  int64_t embed_dim = 0;               // width of the token table when projected to hidden (OPT-350M); 0: hidden
  bool embedding_norm = false;         // a LayerNorm right after the token embedding (BLOOM)

  // The token table's width: embed_dim when the model projects it, else hidden.
  int64_t embedding_width() const { return embed_dim > 0 ? embed_dim : hidden; }

  bool is_moe() const { return experts > 0; }
  bool is_moe_layer(int64_t layer) const { return is_moe() && layer >= first_dense_layers; }
  bool is_sliding_layer(int64_t layer) const;
};

// Checks that the numbers describe a buildable model; throws InputError naming
// the field (as `field_prefix` + field name) and what a valid value looks like.
void validate_arch(const ArchConfig& arch, const std::string& field_prefix);

// The model's size from its numbers alone (an upper estimate of its
// parameters, the experts stored one by one) against the limits of
// common/input_limits.hpp; validate_arch calls it last.
void check_arch_size(const ArchConfig& arch, const std::string& field_prefix);

}  // namespace ragged::models
