// validate_arch: every invalid number is an InputError naming its field.

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "models/catalog.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

using test_util::input_error_of;

struct BadArch {
  const char* model;
  std::function<void(ArchConfig&)> mutate;
  const char* field;
};

TEST(ArchConfigTest, CatalogArchitecturesAreValid) {
  for (const CatalogEntry& entry : catalog()) EXPECT_NO_THROW(validate_arch(entry.arch, "")) << entry.arch.name;
}

TEST(ArchConfigTest, EveryInvalidNumberNamesItsField) {
  const std::vector<BadArch> cases = {
      {"llama3-8b", [](ArchConfig& a) { a.hidden = 0; }, "hidden_size"},
      {"llama3-8b", [](ArchConfig& a) { a.layers = -1; }, "num_layers"},
      {"llama3-8b", [](ArchConfig& a) { a.vocab = 0; }, "vocab_size"},
      {"llama3-8b", [](ArchConfig& a) { a.heads = 0; }, "num_attention_heads"},
      {"llama3-8b", [](ArchConfig& a) { a.kv_heads = 0; }, "num_key_value_heads"},
      {"llama3-8b", [](ArchConfig& a) { a.kv_heads = 3; }, "num_key_value_heads"},
      {"llama3-8b", [](ArchConfig& a) { a.head_dim = 0; }, "head_dim"},
      {"llama3-8b", [](ArchConfig& a) { a.intermediate = 0; }, "intermediate_size"},
      {"llama3-8b", [](ArchConfig& a) { a.experts = -2; }, "num_experts"},
      {"llama3-8b", [](ArchConfig& a) { a.sliding_window = -1; }, "sliding_window"},
      {"llama3-8b", [](ArchConfig& a) { a.sliding_layers = {true, false}; a.sliding_window = 8; }, "sliding_layers"},
      {"llama3-8b", [](ArchConfig& a) { a.sliding_layers.assign(32, true); }, "sliding_window"},
      {"mixtral-8x7b", [](ArchConfig& a) { a.experts_per_token = 0; }, "experts_per_token"},
      {"mixtral-8x7b", [](ArchConfig& a) { a.experts_per_token = 9; }, "experts_per_token"},
      {"mixtral-8x7b", [](ArchConfig& a) { a.moe_intermediate = 0; }, "moe_intermediate_size"},
      {"deepseek-v3", [](ArchConfig& a) { a.intermediate = 0; }, "intermediate_size"},
      {"deepseek-v3", [](ArchConfig& a) { a.first_dense_layers = 62; }, "first_dense_layers"},
      {"deepseek-v3", [](ArchConfig& a) { a.shared_experts = -1; }, "shared_experts"},
      {"deepseek-v3", [](ArchConfig& a) { a.kv_lora_rank = 0; }, "kv_lora_rank"},
      {"deepseek-v3", [](ArchConfig& a) { a.q_lora_rank = -1; }, "q_lora_rank"},
      {"deepseek-v3", [](ArchConfig& a) { a.qk_nope_head_dim = 0; }, "qk_nope_head_dim"},
      {"deepseek-v3", [](ArchConfig& a) { a.qk_rope_head_dim = 0; }, "qk_rope_head_dim"},
      {"deepseek-v3", [](ArchConfig& a) { a.v_head_dim = 0; }, "v_head_dim"},
      {"deepseek-v3", [](ArchConfig& a) { a.qkv_fused = true; }, "qkv_fused"},
      {"llama3-8b", [](ArchConfig& a) { a.norm_bias = true; }, "norm_bias"},
      {"mixtral-8x7b", [](ArchConfig& a) { a.mlp = MlpKind::kPlain; }, "mlp"},
      {"gpt-neox-20b", [](ArchConfig& a) { a.rotary_dim = 97; }, "rotary_dim"},
      {"gpt-neox-20b", [](ArchConfig& a) { a.rotary_dim = 23; }, "rotary_dim"},
      {"gpt-neox-20b", [](ArchConfig& a) { a.shared_block_norm = true; a.parallel_block = false; }, "shared_block_norm"},
      {"gpt2-xl", [](ArchConfig& a) { a.max_positions = 0; }, "max_position_embeddings"},
      {"opt-30b", [](ArchConfig& a) { a.position_offset = -2; }, "position_offset"},
      {"opt-30b", [](ArchConfig& a) { a.embed_dim = -1; }, "embed_dim"},
  };
  for (const BadArch& bad : cases) {
    ArchConfig arch = find_catalog_entry(bad.model).arch;
    bad.mutate(arch);
    const std::string message = input_error_of([&] { validate_arch(arch, "model.inline_spec."); });
    EXPECT_NE(message.find(std::string("model.inline_spec.") + bad.field), std::string::npos)
        << bad.model << ": " << message;
    EXPECT_NE(message.find("must"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(ArchConfigTest, MessageSaysWhatIsValid) {
  ArchConfig arch = find_catalog_entry("llama3-8b").arch;
  arch.kv_heads = 5;
  EXPECT_EQ(input_error_of([&] { validate_arch(arch, ""); }),
            "num_key_value_heads must divide num_attention_heads (32) (got 5)");
  arch = find_catalog_entry("mixtral-8x7b").arch;
  arch.experts_per_token = 9;
  EXPECT_EQ(input_error_of([&] { validate_arch(arch, ""); }),
            "experts_per_token must be between 1 and num_experts (8) (got 9)");
}

TEST(ArchConfigTest, SlidingLayers) {
  ArchConfig arch = find_catalog_entry("gpt-oss-20b").arch;
  EXPECT_TRUE(arch.is_sliding_layer(0));
  EXPECT_FALSE(arch.is_sliding_layer(1));
  EXPECT_TRUE(arch.is_sliding_layer(22));
  EXPECT_FALSE(arch.is_sliding_layer(23));
  EXPECT_FALSE(arch.is_sliding_layer(24));
  arch.sliding_window = 0;
  EXPECT_FALSE(arch.is_sliding_layer(0));
  EXPECT_FALSE(find_catalog_entry("llama3-8b").arch.is_sliding_layer(0));
}

TEST(ArchConfigTest, MoeLayers) {
  const ArchConfig& deepseek = find_catalog_entry("deepseek-v3").arch;
  EXPECT_FALSE(deepseek.is_moe_layer(2));
  EXPECT_TRUE(deepseek.is_moe_layer(3));
  EXPECT_FALSE(find_catalog_entry("llama3-8b").arch.is_moe_layer(3));
}

}  // namespace
}  // namespace ragged::models
