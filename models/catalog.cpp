// The built-in catalog. Shapes follow each model's Hugging Face config.json;
// published totals are the authors' numbers (DeepSeek-V3 without its MTP module).

#include "models/catalog.hpp"

#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/edit_distance.hpp"
#include "common/errors.hpp"
#include "common/text_case.hpp"
#include "models/catalog_gpt.hpp"

namespace ragged::models {
namespace {

ArchConfig llama3(std::string name, int64_t hidden, int64_t layers, int64_t heads, int64_t ffn) {
  ArchConfig arch;
  arch.name = std::move(name);
  arch.family = "llama";
  arch.hidden = hidden;
  arch.layers = layers;
  arch.vocab = 128256;
  arch.intermediate = ffn;
  arch.heads = heads;
  arch.kv_heads = 8;
  arch.head_dim = 128;
  return arch;
}

ArchConfig gpt_oss(std::string name, int64_t layers, int64_t experts) {
  ArchConfig arch;
  arch.name = std::move(name);
  arch.family = "gpt_oss";
  arch.hidden = 2880;
  arch.layers = layers;
  arch.vocab = 201088;
  arch.heads = 64;
  arch.kv_heads = 8;
  arch.head_dim = 64;
  arch.attention_bias = true;
  arch.attention_sinks = true;
  arch.sliding_window = 128;
  arch.sliding_layers.resize(static_cast<size_t>(layers));
  for (int64_t layer = 0; layer < layers; ++layer) arch.sliding_layers[static_cast<size_t>(layer)] = layer % 2 == 0;
  arch.experts = experts;
  arch.experts_per_token = 4;
  arch.moe_intermediate = 2880;
  arch.expert_storage = ExpertStorage::kFused;
  arch.expert_bias = true;
  arch.router_bias = true;
  arch.glu_clamp = 7.0;  // openai/gpt-oss-20b and -120b config.json swiglu_limit
  return arch;
}

ArchConfig deepseek_v3() {
  ArchConfig arch;
  arch.name = "deepseek-v3";
  arch.family = "deepseek_v3";
  arch.hidden = 7168;
  arch.layers = 61;
  arch.vocab = 129280;
  arch.intermediate = 18432;
  arch.attention = AttentionKind::kMla;
  arch.heads = 128;
  arch.kv_heads = 128;
  arch.q_lora_rank = 1536;
  arch.kv_lora_rank = 512;
  arch.qk_nope_head_dim = 128;
  arch.qk_rope_head_dim = 64;
  arch.v_head_dim = 128;
  arch.experts = 256;
  arch.experts_per_token = 8;
  arch.moe_intermediate = 2048;
  arch.shared_experts = 1;
  arch.first_dense_layers = 3;
  arch.router_bias = true;
  return arch;
}

ArchConfig qwen3_235b() {
  ArchConfig arch;
  arch.name = "qwen3-235b-a22b";
  arch.family = "qwen3_moe";
  arch.hidden = 4096;
  arch.layers = 94;
  arch.vocab = 151936;
  arch.intermediate = 12288;  // in config.json; unused as every layer is sparse
  arch.heads = 64;
  arch.kv_heads = 4;
  arch.head_dim = 128;
  arch.qk_norm = true;
  arch.experts = 128;
  arch.experts_per_token = 8;
  arch.moe_intermediate = 1536;
  return arch;
}

ArchConfig mixtral_8x7b() {
  ArchConfig arch;
  arch.name = "mixtral-8x7b";
  arch.family = "mixtral";
  arch.hidden = 4096;
  arch.layers = 32;
  arch.vocab = 32000;
  arch.heads = 32;
  arch.kv_heads = 8;
  arch.head_dim = 128;
  arch.experts = 8;
  arch.experts_per_token = 2;
  arch.moe_intermediate = 14336;
  return arch;
}

std::vector<CatalogEntry> make_catalog() {
  return {
      {llama3("llama3-8b", 4096, 32, 32, 14336), 8.03e9, "meta-llama/Meta-Llama-3-8B"},
      {llama3("llama3-70b", 8192, 80, 64, 28672), 70.6e9, "meta-llama/Meta-Llama-3-70B"},
      {llama3("llama3.1-405b", 16384, 126, 128, 53248), 405.9e9, "meta-llama/Llama-3.1-405B"},
      {gpt_oss("gpt-oss-20b", 24, 32), 20.9e9, "openai/gpt-oss-20b"},
      {gpt_oss("gpt-oss-120b", 36, 128), 116.8e9, "openai/gpt-oss-120b"},
      {deepseek_v3(), 671e9, "deepseek-ai/DeepSeek-V3"},
      {qwen3_235b(), 235e9, "Qwen/Qwen3-235B-A22B"},
      {mixtral_8x7b(), 46.7e9, "mistralai/Mixtral-8x7B-v0.1"},
      // OpenAI released GPT-2 XL as "1558M"; the GPT-NeoX-20B, MPT-30B and
      // BLOOM model cards give 20,554,567,680, 29.95B and 176,247,271,424; the
      // OPT paper (Zhang et al. 2022, Table 1) 30B.
      {detail::gpt2_xl(), 1558e6, "openai-community/gpt2-xl"},
      {detail::gpt_neox_20b(), 20554567680.0, "EleutherAI/gpt-neox-20b"},
      {detail::opt_30b(), 30e9, "facebook/opt-30b"},
      {detail::mpt_30b(), 29.95e9, "mosaicml/mpt-30b"},
      {detail::bloom_176b(), 176247271424.0, "bigscience/bloom"},
  };
}

}  // namespace

const std::vector<CatalogEntry>& catalog() {
  static const std::vector<CatalogEntry> entries = make_catalog();
  return entries;
}

const CatalogEntry& find_catalog_entry(std::string_view name) {
  const std::string wanted = lower_case(name);
  std::vector<std::string> names;
  for (const CatalogEntry& entry : catalog()) {
    if (entry.arch.name == wanted) return entry;
    names.push_back(entry.arch.name);
  }
  throw InputError(fmt::format("unknown model '{}' (did you mean '{}'?); the catalog has: {}", name,
                               closest_name(wanted, names), fmt::join(names, ", ")));
}

ModelSpec catalog_model(std::string_view name) { return build_model(find_catalog_entry(name).arch); }

}  // namespace ragged::models
