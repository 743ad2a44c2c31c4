// What `ragged scenario import` writes: every field of every shipped example
// accounted for, the file written atomically (and its model config beside
// it), loaded back as a scenario file.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "importers/config_readers.hpp"
#include "import_test_util.hpp"
#include "planner/resolved_scenario.hpp"

namespace ragged::importers {
namespace {

using testing::data;

std::string contents(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Example {
  const char* file;
  ImportOptions options;
};

std::vector<Example> examples() {
  ImportOptions deepspeed;
  deepspeed.model = "llama3-8b";
  deepspeed.gpus = 8;
  deepspeed.micro_batch = 1;
  deepspeed.sequence_length = 2048;
  ImportOptions deepseek = testing::on_gpus(8);
  deepseek.model = "gpt-oss-20b";
  return {{"torchtitan_llama3_8b.toml", testing::on_gpus(8)},
          {"torchtitan_2024_llama3_8b.toml", testing::on_gpus(8)},
          {"torchtitan_llama3_70b.toml", testing::on_gpus(64)},
          {"torchtitan_llama3_405b.toml", testing::on_gpus(128)},
          {"torchtitan_deepseek_v3_16b.toml", deepseek},
          {"foundry_mpt-7b.yaml", testing::on_gpus(8)},
          {"foundry_mpt-125m.yaml", testing::on_gpus(8)},
          {"foundry_hf-llama-3.1-8B.yaml", testing::on_gpus(8)},
          {"transformers_ds_config_zero3.json", deepspeed},
          {"deepspeed_examples_ds_config_fp16_z3.json", deepspeed},
          {"deepspeed_examples_ds_config_fp16_z2.json", deepspeed},
          {"deepspeed_examples_bing_bert_squad_bsz24.json", deepspeed}};
}

ConfigDocument read_any(const std::filesystem::path& path) {
  const std::string text = contents(path);
  if (path.extension() == ".toml") return read_toml(text, path.string(), "");
  if (path.extension() == ".yaml") return read_yaml(text, path.string(), "");
  return read_json(text, path.string(), "");
}

TEST(ImportOutput, EveryFieldOfEveryShippedExampleIsAccountedFor) {
  for (const Example& example : examples()) {
    SCOPED_TRACE(example.file);
    const ImportedConfig imported = import_config(data(example.file), example.options);
    const ConfigDocument doc = read_any(data(example.file));
    ASSERT_GT(doc.leaves().size(), 2u);
    for (const ConfigLeaf& leaf : doc.leaves()) {
      // Each field is named in a comment line, with its value (as a mapping's source, or on a line of its own).
      EXPECT_NE(imported.scenario_text.find(" " + leaf.path + " = "), std::string::npos) << leaf.path;
    }
    // And the scenario the comments describe loads.
    EXPECT_NO_THROW(testing::written(imported));
  }
}

TEST(ImportOutput, WritesTheScenarioAndItsModelAtomicallyAndTheyLoad) {
  const auto dir = testing::scratch("output_atomic");
  const std::filesystem::path out = dir / "mpt-7b-8xh100.textproto";
  const ImportedConfig imported = write_imported(data("foundry_mpt-7b.yaml"), testing::on_gpus(8), out);
  EXPECT_EQ(contents(out), imported.scenario_text);
  EXPECT_EQ(contents(dir / "mpt-7b-8xh100.config.json"), imported.model_config_json);
  // Nothing else in the folder: the temporaries were renamed into place.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files += entry.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 2u);
  const scenarios::LoadedScenario loaded = scenarios::load_scenario_file(out);
  EXPECT_EQ(loaded.scenario.name(), "mpt-7b-8xh100");
  const planner::ResolvedScenario resolved = planner::resolve_scenario(loaded);
  EXPECT_EQ(resolved.model.arch.hidden, 4096);
  EXPECT_EQ(resolved.model.name, "mpt-7b-8xh100");
}

TEST(ImportOutput, AFailedImportLeavesTheOldFileAlone) {
  const auto dir = testing::scratch("output_failed");
  const std::filesystem::path out = dir / "llama.textproto";
  write_imported(data("torchtitan_llama3_8b.toml"), testing::on_gpus(8), out);
  const std::string before = contents(out);
  std::string text = contents(data("torchtitan_llama3_8b.toml"));
  text.replace(text.find("local_batch_size = 1"), 20, "local_batch_size = \"two\"");
  const auto bad = testing::config_file(dir, "bad.toml", text);
  EXPECT_THROW(write_imported(bad, testing::on_gpus(8), out), InputError);
  EXPECT_EQ(contents(out), before);
  testing::expect_one_line(testing::import_error(bad, testing::on_gpus(8)),
                           "bad.toml:32:20: training.local_batch_size: \"two\" is a string, not a whole number; give a "
                           "whole number from 1 to 65536");
}

TEST(ImportOutput, ToStdoutTheModelConfigIsNamedByItsCachedPath) {
  const auto dir = testing::scratch("output_stdout");
  const ImportedConfig imported = write_imported(data("foundry_mpt-125m.yaml"), testing::on_gpus(8), "");
  const scenarios::Scenario s = testing::written(imported);
  const std::filesystem::path config = s.model().hf_config();
  EXPECT_TRUE(config.is_absolute());
  EXPECT_EQ(config.string().rfind((dir / "cache" / "ragged" / "import").string(), 0), 0u) << config;
  EXPECT_EQ(contents(config), imported.model_config_json);
}

TEST(ImportOutput, OnlyConfigsOfTheThreeStacksAreImported) {
  EXPECT_EQ(config_format_of("a/job.toml"), ConfigFormat::kTorchtitan);
  EXPECT_EQ(config_format_of("a/run.YAML"), ConfigFormat::kLlmFoundry);
  EXPECT_EQ(config_format_of(data("transformers_ds_config_zero3.json").string()), ConfigFormat::kDeepSpeed);
  // A scenario in JSON, a shipped name, a text-format scenario: not configs.
  const auto dir = testing::scratch("output_formats");
  const auto scenario = testing::config_file(dir, "s.json", "{\"model\": {\"catalog\": \"llama3-8b\"}}");
  EXPECT_EQ(config_format_of(scenario.string()), std::nullopt);
  EXPECT_EQ(config_format_of("llama3-8b-8xh100"), std::nullopt);
  EXPECT_EQ(config_format_of("scenarios/llama3-8b-8xh100.textproto"), std::nullopt);
}

}  // namespace
}  // namespace ragged::importers
