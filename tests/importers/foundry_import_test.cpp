// llm-foundry's shipped pretraining YAMLs as scenarios: MPT models as a
// config.json of model_type mpt beside the scenario, Hugging Face models as
// catalog names, Composer's FSDP block and batch arithmetic.

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "import_test_util.hpp"
#include "planner/resolved_scenario.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::importers {
namespace {

using testing::data;
using testing::on_gpus;
using testing::written;

TEST(FoundryImport, Mpt7BBecomesAnMptConfigAndComposersLoop) {
  const ImportedConfig imported = import_config(data("foundry_mpt-7b.yaml"), on_gpus(8));
  EXPECT_EQ(imported.format, ConfigFormat::kLlmFoundry);
  const scenarios::Scenario s = written(imported);
  EXPECT_EQ(s.model().hf_config(), "foundry_mpt-7b.config.json");
  EXPECT_EQ(imported.model_config_name, "foundry_mpt-7b.config.json");
  const nlohmann::json model = nlohmann::json::parse(imported.model_config_json);
  EXPECT_EQ(model["model_type"], "mpt");
  EXPECT_EQ(model["d_model"], 4096);
  EXPECT_EQ(model["n_heads"], 32);
  EXPECT_EQ(model["n_layers"], 32);
  EXPECT_EQ(model["expansion_ratio"], 4);
  EXPECT_EQ(model["max_seq_len"], 2048);   // ${variables.max_seq_len}
  EXPECT_EQ(model["vocab_size"], 50368);
  const scenarios::Training& t = s.training();
  EXPECT_EQ(t.strategy(), scenarios::FSDP1);
  EXPECT_FALSE(t.has_shard_group_size());   // FULL_SHARD: every GPU
  EXPECT_EQ(t.micro_batch_size(), 8);       // device_train_microbatch_size
  EXPECT_EQ(t.gradient_accumulation_steps(), 16);  // global_train_batch_size 1024 / (8 GPUs x 8)
  EXPECT_EQ(t.sequence_length(), 2048);     // max_seq_len: ${variables.max_seq_len}
  EXPECT_EQ(t.precision().param(), scenarios::BF16);   // amp_bf16
  EXPECT_EQ(t.precision().reduce(), scenarios::BF16);  // mixed_precision PURE
  EXPECT_EQ(t.activation_checkpointing(), scenarios::FULL);
  EXPECT_EQ(t.attention(), scenarios::FLASH_ATTENTION_2);  // attn_impl: flash
  EXPECT_EQ(t.loss(), scenarios::FUSED);
  EXPECT_EQ(t.optimizer().adamw().implementation(), scenarios::PER_PARAMETER);  // decoupled_adamw
  EXPECT_DOUBLE_EQ(t.optimizer().adamw().lr(), 1.2e-4);
  EXPECT_DOUBLE_EQ(t.optimizer().adamw().beta2(), 0.95);
  EXPECT_DOUBLE_EQ(t.optimizer().adamw().weight_decay(), 0);
  EXPECT_EQ(t.outputs().metric_cross_entropies(), 2);
  const std::string& text = imported.scenario_text;
  EXPECT_NE(text.find("#   model.init_device = \"meta\" (line 16)"), std::string::npos) << text;
  EXPECT_NE(text.find("#   train_loader.num_workers = 8 (line 43)"), std::string::npos);
  EXPECT_NE(text.find("#   variables.data_remote = null (line 3)"), std::string::npos);
}

TEST(FoundryImport, Mpt125MAccumulatesWhatTheGpusLeave) {
  const scenarios::Scenario s = written(import_config(data("foundry_mpt-125m.yaml"), on_gpus(8)));
  EXPECT_EQ(s.training().micro_batch_size(), 16);
  EXPECT_EQ(s.training().gradient_accumulation_steps(), 2);  // 256 / (8 x 16)
}

TEST(FoundryImport, AHuggingFaceLlamaIsTheCatalogModel) {
  const ImportedConfig imported = import_config(data("foundry_hf-llama-3.1-8B.yaml"), on_gpus(8));
  const scenarios::Scenario s = written(imported);
  EXPECT_EQ(s.model().catalog(), "llama3-8b");  // meta-llama/Meta-Llama-3.1-8B
  EXPECT_TRUE(imported.model_config_json.empty());
  EXPECT_TRUE(s.training().allocator().expandable_segments());
  EXPECT_EQ(s.training().activation_checkpointing(), scenarios::NONE);
  EXPECT_EQ(s.training().loss(), scenarios::SHIFTED_FP32_LOGITS);
  EXPECT_EQ(s.training().gradient_accumulation_steps(), 1);  // 8 / (8 x 1)
  EXPECT_NE(imported.scenario_text.find("fsdp_config.backward_prefetch = \"BACKWARD_PRE\""), std::string::npos);
}

TEST(FoundryImport, ALocalCheckpointIsItsConfigJson) {
  const auto dir = testing::scratch("foundry_local");
  const std::string folder = std::string(RAGGED_SOURCE_DIR) + "/tests/models/data/gpt2-xl";
  const auto path = testing::config_file(dir, "local.yaml",
                                         "max_seq_len: 1024\nmodel:\n  name: hf_causal_lm\n"
                                         "  pretrained_model_name_or_path: " + folder + "\n"
                                         "device_train_microbatch_size: 1\nglobal_train_batch_size: 8\n");
  const scenarios::Scenario s = written(import_config(path, on_gpus(8)));
  EXPECT_EQ(s.model().hf_config(), folder + "/config.json");
}

TEST(FoundryImport, AnMptModelThatCannotBeBuiltIsLocatedInTheYaml) {
  testing::expect_one_line(
      testing::import_error(std::string(RAGGED_SOURCE_DIR) + "/tests/fuzz/corpus/import_llm_foundry/mpt-bad-widths.yaml",
                            on_gpus(8)),
      "mpt-bad-widths.yaml:6:3: model.n_layers: field 'n_layers' must be >= 1 (got 0)");
}

TEST(FoundryImport, TheGlobalBatchMustSplitOverTheGpus) {
  const std::string error = testing::import_error(data("foundry_hf-llama-3.1-8B.yaml"), on_gpus(64));
  testing::expect_one_line(error, "foundry_hf-llama-3.1-8B.yaml:71:1: global_train_batch_size: 8 sequences over 64 GPUs");
  EXPECT_NE(error.find("give a --gpus"), std::string::npos);
  testing::expect_one_line(testing::import_error(data("foundry_mpt-7b.yaml"), ImportOptions{}), "give --gpus N");
}

TEST(FoundryImport, AnAutoMicroBatchNeedsMicroBatch) {
  const auto dir = testing::scratch("foundry_auto");
  const auto path = testing::config_file(dir, "auto.yaml",
                                         "max_seq_len: 1024\n"
                                         "model:\n  name: hf_causal_lm\n  pretrained_model_name_or_path: meta-llama/Meta-Llama-3-8B\n"
                                         "device_train_microbatch_size: auto\n"
                                         "global_train_batch_size: 64\n");
  testing::expect_one_line(testing::import_error(path, on_gpus(8)),
                           "auto.yaml:5:1: device_train_microbatch_size: \"auto\" leaves it to Composer's search; give "
                           "--micro-batch N");
  ImportOptions options = on_gpus(8);
  options.micro_batch = 2;
  const scenarios::Scenario s = written(import_config(path, options));
  EXPECT_EQ(s.training().micro_batch_size(), 2);
  EXPECT_EQ(s.training().gradient_accumulation_steps(), 4);
}

TEST(FoundryImport, ShardingStrategiesAndPrefetch) {
  const auto dir = testing::scratch("foundry_sharding");
  const std::string head =
      "max_seq_len: 2048\nmodel:\n  name: hf_causal_lm\n  pretrained_model_name_or_path: meta-llama/Meta-Llama-3-8B\n"
      "device_train_microbatch_size: 1\nprecision: amp_bf16\n";
  struct Case {
    const char* strategy;
    int shard_group;  // 0: every GPU
    bool reshard;
  };
  for (const Case& c : {Case{"HYBRID_SHARD", 8, true}, Case{"SHARD_GRAD_OP", 0, false},
                        Case{"_HYBRID_SHARD_ZERO2", 8, false}, Case{"NO_SHARD", 1, true}}) {
    SCOPED_TRACE(c.strategy);
    const auto path = testing::config_file(
        dir, "s.yaml", head + fmt::format("fsdp_config:\n  sharding_strategy: {}\n  mixed_precision: DEFAULT\n"
                                          "  backward_prefetch: NONE\n", c.strategy));
    const scenarios::Scenario s = written(import_config(path, on_gpus(16)));
    EXPECT_EQ(s.training().shard_group_size(), c.shard_group);
    EXPECT_EQ(s.training().has_reshard_after_forward() ? s.training().reshard_after_forward() : true, c.reshard);
    EXPECT_EQ(s.training().precision().reduce(), scenarios::FP32);  // DEFAULT: fp32 reductions
    EXPECT_EQ(s.training().prefetch_depth(), 0);                   // backward_prefetch NONE
  }
  const auto bad = testing::config_file(dir, "bad.yaml", head + "fsdp_config:\n  sharding_strategy: FULL\n");
  testing::expect_one_line(testing::import_error(bad, on_gpus(8)),
                           "bad.yaml:8:3: fsdp_config.sharding_strategy: \"FULL\": give FULL_SHARD, SHARD_GRAD_OP");
}

TEST(FoundryImport, TheImportedMptScenarioSimulates) {
  testing::scratch("foundry_simulates");
  scenarios::LoadedScenario loaded = load_imported(data("foundry_mpt-125m.yaml"), on_gpus(8));
  const planner::ResolvedScenario resolved = planner::resolve_scenario(loaded);
  EXPECT_EQ(resolved.model.arch.hidden, 768);
  EXPECT_EQ(resolved.model.arch.layers, 12);
  EXPECT_GT(sim::simulate_summary_in_child(resolved).summary.tokens_per_s_per_gpu(), 0);
}

}  // namespace
}  // namespace ragged::importers
