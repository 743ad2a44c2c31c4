// The catalog's GPT-2 style architectures; each matches the config.json
// fixture of the same name under tests/models/data (a test imports both).

#include "models/catalog_gpt.hpp"

#include <string>

namespace ragged::models::detail {
namespace {

// Multi-head attention over `heads` heads of hidden / heads, LayerNorm with
// bias, a two-matrix MLP 4x wide, biases on every projection.
ArchConfig gpt_block(std::string name, std::string family, int64_t hidden, int64_t layers, int64_t heads,
                     int64_t vocab) {
  ArchConfig arch;
  arch.name = std::move(name);
  arch.family = std::move(family);
  arch.hidden = hidden;
  arch.layers = layers;
  arch.vocab = vocab;
  arch.intermediate = 4 * hidden;
  arch.heads = heads;
  arch.kv_heads = heads;
  arch.head_dim = hidden / heads;
  arch.norm = NormKind::kLayerNorm;
  arch.norm_bias = true;
  arch.mlp = MlpKind::kPlain;
  arch.mlp_bias = true;
  arch.attention_bias = true;
  arch.qkv_fused = true;
  return arch;
}

}  // namespace

ArchConfig gpt2_xl() {
  ArchConfig arch = gpt_block("gpt2-xl", "gpt2", 1600, 48, 25, 50257);
  arch.tie_embeddings = true;
  arch.positions = PositionKind::kLearned;
  arch.max_positions = 1024;
  return arch;
}

ArchConfig gpt_neox_20b() {
  ArchConfig arch = gpt_block("gpt-neox-20b", "gpt_neox", 6144, 44, 64, 50432);
  arch.dtype = DType::kF16;
  arch.rotary_dim = 24;  // rotary_pct 0.25 of 96
  arch.parallel_block = true;
  return arch;
}

ArchConfig opt_30b() {
  ArchConfig arch = gpt_block("opt-30b", "opt", 7168, 48, 56, 50272);
  arch.dtype = DType::kF16;
  arch.tie_embeddings = true;
  arch.qkv_fused = false;
  arch.positions = PositionKind::kLearned;
  arch.max_positions = 2048;
  arch.position_offset = 2;
  return arch;
}

ArchConfig mpt_30b() {
  ArchConfig arch = gpt_block("mpt-30b", "mpt", 7168, 48, 64, 50432);
  arch.tie_embeddings = true;
  arch.norm_bias = false;  // no_bias
  arch.mlp_bias = false;
  arch.attention_bias = false;
  arch.positions = PositionKind::kAlibi;
  return arch;
}

ArchConfig bloom_176b() {
  ArchConfig arch = gpt_block("bloom-176b", "bloom", 14336, 70, 112, 250880);
  arch.tie_embeddings = true;
  arch.positions = PositionKind::kAlibi;
  arch.embedding_norm = true;
  return arch;
}

}  // namespace ragged::models::detail
