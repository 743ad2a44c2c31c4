#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include <filesystem>
#include <regex>

#include <gtest/gtest.h>

#include "common/file_io.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::scenarios {
namespace {

using google::protobuf::util::MessageDifferencer;

TEST(ShippedScenarios, EveryRequiredScenarioIsShipped) {
  for (const char* name : {"llama3-8b-8xh100", "llama3-8b-128xh100", "llama3-70b-1024xh800", "gpt-oss-120b-256xh800",
                           "deepseek-v3-2048xh800", "llama3-70b-10240xh100", "tiny-llama-4xcpu"}) {
    EXPECT_NO_THROW(load_scenario(name)) << name;
  }
  EXPECT_NO_THROW(load_scenario(kDefaultScenario));
}

// Names are <model>-<gpus>x<gpu>: the GPU count in the name is the cluster's.
TEST(ShippedScenarios, NameMatchesClusterSize) {
  std::regex pattern(R"(^(.+)-(\d+)x([a-z0-9]+)$)");
  for (const EmbeddedFile& file : shipped_scenarios()) {
    std::string name(file.name);
    std::smatch match;
    ASSERT_TRUE(std::regex_match(name, match, pattern)) << name;
    LoadedScenario loaded = load_scenario(name);
    EXPECT_EQ(loaded.scenario.name(), name);
    EXPECT_EQ(total_gpus(loaded.scenario), std::stoll(match[2].str())) << name;
  }
}

TEST(ShippedScenarios, EmbeddedCopiesMatchTheRepositoryFiles) {
  for (const EmbeddedFile& file : shipped_scenarios()) {
    std::filesystem::path path = std::filesystem::path(RAGGED_SOURCE_DIR) / "scenarios" / (std::string(file.name) + ".textproto");
    EXPECT_EQ(read_file(path), file.contents) << path;
  }
}

TEST(ShippedScenarios, TextAndJsonRoundTrip) {
  for (const EmbeddedFile& file : shipped_scenarios()) {
    LoadedScenario loaded = load_scenario(file.name);
    std::string text = to_text(loaded.written);
    LoadedScenario from_text = parse_scenario(text, ScenarioFormat::kText, "round-trip", ".");
    EXPECT_TRUE(MessageDifferencer::Equals(from_text.scenario, loaded.scenario)) << file.name;

    std::string json;
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(loaded.written, &json, options).ok());
    LoadedScenario from_json = parse_scenario(json, ScenarioFormat::kJson, "round-trip.json", ".");
    EXPECT_TRUE(MessageDifferencer::Equals(from_json.scenario, loaded.scenario)) << file.name;
  }
}

TEST(ShippedScenarios, CalibrationScenariosMatchTorchTitanSetup) {
  for (const char* name : {"llama3-8b-8xh100", "llama3-8b-128xh100"}) {
    const Scenario s = load_scenario(name).scenario;
    EXPECT_EQ(s.model().catalog(), "llama3-8b");
    EXPECT_EQ(s.training().strategy(), FSDP2);
    EXPECT_EQ(s.training().sequence_length(), 8192);
    EXPECT_EQ(s.training().micro_batch_size(), 2);
    EXPECT_DOUBLE_EQ(s.cluster().gpu().hbm_capacity_gib(), 95.0);
  }
  EXPECT_EQ(global_batch_sequences(load_scenario("llama3-8b-128xh100").scenario), 256);
}

TEST(ShippedScenarios, LoadsFromFilePathToo) {
  std::filesystem::path path = std::filesystem::path(RAGGED_SOURCE_DIR) / "scenarios" / "tiny-llama-4xcpu.textproto";
  LoadedScenario loaded = load_scenario(path.string());
  EXPECT_EQ(loaded.origin, path.string());
  EXPECT_EQ(loaded.base_dir, path.parent_path());
  EXPECT_EQ(total_gpus(loaded.scenario), 4);
}

}  // namespace
}  // namespace ragged::scenarios
