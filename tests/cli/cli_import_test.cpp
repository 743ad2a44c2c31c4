// `ragged scenario import` and simulate/tune reading another stack's config
// directly (importers/ does the mapping; tests/importers tests it field by field).

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_test_util.hpp"

namespace ragged::cli {
namespace {

using testing::run_cli;

std::string example(const std::string& name) {
  return std::string(RAGGED_SOURCE_DIR) + "/tests/importers/data/" + name;
}

std::filesystem::path scratch(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(RAGGED_BINARY_DIR) / "tests" / "cli" / "scratch" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  return dir;
}

TEST(CliImport, ImportPrintsTheScenarioWithItsCommentsAndWritesItWithOutput) {
  scratch("import_stdout");
  const auto printed = run_cli({"scenario", "import", example("torchtitan_llama3_70b.toml"), "--gpus", "64"});
  ASSERT_EQ(printed.code, 0) << printed.err;
  EXPECT_EQ(printed.out.rfind("# Imported by `ragged scenario import` from torchtitan_llama3_70b.toml (torchtitan job "
                              "config).", 0), 0u) << printed.out;
  EXPECT_NE(printed.out.find("#   training.mesh.tp: 8  <- parallelism.tensor_parallel_degree = 8 (line 41)"),
            std::string::npos) << printed.out;
  EXPECT_NE(printed.out.find("\nmodel {\n  catalog: \"llama3-70b\"\n}"), std::string::npos);

  const auto dir = scratch("import_output");
  const std::string out = (dir / "mpt-7b-16xh100.textproto").string();
  const auto wrote = run_cli({"scenario", "import", example("foundry_mpt-7b.yaml"), "--gpus", "16", "-o", out});
  ASSERT_EQ(wrote.code, 0) << wrote.err;
  EXPECT_NE(wrote.out.find("llm-foundry training YAML imported as " + out), std::string::npos) << wrote.out;
  EXPECT_NE(wrote.out.find("batch       8 x 2048 tokens per GPU, 8 accumulation steps, global 1024 sequences"),
            std::string::npos) << wrote.out;
  // The file written is a scenario every command reads.
  const auto validated = run_cli({"scenario", "validate", out});
  EXPECT_EQ(validated.code, 0) << validated.err;
  EXPECT_NE(validated.out.find("model       mpt-7b-16xh100 (6.66B parameters)"), std::string::npos) << validated.out;
}

TEST(CliImport, SimulateAndTuneReadAConfigDirectly) {
  scratch("import_simulate");
  const auto simulated = run_cli({"simulate", example("foundry_hf-llama-3.1-8B.yaml"), "--gpus", "8", "--layers", "2",
                                  "--json"});
  ASSERT_EQ(simulated.code, 0) << simulated.err;
  EXPECT_NE(simulated.out.find("\"tokens_per_s_per_gpu\""), std::string::npos);
  const auto deepspeed = run_cli({"simulate", example("transformers_ds_config_zero3.json"), "--model", "llama3-8b",
                                  "--gpus", "8", "--micro-batch", "1", "--seq-len", "2048", "--layers", "2"});
  ASSERT_EQ(deepspeed.code, 0) << deepspeed.err;
  EXPECT_EQ(deepspeed.out.rfind("transformers_ds_config_zero3: llama3-8b-2l on 8 x h100, zero3", 0), 0u) << deepspeed.out;
  const auto tuned = run_cli({"tune", example("torchtitan_llama3_8b.toml"), "--gpus", "8", "--layers", "2",
                              "--strategies", "fsdp2", "--checkpointing", "selective", "--no-cache", "--json"});
  ASSERT_EQ(tuned.code, 0) << tuned.err;
  EXPECT_NE(tuned.out.find("\"fsdp2\""), std::string::npos) << tuned.out;
}

TEST(CliImport, SimulateWarnsOfWhatItDoesNotModel) {
  scratch("import_warnings");
  const auto result = run_cli({"simulate", example("torchtitan_llama3_405b.toml"), "--gpus", "128", "--layers", "2"});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.err.find("ragged: warning: " + example("torchtitan_llama3_405b.toml") +
                            ": model.converters = [\"float8\"] (line 21): float8/MX linears are not modelled"),
            std::string::npos) << result.err;
  // Async TP is modelled (training.mesh.tp_overlap): no warning for it.
  EXPECT_EQ(result.err.find("enable_async_tensor_parallel"), std::string::npos) << result.err;
  EXPECT_EQ(result.out.rfind("torchtitan_llama3_405b: llama3.1-405b-2l on 128 x h100", 0), 0u) << result.out;
}

TEST(CliImport, WhatAConfigLacksIsOneLineNamingTheFlag) {
  scratch("import_errors");
  testing::expect_one_line_error(run_cli({"scenario", "import", example("torchtitan_llama3_8b.toml")}),
                                 "parallelism.data_parallel_shard_degree: -1 (every GPU the other degrees leave), so the "
                                 "config does not fix the GPU count; give --gpus N");
  testing::expect_one_line_error(run_cli({"simulate", example("deepspeed_examples_ds_config_fp16_z3.json"), "--gpus", "8"}),
                                 "model: a DeepSpeed config does not name the model; give --model NAME");
  testing::expect_one_line_error(
      run_cli({"scenario", "import", example("torchtitan_deepseek_v3_16b.toml"), "--gpus", "8"}),
      "torchtitan_deepseek_v3_16b.toml:22:10: model.flavor");
  // validate takes scenarios; a config is sent to import.
  testing::expect_one_line_error(run_cli({"scenario", "validate", example("foundry_mpt-7b.yaml")}),
                                 "foundry_mpt-7b.yaml: this llm-foundry training YAML is not a scenario: `ragged scenario import");
}

}  // namespace
}  // namespace ragged::cli
