// config.json readers of the GPT-2 style families: LayerNorm blocks with a
// two-matrix MLP, fused or separate q/k/v, learned, rotary or ALiBi positions,
// sequential or parallel attention and MLP. Defaults are those of transformers'
// config classes (GPT2Config, GPTNeoXConfig, MptConfig, OPTConfig,
// FalconConfig, BloomConfig) and, for MPT, MosaicML's llm-foundry.

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "common/input_limits.hpp"
#include "models/hf_readers.hpp"

namespace ragged::models::detail {
namespace {

// Heads of hidden / heads dims each (these configs have no head_dim field).
void set_heads(const HfFields& f, ArchConfig& arch, const char* hidden_field, const char* heads_field) {
  if (arch.hidden % arch.heads != 0) {
    f.fail(fmt::format("{} ({}) must divide {} ({})", heads_field, arch.heads, hidden_field, arch.hidden));
  }
  arch.head_dim = arch.hidden / arch.heads;
  arch.kv_heads = arch.heads;
}

// LayerNorm, a two-matrix MLP and biases everywhere: the GPT-2 block.
void set_gpt_block(ArchConfig& arch, bool bias) {
  arch.norm = NormKind::kLayerNorm;
  arch.norm_bias = true;
  arch.mlp = MlpKind::kPlain;
  arch.mlp_bias = bias;
  arch.attention_bias = bias;
}

// The MLP's activation: any element-wise function keeps the two-matrix form;
// a gated one would need a third matrix.
void check_plain_activation(const HfFields& f, const char* field, const char* fallback) {
  const std::string activation = f.string_or(field, fallback);
  if (activation.find("glu") != std::string::npos) {
    f.fail(fmt::format("field '{}' is '{}', a gated activation, which model_type {} does not build (its MLP has two "
                       "matrices); use an element-wise activation such as gelu or relu",
                       field, activation, f.model_type()));
  }
}

}  // namespace

void read_gpt2(const HfFields& f, ArchConfig& arch) {
  arch.hidden = f.require_int("n_embd", 1);
  arch.layers = f.require_int("n_layer", 1);
  arch.heads = f.require_int("n_head", 1);
  arch.vocab = f.require_int("vocab_size", 1);
  set_heads(f, arch, "n_embd", "n_head");
  arch.intermediate = f.int_or("n_inner", 4 * arch.hidden, 1);  // null: 4 * n_embd
  arch.tie_embeddings = f.bool_or("tie_word_embeddings", true);
  if (f.bool_or("add_cross_attention", false)) {
    f.fail("field 'add_cross_attention' is true: cross-attention to an encoder is not modelled; import a decoder-only "
           "GPT-2 (add_cross_attention false)");
  }
  check_plain_activation(f, "activation_function", "gelu_new");
  set_gpt_block(arch, true);
  arch.qkv_fused = true;
  arch.positions = PositionKind::kLearned;
  arch.max_positions = f.int_or("n_positions", 1024, 1);
}

void read_gpt_neox(const HfFields& f, ArchConfig& arch) {
  arch.hidden = f.require_int("hidden_size", 1);
  arch.layers = f.require_int("num_hidden_layers", 1);
  arch.heads = f.require_int("num_attention_heads", 1);
  arch.vocab = f.require_int("vocab_size", 1);
  set_heads(f, arch, "hidden_size", "num_attention_heads");
  arch.intermediate = f.require_int("intermediate_size", 1);
  arch.tie_embeddings = f.bool_or("tie_word_embeddings", false);
  check_plain_activation(f, "hidden_act", "gelu");
  set_gpt_block(arch, true);
  arch.attention_bias = f.bool_or("attention_bias", true);
  arch.qkv_fused = true;
  const double rotary_pct = f.number_or("rotary_pct", 0.25);
  if (!(rotary_pct > 0 && rotary_pct <= 1)) {
    f.fail(fmt::format("field 'rotary_pct' must be in (0, 1] (got {})", rotary_pct));
  }
  // As GPT-NeoX: int(head_dim * rotary_pct) dims of each head rotate.
  const auto rotated = static_cast<int64_t>(static_cast<double>(arch.head_dim) * rotary_pct);
  arch.rotary_dim = rotated == arch.head_dim ? 0 : rotated;
  if (rotated < 2 || rotated % 2 != 0) {
    f.fail(fmt::format("field 'rotary_pct' ({}) rotates {} dims of each {}-dim head; rotary needs an even number of "
                       "at least 2", rotary_pct, rotated, arch.head_dim));
  }
  arch.parallel_block = f.bool_or("use_parallel_residual", true);
}

void read_mpt(const HfFields& f, ArchConfig& arch) {
  arch.hidden = f.require_int("d_model", 1);
  arch.layers = f.require_int("n_layers", 1);
  arch.heads = f.require_int("n_heads", 1);
  arch.vocab = f.require_int("vocab_size", 1);
  set_heads(f, arch, "d_model", "n_heads");
  arch.tie_embeddings = f.bool_or("tie_word_embeddings", true);

  const HfFields ffn = f.object("ffn_config");
  const std::string ffn_type = ffn.string_or("ffn_type", "mptmlp");
  if (ffn_type != "mptmlp") {
    f.fail(fmt::format("field 'ffn_config.ffn_type' is '{}': only 'mptmlp' (up_proj, GELU, down_proj) is modelled",
                       ffn_type));
  }
  const double ratio = f.number_or("expansion_ratio", 4);
  const double width = ratio * static_cast<double>(arch.hidden);
  if (!(ratio > 0) || width != std::floor(width) || width > static_cast<double>(limits::kMaxIntermediate)) {
    f.fail(fmt::format("field 'expansion_ratio' ({}) times d_model ({}) must be a whole, positive MLP width of at most {}",
                       ratio, arch.hidden, limits::kMaxIntermediate));
  }
  arch.intermediate = ffn.int_or("ffn_hidden_size", static_cast<int64_t>(width), 1);

  const bool bias = !f.bool_or("no_bias", false);
  const std::string norm_type = f.string_or("norm_type", "low_precision_layernorm");
  if (norm_type == "layernorm" || norm_type == "low_precision_layernorm") {
    set_gpt_block(arch, bias);
    arch.norm_bias = bias;
  } else if (norm_type == "rmsnorm" || norm_type == "low_precision_rmsnorm") {
    set_gpt_block(arch, bias);
    arch.norm = NormKind::kRmsNorm;
    arch.norm_bias = false;
  } else {
    f.fail(fmt::format("field 'norm_type' is '{}': use layernorm, low_precision_layernorm, rmsnorm or "
                       "low_precision_rmsnorm", norm_type));
  }
  arch.qkv_fused = true;

  const HfFields attn = f.object("attn_config");
  const std::string attn_type = attn.string_or("attn_type", "multihead_attention");
  if (attn_type == "multiquery_attention") {
    arch.kv_heads = 1;
  } else if (attn_type == "grouped_query_attention") {
    arch.kv_heads = attn.require_int("kv_n_heads", 1);
    if (arch.heads % arch.kv_heads != 0) {
      f.fail(fmt::format("field 'attn_config.kv_n_heads' ({}) must divide n_heads ({})", arch.kv_heads, arch.heads));
    }
  } else if (attn_type != "multihead_attention") {
    f.fail(fmt::format("field 'attn_config.attn_type' is '{}': use multihead_attention, multiquery_attention or "
                       "grouped_query_attention", attn_type));
  }
  if (attn.bool_or("qk_ln", false) || attn.bool_or("qk_gn", false)) {
    f.fail("field 'attn_config.qk_ln' (or qk_gn) is true: norms over q and k are not modelled for model_type mpt");
  }
  const bool alibi = attn.bool_or("alibi", false);
  const bool rope = attn.bool_or("rope", false);
  if (alibi && rope) f.fail("fields 'attn_config.alibi' and 'attn_config.rope' are both true; an MPT uses one");
  if (alibi) {
    arch.positions = PositionKind::kAlibi;  // MPT builds no wpe table with ALiBi
  } else if (rope) {
    arch.positions = PositionKind::kRotary;
  } else if (f.bool_or("learned_pos_emb", true)) {
    arch.positions = PositionKind::kLearned;
    arch.max_positions = f.int_or("max_seq_len", 2048, 1);
  } else {
    f.fail("no positions: 'learned_pos_emb' is false and neither 'attn_config.alibi' nor 'attn_config.rope' is true; "
           "set one of them");
  }
}

void read_opt(const HfFields& f, ArchConfig& arch) {
  arch.hidden = f.require_int("hidden_size", 1);
  arch.layers = f.require_int("num_hidden_layers", 1);
  arch.heads = f.require_int("num_attention_heads", 1);
  arch.vocab = f.require_int("vocab_size", 1);
  set_heads(f, arch, "hidden_size", "num_attention_heads");
  arch.intermediate = f.require_int("ffn_dim", 1);
  arch.tie_embeddings = f.bool_or("tie_word_embeddings", true);
  check_plain_activation(f, "activation_function", "relu");
  if (!f.bool_or("layer_norm_elementwise_affine", true)) {
    f.fail("field 'layer_norm_elementwise_affine' is false: LayerNorms without weights are not modelled");
  }
  set_gpt_block(arch, f.bool_or("enable_bias", true));
  arch.positions = PositionKind::kLearned;
  arch.max_positions = f.int_or("max_position_embeddings", 2048, 1);
  arch.position_offset = 2;  // OPTLearnedPositionalEmbedding keeps 2 rows before position 0
  const int64_t projected = f.int_or("word_embed_proj_dim", arch.hidden, 1);
  arch.embed_dim = projected == arch.hidden ? 0 : projected;
  // Post-norm blocks (do_layer_norm_before false, OPT-350M) have no final norm.
  arch.final_norm = f.bool_or("do_layer_norm_before", true) && !f.bool_or("_remove_final_layer_norm", false);
}

void read_falcon(const HfFields& f, ArchConfig& arch) {
  arch.hidden = f.require_int_of({"hidden_size", "n_embed"}, 1);
  arch.layers = f.require_int_of({"num_hidden_layers", "n_layer"}, 1);
  arch.heads = f.require_int_of({"num_attention_heads", "n_head"}, 1);
  arch.vocab = f.require_int("vocab_size", 1);
  set_heads(f, arch, "hidden_size", "num_attention_heads");
  arch.intermediate = f.int_or("ffn_hidden_size", 4 * arch.hidden, 1);
  arch.tie_embeddings = f.bool_or("tie_word_embeddings", true);
  check_plain_activation(f, "activation", "gelu");
  set_gpt_block(arch, f.bool_or("bias", false));
  arch.qkv_fused = true;
  arch.positions = f.bool_or("alibi", false) ? PositionKind::kAlibi : PositionKind::kRotary;

  const bool parallel = f.bool_or("parallel_attn", true);
  const int64_t norms = f.int_or("num_ln_in_parallel_attn", 0, 1);  // 0: not given
  if (norms > 2) f.fail(fmt::format("field 'num_ln_in_parallel_attn' must be 1 or 2 (got {})", norms));
  if (f.bool_or("new_decoder_architecture", false)) {
    // Grouped-query attention, always parallel, two norms unless told one.
    if (!parallel) {
      f.fail("fields 'new_decoder_architecture' (true) and 'parallel_attn' (false) contradict: the new decoder "
             "architecture runs attention and MLP in parallel; set parallel_attn true");
    }
    arch.kv_heads = f.int_or_of({"num_kv_heads", "n_head_kv"}, arch.heads, 1);
    if (arch.heads % arch.kv_heads != 0) {
      f.fail(fmt::format("num_kv_heads ({}) must divide num_attention_heads ({})", arch.kv_heads, arch.heads));
    }
    arch.parallel_block = true;
    arch.shared_block_norm = norms == 1;
    return;
  }
  if (norms == 2) {
    f.fail("field 'num_ln_in_parallel_attn' is 2 without 'new_decoder_architecture': the older Falcon blocks have "
           "one input norm; drop the field or set new_decoder_architecture true");
  }
  // multi_query: one k/v head (num_kv_heads is then ignored, as transformers does).
  if (f.bool_or("multi_query", true)) arch.kv_heads = 1;
  arch.parallel_block = parallel;
  arch.shared_block_norm = parallel;
}

void read_bloom(const HfFields& f, ArchConfig& arch) {
  arch.hidden = f.require_int_of({"hidden_size", "n_embed"}, 1);
  arch.layers = f.require_int_of({"n_layer", "num_hidden_layers"}, 1);
  arch.heads = f.require_int_of({"n_head", "num_attention_heads"}, 1);
  arch.vocab = f.require_int("vocab_size", 1);
  set_heads(f, arch, "hidden_size", "n_head");
  arch.intermediate = 4 * arch.hidden;
  arch.tie_embeddings = f.bool_or("tie_word_embeddings", true);
  set_gpt_block(arch, true);
  arch.qkv_fused = true;
  arch.positions = PositionKind::kAlibi;
  arch.embedding_norm = true;
}

}  // namespace ragged::models::detail
