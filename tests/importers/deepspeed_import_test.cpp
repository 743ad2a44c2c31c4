// DeepSpeed configs as their projects ship them: ZeRO stage, batch
// arithmetic, precision, offload and "auto" values, with --model and
// --seq-len supplying what a DeepSpeed config never says.

#include <gtest/gtest.h>

#include "import_test_util.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::importers {
namespace {

using testing::data;
using testing::written;

ImportOptions llama(int64_t gpus, int64_t micro = 0) {
  ImportOptions o;
  o.model = "llama3-8b";
  o.gpus = gpus;
  o.sequence_length = 2048;
  o.micro_batch = micro;
  return o;
}

TEST(DeepSpeedImport, TransformersZero3ConfigWithItsAutosAndOffload) {
  const ImportedConfig imported = import_config(data("transformers_ds_config_zero3.json"), llama(8, 1));
  EXPECT_EQ(imported.format, ConfigFormat::kDeepSpeed);
  const scenarios::Scenario s = written(imported);
  EXPECT_EQ(s.model().catalog(), "llama3-8b");
  EXPECT_EQ(s.training().strategy(), scenarios::ZERO3);  // zero_optimization.stage 3
  EXPECT_EQ(s.training().micro_batch_size(), 1);         // "auto": --micro-batch
  EXPECT_EQ(s.training().sequence_length(), 2048);
  EXPECT_EQ(s.training().precision().param(), scenarios::BF16);  // fp16 "auto": bf16 taken
  EXPECT_EQ(s.training().optimizer().adamw().implementation(), scenarios::FUSED_KERNEL);
  const std::string& text = imported.scenario_text;
  EXPECT_NE(text.find("#   zero_optimization.offload_optimizer.device = \"cpu\" (line 33): offload to cpu is not modelled"),
            std::string::npos) << text;
  EXPECT_NE(text.find("#   zero_optimization.offload_param.device = \"cpu\" (line 37)"), std::string::npos);
  EXPECT_NE(text.find("#   zero_optimization.stage3_max_live_parameters = 1000000000.0 (line 46)"), std::string::npos);
  EXPECT_NE(text.find("#   optimizer.params.lr = \"auto\""), std::string::npos);
  EXPECT_NE(text.find("#   steps_per_print = 2000 (line 53)"), std::string::npos);
  EXPECT_EQ(imported.warnings.size(), 3u);  // fp16 "auto", two offloads
}

TEST(DeepSpeedImport, TheGpuCountFollowsFromTheBatchFields) {
  ImportOptions options = llama(0);
  const ImportedConfig imported = import_config(data("deepspeed_examples_bing_bert_squad_bsz24.json"), options);
  const scenarios::Scenario s = written(imported);
  EXPECT_EQ(scenarios::total_gpus(s), 8);  // train_batch_size 24 / micro 3 / accumulation 1
  EXPECT_EQ(s.training().micro_batch_size(), 3);
  EXPECT_EQ(s.training().gradient_accumulation_steps(), 1);
  EXPECT_EQ(s.training().precision().param(), scenarios::FP16);  // fp16.enabled
  EXPECT_EQ(s.training().precision().reduce(), scenarios::FP16);
  EXPECT_DOUBLE_EQ(s.training().optimizer().adamw().lr(), 3e-5);
  EXPECT_DOUBLE_EQ(s.training().optimizer().adamw().weight_decay(), 0);
  // No zero_optimization block: stage 0, imported as ZeRO-3 with the reason.
  EXPECT_EQ(s.training().strategy(), scenarios::ZERO3);
  EXPECT_NE(imported.scenario_text.find("no zero_optimization.stage (stage 0"), std::string::npos);
  // --gpus 16 contradicts 24 = 3 x 1 x GPUs.
  testing::expect_one_line(testing::import_error(data("deepspeed_examples_bing_bert_squad_bsz24.json"), llama(16)),
                           "deepspeed_examples_bing_bert_squad_bsz24.json:2:3: train_batch_size: 24 sequences are not a whole number "
                           "of micro-batches of 3 on 16 GPUs; give --gpus N where N divides 8");
}

TEST(DeepSpeedImport, ZeroStage2IsImportedAsStage3WithAWarning) {
  const ImportedConfig imported = import_config(data("deepspeed_examples_ds_config_fp16_z2.json"), llama(8, 2));
  EXPECT_EQ(written(imported).training().strategy(), scenarios::ZERO3);
  EXPECT_NE(imported.scenario_text.find("#   zero_optimization.stage = 2 (line 4): ZeRO stage 2 keeps the parameters"),
            std::string::npos) << imported.scenario_text;
  ASSERT_EQ(imported.warnings.size(), 1u);
  EXPECT_NE(imported.warnings.front().find("zero_optimization.stage"), std::string::npos);
}

TEST(DeepSpeedImport, TheModelAndTheSequenceComeFromTheCommandLine) {
  ImportOptions options = llama(8, 1);
  options.model.clear();
  testing::expect_one_line(testing::import_error(data("deepspeed_examples_ds_config_fp16_z3.json"), options),
                           "deepspeed_examples_ds_config_fp16_z3.json: model: a DeepSpeed config does not name the model; "
                           "give --model NAME");
  options = llama(8, 1);
  options.sequence_length = 0;
  testing::expect_one_line(testing::import_error(data("deepspeed_examples_ds_config_fp16_z3.json"), options),
                           "sequence_length: a DeepSpeed config does not give the sequence length; give --seq-len N");
  options = llama(8);
  testing::expect_one_line(testing::import_error(data("deepspeed_examples_ds_config_fp16_z3.json"), options),
                           "deepspeed_examples_ds_config_fp16_z3.json:2:3: train_micro_batch_size_per_gpu: \"auto\": the "
                           "Trainer's per-device batch; give --micro-batch N");
}

TEST(DeepSpeedImport, AGpuCountBeyondTheLimitIsRefused) {
  testing::expect_one_line(
      testing::import_error(std::string(RAGGED_SOURCE_DIR) + "/tests/fuzz/corpus/import_deepspeed/huge-batch.json", llama(0)),
      "huge-batch.json:1:2: train_batch_size: makes 68719476736 GPUs; at most 1048576: give --gpus N");
}

TEST(DeepSpeedImport, TheImportedScenarioSimulates) {
  testing::scratch("deepspeed_simulates");
  scenarios::LoadedScenario loaded = load_imported(data("deepspeed_examples_ds_config_fp16_z3.json"), llama(8, 1));
  loaded.written.mutable_model()->set_layers(2);
  loaded = scenarios::rebuild(std::move(loaded));
  EXPECT_GT(sim::simulate_summary_in_child(planner::resolve_scenario(loaded)).summary.tokens_per_s_per_gpu(), 0);
}

}  // namespace
}  // namespace ragged::importers
