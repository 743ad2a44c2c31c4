#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "common/version.hpp"
#include "models/catalog.hpp"
#include "scenarios/scenario_loader.hpp"

namespace ragged::cli {
namespace {

using testing::run_cli;

TEST(CliCommands, Version) {
  auto result = run_cli({"--version"});
  EXPECT_EQ(result.code, 0);
  EXPECT_NE(result.out.find(kVersion), std::string::npos);
}

TEST(CliCommands, HelpOnEverySubcommand) {
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"--help"}, {"models", "--help"}, {"inspect", "--help"}, {"scenario", "--help"},
           {"scenario", "validate", "--help"}, {"scenario", "list", "--help"}, {"scenario", "show", "--help"},
           {"plan", "--help"}, {"simulate", "--help"}, {"run", "--help"}, {"compare", "--help"}}) {
    auto result = run_cli(args);
    EXPECT_EQ(result.code, 0) << args.front();
    EXPECT_NE(result.out.find("Usage"), std::string::npos) << result.out;
  }
}

TEST(CliCommands, ModelsJsonListsCatalogWithParams) {
  auto result = run_cli({"models", "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  auto rows = nlohmann::json::parse(result.out);
  ASSERT_EQ(rows.size(), models::catalog().size());
  for (const auto& row : rows) {
    double params = row["params"].get<double>();
    double published = row["published_params"].get<double>();
    EXPECT_NEAR(params / published, 1.0, 0.005) << row["name"];
  }
}

TEST(CliCommands, ModelsTableHasEveryModel) {
  auto result = run_cli({"models"});
  ASSERT_EQ(result.code, 0);
  for (const auto& entry : models::catalog()) EXPECT_NE(result.out.find(entry.arch.name), std::string::npos);
}

TEST(CliCommands, InspectJsonHasEveryTensor) {
  auto result = run_cli({"inspect", "mixtral-8x7b", "--json", "--seq", "2048"});
  ASSERT_EQ(result.code, 0) << result.err;
  auto model = nlohmann::json::parse(result.out);
  int64_t tensors = 0, params = 0;
  for (const auto& unit : model["units"]) {
    for (const auto& t : unit["tensors"]) {
      ++tensors;
      params += t["params"].get<int64_t>();
    }
  }
  EXPECT_EQ(tensors, model["tensor_count"].get<int64_t>());
  EXPECT_EQ(params, model["params"].get<int64_t>());
  EXPECT_EQ(model["sequence_length"], 2048);
}

TEST(CliCommands, InspectReadsHfConfig) {
  auto result = run_cli({"inspect", std::string(RAGGED_SOURCE_DIR) + "/tests/models/data/qwen3/config.json"});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("qwen3"), std::string::npos);
}

// A checkpoint folder is a model too, named after the folder however the
// path is written (".", "./config.json" and the folder itself).
TEST(CliCommands, AConfigIsNamedAfterItsFolder) {
  const std::filesystem::path folder = std::string(RAGGED_SOURCE_DIR) + "/tests/models/data/gpt2-xl";
  const std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(folder);
  for (const char* model : {".", "./config.json"}) {
    const auto result = run_cli({"simulate", "--model", model, "--gpus", "8"});
    EXPECT_EQ(result.code, 0) << model << ": " << result.err;
    EXPECT_EQ(result.out.rfind("gpt2-xl-8xh100: gpt2-xl on 8 x h100", 0), 0u) << model << ": " << result.out;
    EXPECT_EQ(run_cli({"inspect", model}).out.rfind("gpt2-xl  (", 0), 0u) << model;
  }
  std::filesystem::current_path(previous);
  const auto whole = run_cli({"simulate", "--model", folder.string(), "--gpus", "8"});
  EXPECT_EQ(whole.out.rfind("gpt2-xl-8xh100: gpt2-xl on 8 x h100", 0), 0u) << whole.out << whole.err;
}

TEST(CliCommands, InspectReadsEveryGpt2StyleFixture) {
  for (const char* checkpoint : {"gpt2", "gpt2-xl", "gpt-neox-20b", "pythia-1.4b", "mpt-7b", "mpt-30b", "opt-350m",
                                 "opt-1.3b", "opt-30b", "falcon-7b", "falcon-40b", "bloom-176b"}) {
    const std::string path = std::string(RAGGED_SOURCE_DIR) + "/tests/models/data/" + checkpoint + "/config.json";
    auto result = run_cli({"inspect", path, "--tensors"});
    ASSERT_EQ(result.code, 0) << checkpoint << ": " << result.err;
    EXPECT_EQ(result.out.rfind(std::string(checkpoint) + "  (", 0), 0u) << result.out;
    EXPECT_NE(result.out.find("; LayerNorm"), std::string::npos) << result.out;
    // Identical blocks print as one row, whatever their checkpoint prefix (h.N., blocks.N.).
    EXPECT_NE(result.out.find("layers.0-"), std::string::npos) << result.out;
    auto json = run_cli({"inspect", path, "--json"});
    ASSERT_EQ(json.code, 0) << json.err;
    EXPECT_GT(nlohmann::json::parse(json.out)["model_flops_per_token"].get<double>(), 0) << checkpoint;
  }
}

TEST(CliCommands, ScenarioListAndShow) {
  auto list = run_cli({"scenario", "list", "--json"});
  ASSERT_EQ(list.code, 0);
  auto rows = nlohmann::json::parse(list.out);
  EXPECT_EQ(rows.size(), scenarios::shipped_scenarios().size());
  auto show = run_cli({"scenario", "show", "tiny-llama-4xcpu"});
  ASSERT_EQ(show.code, 0);
  EXPECT_NE(show.out.find("inline_spec"), std::string::npos);
}

TEST(CliCommands, ScenarioValidateJson) {
  auto result = run_cli({"scenario", "validate", "llama3-8b-128xh100", "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  auto v = nlohmann::json::parse(result.out);
  EXPECT_EQ(v["gpus"], 128);
  EXPECT_EQ(v["valid"], true);
}

}  // namespace
}  // namespace ragged::cli
