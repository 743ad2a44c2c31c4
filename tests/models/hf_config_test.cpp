// Hugging Face config.json import: one fixture per supported model_type
// (mirroring the published config.json), and every error path.

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/file_io.hpp"
#include "models/catalog.hpp"
#include "models/hf_config.hpp"
#include "test_helpers.hpp"

namespace ragged::models {
namespace {

using nlohmann::json;
using test_util::find_tensor;
using test_util::fixture;
using test_util::fixture_json;
using test_util::import_error;
using test_util::input_error_of;

void expect_matches_catalog(const std::string& model_type, const std::string& catalog_name) {
  const ModelSpec imported = load_hf_config(fixture(model_type));
  const ModelSpec published = catalog_model(catalog_name);
  EXPECT_EQ(imported.params(), published.params()) << model_type << " vs " << catalog_name;
  EXPECT_EQ(imported.tensor_count(), published.tensor_count()) << model_type;
  EXPECT_DOUBLE_EQ(imported.model_flops_per_token(8192), published.model_flops_per_token(8192)) << model_type;
  EXPECT_DOUBLE_EQ(imported.executed_flops_per_token(8192), published.executed_flops_per_token(8192)) << model_type;
  EXPECT_EQ(imported.name, model_type);  // no _name_or_path: the fixture's directory
  EXPECT_EQ(imported.arch.family, published.arch.family);
}

TEST(HfConfigTest, ImportsMatchTheCatalog) {
  expect_matches_catalog("llama", "llama3-8b");
  expect_matches_catalog("mixtral", "mixtral-8x7b");
  expect_matches_catalog("qwen3_moe", "qwen3-235b-a22b");
  expect_matches_catalog("gpt_oss", "gpt-oss-120b");
  expect_matches_catalog("deepseek_v3", "deepseek-v3");
  // The GPT-2 style catalog entries against the config.json of the same checkpoint.
  for (const char* name : {"gpt2-xl", "gpt-neox-20b", "opt-30b", "mpt-30b", "bloom-176b"}) {
    expect_matches_catalog(name, name);
    const ArchConfig imported = load_hf_config(fixture(name)).arch;
    const ArchConfig& listed = find_catalog_entry(name).arch;
    EXPECT_EQ(imported.dtype, listed.dtype) << name;
    EXPECT_EQ(imported.positions, listed.positions) << name;
    EXPECT_EQ(imported.rotary_dim, listed.rotary_dim) << name;
    EXPECT_EQ(imported.parallel_block, listed.parallel_block) << name;
    EXPECT_EQ(imported.tie_embeddings, listed.tie_embeddings) << name;
  }
}

TEST(HfConfigTest, GptOssLayerTypesAndFusedExperts) {
  const ArchConfig arch = arch_from_hf_json(read_file(fixture("gpt_oss")), fixture("gpt_oss").string());
  EXPECT_EQ(arch.sliding_window, 128);
  ASSERT_EQ(arch.sliding_layers.size(), 36u);
  EXPECT_TRUE(arch.is_sliding_layer(0));
  EXPECT_FALSE(arch.is_sliding_layer(35));
  EXPECT_EQ(arch.expert_storage, ExpertStorage::kFused);
  EXPECT_TRUE(arch.attention_sinks && arch.attention_bias && arch.expert_bias && arch.router_bias);
  EXPECT_EQ(arch.experts, 128);
  EXPECT_EQ(arch.experts_per_token, 4);
}

TEST(HfConfigTest, DeepSeekV3LatentAttention) {
  const ArchConfig arch = arch_from_hf_json(read_file(fixture("deepseek_v3")), "deepseek_v3/config.json");
  EXPECT_EQ(arch.attention, AttentionKind::kMla);
  EXPECT_EQ(arch.q_lora_rank, 1536);
  EXPECT_EQ(arch.kv_lora_rank, 512);
  EXPECT_EQ(arch.first_dense_layers, 3);
  EXPECT_EQ(arch.shared_experts, 1);
  EXPECT_EQ(arch.dtype, DType::kBF16);

  json config = fixture_json("deepseek_v3");
  config["q_lora_rank"] = nullptr;  // DeepSeek-V2-Lite style: q projected directly
  const ModelSpec direct = build_model(arch_from_hf_json(config.dump(), "lite/config.json"));
  EXPECT_NE(find_tensor(direct, "layers.0.self_attn.q_proj.weight"), nullptr);
}

TEST(HfConfigTest, DenseFamilies) {
  const ModelSpec mistral = load_hf_config(fixture("mistral"));
  EXPECT_EQ(mistral.arch.sliding_window, 4096);
  EXPECT_TRUE(mistral.arch.is_sliding_layer(31));
  EXPECT_NEAR(static_cast<double>(mistral.params()) / 1e9, 7.24, 0.01);

  const ModelSpec qwen2 = load_hf_config(fixture("qwen2"));
  EXPECT_EQ(qwen2.name, "Qwen/Qwen2-7B");
  EXPECT_TRUE(qwen2.arch.qkv_bias);
  EXPECT_FALSE(qwen2.arch.is_sliding_layer(0));  // use_sliding_window is false
  EXPECT_NE(find_tensor(qwen2, "layers.0.self_attn.q_proj.bias"), nullptr);
  EXPECT_EQ(find_tensor(qwen2, "layers.0.self_attn.o_proj.bias"), nullptr);
  EXPECT_NEAR(static_cast<double>(qwen2.params()) / 1e9, 7.62, 0.01);

  const ModelSpec qwen3 = load_hf_config(fixture("qwen3"));
  EXPECT_TRUE(qwen3.arch.qk_norm);
  EXPECT_EQ(qwen3.arch.head_dim, 128);
  EXPECT_NE(find_tensor(qwen3, "layers.35.self_attn.k_norm.weight"), nullptr);
  EXPECT_NEAR(static_cast<double>(qwen3.params()) / 1e9, 8.19, 0.01);
}

TEST(HfConfigTest, DefaultsAndOptionalFields) {
  json config = fixture_json("llama");
  config.erase("num_key_value_heads");
  config.erase("tie_word_embeddings");
  config.erase("torch_dtype");
  config["_name_or_path"] = "meta-llama/Llama-2-7b-hf";
  const ArchConfig arch = arch_from_hf_json(config.dump(), "config.json");
  EXPECT_EQ(arch.kv_heads, 32);
  EXPECT_EQ(arch.head_dim, 128);
  EXPECT_FALSE(arch.tie_embeddings);
  EXPECT_EQ(arch.dtype, DType::kBF16);
  EXPECT_EQ(arch.name, "meta-llama/Llama-2-7b-hf");

  config.erase("_name_or_path");
  config["torch_dtype"] = "float32";
  config["tie_word_embeddings"] = true;
  const ArchConfig fp32 = arch_from_hf_json(config.dump(), "config.json");
  EXPECT_EQ(fp32.dtype, DType::kF32);
  EXPECT_TRUE(fp32.tie_embeddings);
  EXPECT_EQ(fp32.name, "llama");  // no name and no directory: the model_type

  json oss = fixture_json("gpt_oss");
  oss.erase("num_experts_per_tok");
  oss.erase("layer_types");
  const ArchConfig fallback = arch_from_hf_json(oss.dump(), "config.json");
  EXPECT_EQ(fallback.experts_per_token, 4);
  EXPECT_TRUE(fallback.is_sliding_layer(2));
  EXPECT_FALSE(fallback.is_sliding_layer(3));
  // swiglu_limit clamps the experts' GLU inputs (transformers' GptOssConfig default 7).
  EXPECT_DOUBLE_EQ(fallback.glu_clamp, 7.0);
  oss["swiglu_limit"] = 5.5;
  EXPECT_DOUBLE_EQ(arch_from_hf_json(oss.dump(), "config.json").glu_clamp, 5.5);
}

TEST(HfConfigErrorTest, MalformedJsonGivesTheBytePosition) {
  const std::string message =
      input_error_of([] { arch_from_hf_json("{\"model_type\": \"llama\",", "broken/config.json"); });
  EXPECT_NE(message.find("broken/config.json: malformed JSON at byte 24"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_NE(import_error(json::array({1, 2})).find("expected a JSON object"), std::string::npos);
}

TEST(HfConfigErrorTest, ModelType) {
  json config = fixture_json("llama");
  config.erase("model_type");
  EXPECT_EQ(import_error(config), "bad/config.json: missing field 'model_type'");
  config["model_type"] = 7;
  EXPECT_NE(import_error(config).find("field 'model_type' must be a string"), std::string::npos);
  config["model_type"] = "bert";
  const std::string message = import_error(config);
  EXPECT_NE(message.find("unsupported model_type 'bert'"), std::string::npos) << message;
  for (const char* type : {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "gpt_oss", "deepseek_v3",
                           "gpt2", "gpt_neox", "mpt", "opt", "falcon", "bloom"}) {
    EXPECT_NE(message.find(type), std::string::npos) << message;
  }
}

TEST(HfConfigErrorTest, MissingRequiredFieldNamesTheModelType) {
  json config = fixture_json("llama");
  config.erase("hidden_size");
  EXPECT_EQ(import_error(config), "bad/config.json: missing field 'hidden_size' (required for model_type llama)");
  json moe = fixture_json("qwen3_moe");
  moe.erase("moe_intermediate_size");
  EXPECT_EQ(import_error(moe),
            "bad/config.json: missing field 'moe_intermediate_size' (required for model_type qwen3_moe)");
  json deepseek = fixture_json("deepseek_v3");
  deepseek["kv_lora_rank"] = nullptr;
  EXPECT_NE(import_error(deepseek).find("missing field 'kv_lora_rank'"), std::string::npos);
}

TEST(HfConfigErrorTest, WrongTypes) {
  json config = fixture_json("llama");
  config["num_hidden_layers"] = "32";
  EXPECT_NE(import_error(config).find("field 'num_hidden_layers' must be an integer"), std::string::npos);
  config["num_hidden_layers"] = 32.5;
  EXPECT_NE(import_error(config).find("field 'num_hidden_layers' must be an integer"), std::string::npos);
  config = fixture_json("llama");
  config["tie_word_embeddings"] = "yes";
  EXPECT_NE(import_error(config).find("field 'tie_word_embeddings' must be true or false"), std::string::npos);
  config = fixture_json("llama");
  config["torch_dtype"] = "int8";
  EXPECT_NE(import_error(config).find("field 'torch_dtype' must be bfloat16, float16 or float32"), std::string::npos);
  config = fixture_json("gpt_oss");
  config["layer_types"] = json::array({"sliding_attention"});
  EXPECT_NE(import_error(config).find("field 'layer_types' must have num_hidden_layers (36)"), std::string::npos);
  config["layer_types"] = "alternate";
  EXPECT_NE(import_error(config).find("field 'layer_types' must be an array"), std::string::npos);
}

TEST(HfConfigErrorTest, InvalidNumbersNameTheField) {
  struct Case {
    const char* model_type;
    const char* field;
    json value;
    const char* named;  // the field the message must name
  };
  const Case cases[] = {
      {"llama", "num_hidden_layers", 0, "num_hidden_layers"},
      {"llama", "hidden_size", -4096, "hidden_size"},
      {"llama", "vocab_size", 0, "vocab_size"},
      {"llama", "num_attention_heads", 0, "num_attention_heads"},
      {"llama", "num_attention_heads", 7, "num_attention_heads"},  // does not divide hidden_size
      {"llama", "num_key_value_heads", 5, "num_key_value_heads"},
      {"llama", "intermediate_size", 0, "intermediate_size"},
      {"mixtral", "num_experts_per_tok", 9, "num_experts_per_tok (9) must be at most num_local_experts (8)"},
      {"mixtral", "num_local_experts", 0, "num_local_experts"},
      {"deepseek_v3", "first_k_dense_replace", 62, "first_k_dense_replace"},
      {"gpt_oss", "num_experts_per_tok", 0, "num_experts_per_tok"},
      {"qwen3_moe", "num_experts", 4, "num_experts"},
      {"deepseek_v3", "qk_rope_head_dim", 0, "qk_rope_head_dim"},
  };
  for (const Case& c : cases) {
    json config = fixture_json(c.model_type);
    config[c.field] = c.value;
    const std::string message = import_error(config);
    EXPECT_NE(message.find("bad/config.json: "), std::string::npos) << message;
    EXPECT_NE(message.find(c.named), std::string::npos) << c.field << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(HfConfigErrorTest, UnsupportedLayouts) {
  json moe = fixture_json("qwen3_moe");
  moe["decoder_sparse_step"] = 2;
  EXPECT_NE(import_error(moe).find("decoder_sparse_step 2 is unsupported"), std::string::npos);
  moe = fixture_json("qwen3_moe");
  moe["mlp_only_layers"] = json::array({0, 1});
  EXPECT_NE(import_error(moe).find("mlp_only_layers [0,1] is unsupported"), std::string::npos);
  json deepseek = fixture_json("deepseek_v3");
  deepseek["moe_layer_freq"] = 2;
  EXPECT_NE(import_error(deepseek).find("moe_layer_freq 2 is unsupported"), std::string::npos);
}

TEST(HfConfigErrorTest, MissingFile) { EXPECT_THROW(load_hf_config(fixture("no_such_type")), InputError); }

}  // namespace
}  // namespace ragged::models
