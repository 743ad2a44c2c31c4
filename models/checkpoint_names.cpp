// The names each family's checkpoints give their tensors, without the base
// model's prefix ("model.", "transformer.", "gpt_neox.", "model.decoder.").

#include "models/layer_parts.hpp"

namespace ragged::models::detail {
namespace {

CheckpointNames gpt2() {
  CheckpointNames n;
  n.layer_prefix = "h.";
  n.embed = "wte";
  n.positions = "wpe";
  n.attention_norm = "ln_1";
  n.mlp_norm = "ln_2";
  n.qkv = "attn.c_attn";
  n.o = "attn.c_proj";
  n.up = "mlp.c_fc";
  n.down = "mlp.c_proj";
  n.final_norm = "ln_f";
  n.conv1d = true;
  return n;
}

CheckpointNames gpt_neox() {
  CheckpointNames n;
  n.embed = "embed_in";
  n.qkv = "attention.query_key_value";
  n.o = "attention.dense";
  n.up = "mlp.dense_h_to_4h";
  n.down = "mlp.dense_4h_to_h";
  n.final_norm = "final_layer_norm";
  n.head = "embed_out";
  return n;
}

CheckpointNames mpt() {
  CheckpointNames n;
  n.layer_prefix = "blocks.";
  n.embed = "wte";
  n.positions = "wpe";
  n.attention_norm = "norm_1";
  n.mlp_norm = "norm_2";
  n.qkv = "attn.Wqkv";
  n.o = "attn.out_proj";
  n.up = "ffn.up_proj";
  n.down = "ffn.down_proj";
  n.final_norm = "norm_f";
  return n;
}

CheckpointNames opt() {
  CheckpointNames n;
  n.positions = "embed_positions";
  n.project_in = "project_in";
  n.attention_norm = "self_attn_layer_norm";
  n.mlp_norm = "final_layer_norm";
  n.o = "self_attn.out_proj";
  n.up = "fc1";
  n.down = "fc2";
  n.final_norm = "final_layer_norm";
  n.project_out = "project_out";
  return n;
}

// Falcon and BLOOM share the h.N.self_attention / mlp.dense_* names.
CheckpointNames falcon_bloom(const ArchConfig& arch) {
  CheckpointNames n;
  n.layer_prefix = "h.";
  n.embed = "word_embeddings";
  if (arch.parallel_block && arch.shared_block_norm) {
    n.mlp_norm = "";
  } else if (arch.parallel_block) {
    n.attention_norm = "ln_attn";
    n.mlp_norm = "ln_mlp";
  }
  n.qkv = "self_attention.query_key_value";
  n.o = "self_attention.dense";
  n.up = "mlp.dense_h_to_4h";
  n.down = "mlp.dense_4h_to_h";
  n.final_norm = "ln_f";
  if (arch.embedding_norm) n.embed_norm = "word_embeddings_layernorm";
  return n;
}

}  // namespace

CheckpointNames checkpoint_names(const ArchConfig& arch) {
  if (arch.family == "gpt2") return gpt2();
  if (arch.family == "gpt_neox") return gpt_neox();
  if (arch.family == "mpt") return mpt();
  if (arch.family == "opt") return opt();
  if (arch.family == "falcon" || arch.family == "bloom") return falcon_bloom(arch);
  return CheckpointNames{};
}

}  // namespace ragged::models::detail
