// torchtitan's shipped llama3 job configs as scenarios: every mapped field,
// the comments for what is not mapped, and the errors for what is missing.

#include <gtest/gtest.h>

#include "import_test_util.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::importers {
namespace {

using testing::data;
using testing::on_gpus;
using testing::written;

TEST(TorchtitanImport, Llama3_8BMapsEveryModelledField) {
  const ImportedConfig imported = import_config(data("torchtitan_llama3_8b.toml"), on_gpus(8));
  EXPECT_EQ(imported.format, ConfigFormat::kTorchtitan);
  const scenarios::Scenario s = written(imported);
  EXPECT_EQ(s.name(), "torchtitan_llama3_8b");
  EXPECT_EQ(s.description(), "Llama 3 8B training");
  EXPECT_EQ(s.model().catalog(), "llama3-8b");
  EXPECT_EQ(s.cluster().gpu().preset(), "h100");
  EXPECT_EQ(scenarios::total_gpus(s), 8);
  const scenarios::Training& t = s.training();
  EXPECT_EQ(t.strategy(), scenarios::FSDP2);
  EXPECT_EQ(t.micro_batch_size(), 1);        // training.local_batch_size = 1
  EXPECT_EQ(t.sequence_length(), 8192);      // training.seq_len = 8192
  EXPECT_EQ(t.activation_checkpointing(), scenarios::SELECTIVE);  // mode selective, option "op"
  EXPECT_FALSE(t.compiled());                // compile.enable = false
  EXPECT_EQ(t.precision().param(), scenarios::BF16);
  EXPECT_EQ(t.precision().reduce(), scenarios::FP32);
  EXPECT_DOUBLE_EQ(t.optimizer().adamw().lr(), 3e-4);
  EXPECT_DOUBLE_EQ(t.optimizer().adamw().eps(), 1e-8);
  EXPECT_FALSE(t.has_mesh());                // every degree 1, data_parallel_shard_degree -1
  EXPECT_TRUE(imported.warnings.empty());
  // What is not mapped is named, with its line and why.
  const std::string& text = imported.scenario_text;
  EXPECT_NE(text.find("#   checkpoint.interval = 500 (line 48)"), std::string::npos) << text;
  EXPECT_NE(text.find("#   training.steps = 1000 (line 35)"), std::string::npos);
  EXPECT_NE(text.find("quantization settings left unused"), std::string::npos);
  EXPECT_NE(text.find("#   cluster: 8 GPUs  <- --gpus 8"), std::string::npos);
}

TEST(TorchtitanImport, Llama3_70BKeepsItsTensorParallelMesh) {
  const scenarios::Scenario s = written(import_config(data("torchtitan_llama3_70b.toml"), on_gpus(64)));
  EXPECT_EQ(s.model().catalog(), "llama3-70b");
  EXPECT_EQ(s.training().mesh().tp(), 8);    // tensor_parallel_degree = 8
  EXPECT_FALSE(s.training().mesh().has_dp_shard());  // -1: the 8 GPUs tp leaves
  EXPECT_EQ(s.training().micro_batch_size(), 8);
  EXPECT_EQ(s.training().activation_checkpointing(), scenarios::FULL);
}

TEST(TorchtitanImport, Llama3_405BSaysWhatItCannotModel) {
  const ImportedConfig imported = import_config(data("torchtitan_llama3_405b.toml"), on_gpus(128));
  const scenarios::Scenario s = written(imported);
  EXPECT_EQ(s.model().catalog(), "llama3.1-405b");
  EXPECT_TRUE(s.training().compiled());      // compile.enable = true, components model and loss
  EXPECT_EQ(s.training().compile_scope(), scenarios::TRANSFORMER_BLOCKS);
  EXPECT_EQ(s.training().micro_batch_size(), 2);
  const std::string& text = imported.scenario_text;
  // float8 changes the step and is not modelled: a comment and a warning
  // each; async TP is (training.mesh.tp_overlap).
  EXPECT_NE(text.find("#   model.converters = [\"float8\"] (line 21): float8/MX linears are not modelled"),
            std::string::npos) << text;
  EXPECT_NE(text.find("quantize.linear.float8.enable_fsdp_float8_all_gather = true (line 62): float8/MX settings, "
                      "not modelled"),
            std::string::npos);
  EXPECT_EQ(s.training().mesh().tp_overlap(), scenarios::ASYNC_TP);  // enable_async_tensor_parallel = true, tp 8
  EXPECT_NE(text.find("compile.components"), std::string::npos);
  EXPECT_EQ(imported.warnings.size(), 1u);
}

TEST(TorchtitanImport, AFlavorOutsideTheCatalogNeedsModel) {
  const std::string error = testing::import_error(data("torchtitan_deepseek_v3_16b.toml"), on_gpus(8));
  testing::expect_one_line(error, "torchtitan_deepseek_v3_16b.toml:22:10: model.flavor: torchtitan's deepseek_v3 "
                                  "flavor \"16B\" is not in Ragged's catalog");
  EXPECT_NE(error.find("give --model NAME"), std::string::npos);
  // With --model it imports, expert parallelism 8 carried over.
  ImportOptions options = on_gpus(8);
  options.model = "gpt-oss-20b";
  const scenarios::Scenario s = written(import_config(data("torchtitan_deepseek_v3_16b.toml"), options));
  EXPECT_EQ(s.model().catalog(), "gpt-oss-20b");
  EXPECT_EQ(s.training().mesh().ep(), 8);    // expert_parallel_degree = 8
  EXPECT_EQ(s.training().micro_batch_size(), 4);
  EXPECT_EQ(s.training().sequence_length(), 4096);
}

TEST(TorchtitanImport, TheGpuCountComesFromGpusWhenTheShardDegreeIsMinusOne) {
  const std::string error = testing::import_error(data("torchtitan_llama3_8b.toml"), ImportOptions{});
  testing::expect_one_line(error, "torchtitan_llama3_8b.toml:40:30: parallelism.data_parallel_shard_degree: -1");
  EXPECT_NE(error.find("give --gpus N"), std::string::npos);
  // 70B's tp 8 must divide the GPUs.
  testing::expect_one_line(testing::import_error(data("torchtitan_llama3_70b.toml"), on_gpus(12)), "give --gpus a multiple of 8");
}

TEST(TorchtitanImport, PipelineLayerCheckpointingAndReshardSettings) {
  const auto dir = testing::scratch("torchtitan_pipeline");
  const auto path = testing::config_file(dir, "pp.toml",
                                         "[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
                                         "[training]\nlocal_batch_size = 8\nseq_len = 4096\nglobal_batch_size = 128\n"
                                         "mixed_precision_reduce = \"bfloat16\"\n"
                                         "[parallelism]\ndata_parallel_shard_degree = 4\npipeline_parallel_degree = 2\n"
                                         "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                                         "pipeline_parallel_microbatch_size = 2\nfsdp_reshard_after_forward = \"never\"\n"
                                         "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"2\"\n");
  const ImportedConfig imported = import_config(path, ImportOptions{});  // 4 x 2 GPUs: the config fixes the count
  const scenarios::Scenario s = written(imported);
  EXPECT_EQ(scenarios::total_gpus(s), 8);
  const scenarios::Training& t = s.training();
  EXPECT_EQ(t.mesh().pp(), 2);
  EXPECT_EQ(t.mesh().dp_shard(), 4);
  EXPECT_EQ(t.micro_batch_size(), 2);                   // pipeline_parallel_microbatch_size
  EXPECT_EQ(t.pipeline().micro_batches(), 4);           // local_batch_size 8 / 2
  EXPECT_EQ(t.pipeline().schedule(), scenarios::INTERLEAVED_1F1B);
  EXPECT_EQ(t.gradient_accumulation_steps(), 4);        // 128 / (8 x 4 data-parallel ranks)
  EXPECT_EQ(t.activation_checkpointing(), scenarios::FULL);  // selective "2": every 2nd block
  EXPECT_EQ(t.checkpoint_every(), 2);
  EXPECT_FALSE(t.reshard_after_forward());
  EXPECT_EQ(t.precision().reduce(), scenarios::BF16);
  // --gpus that contradicts the fixed degrees names the field.
  testing::expect_one_line(testing::import_error(path, on_gpus(16)),
                           "pp.toml:10:30: parallelism.data_parallel_shard_degree: 4 with the other degrees makes 8 GPUs, "
                           "but --gpus is 16");
}

TEST(TorchtitanImport, DegreesAndBatchesTooLargeAreRefusedBeforeTheyOverflow) {
  const auto dir = testing::scratch("torchtitan_huge");
  const auto path = testing::config_file(dir, "huge.toml",
                                         "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nseq_len = 8192\n"
                                         "[parallelism]\ndata_parallel_replicate_degree = 1048576\n"
                                         "tensor_parallel_degree = 1048576\ncontext_parallel_degree = 1048576\n"
                                         "pipeline_parallel_degree = 1048576\n");
  testing::expect_one_line(testing::import_error(path, on_gpus(8)),
                           "huge.toml:8:26: parallelism.tensor_parallel_degree: the degrees multiply to more than 1048576 GPUs");
  const auto batch = testing::config_file(dir, "batch.toml",
                                          "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nseq_len = 8192\n"
                                          "local_batch_size = 1\nglobal_batch_size = 1099511627776\n");
  testing::expect_one_line(testing::import_error(batch, on_gpus(8)),
                           "training.global_batch_size: 1099511627776 makes 137438953472 accumulation steps; at most 4096");
}

// TorchTitan's paper ran its Llama 3 8B rows (arXiv 2410.06511) with the
// October 2024 llama3_8b.toml: degrees under [training] and [experimental],
// batch_size, compile, [float8], optimizer.fused false. Imported on the
// calibration's GPUs with its local batch of 2, it is the shipped scenario
// written by hand from the paper.
TEST(TorchtitanImport, The2024ConfigOfTheCalibrationRunIsTheShippedScenario) {
  testing::scratch("torchtitan_2024");
  ImportOptions options = on_gpus(8);
  options.gpu = "h100-sxm-95g";
  scenarios::LoadedScenario imported = load_imported(data("torchtitan_2024_llama3_8b.toml"), options);
  imported.written.mutable_training()->set_micro_batch_size(2);
  imported = scenarios::rebuild(std::move(imported));
  const scenarios::LoadedScenario shipped = scenarios::load_scenario("llama3-8b-8xh100");
  EXPECT_EQ(imported.scenario.model().DebugString(), shipped.scenario.model().DebugString());
  EXPECT_EQ(imported.scenario.cluster().DebugString(), shipped.scenario.cluster().DebugString());
  EXPECT_EQ(imported.scenario.training().DebugString(), shipped.scenario.training().DebugString());
  EXPECT_EQ(imported.written.training().optimizer().adamw().implementation(), scenarios::FOREACH);
}

TEST(TorchtitanImport, TheImportedScenarioSimulates) {
  testing::scratch("torchtitan_simulates");
  scenarios::LoadedScenario loaded = load_imported(data("torchtitan_llama3_8b.toml"), on_gpus(8));
  loaded.written.mutable_model()->set_layers(2);  // a small model: the test stays fast
  loaded = scenarios::rebuild(std::move(loaded));
  const traces::Summary summary = sim::simulate_summary_in_child(planner::resolve_scenario(loaded)).summary;
  EXPECT_GT(summary.tokens_per_s_per_gpu(), 0);
}

}  // namespace
}  // namespace ragged::importers
