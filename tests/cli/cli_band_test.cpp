// ragged simulate's prediction band (JSON ranges, text) and --sensitivity;
// ragged tune's band column.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace ragged::cli {
namespace {

using testing::run_cli;

const std::string kYafsdp =
    std::string(RAGGED_SOURCE_DIR) + "/validation/scenarios/yafsdp-fsdp1-a100-llama2-7b-s2048-64g.textproto";

TEST(CliBand, JsonHasRangesAroundThePrediction) {
  auto result = run_cli({"simulate", kYafsdp, "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const auto j = nlohmann::json::parse(result.out);
  const double tokens = j["tokens_per_s_per_gpu"].get<double>();
  const auto range = j["tokens_per_s_per_gpu_range"];
  ASSERT_EQ(range.size(), 2u);
  EXPECT_LT(range[0].get<double>(), tokens);
  EXPECT_GT(range[1].get<double>(), tokens);
  const auto memory = j["peak_memory_bytes_range"];
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_LE(memory[0].get<int64_t>(), j["peak_memory_bytes"].get<int64_t>());
  EXPECT_GE(memory[1].get<int64_t>(), j["peak_memory_bytes"].get<int64_t>());
  const auto& band = j["band"]["throughput"];
  EXPECT_GE(band["rows"].get<int>(), 20);
  EXPECT_EQ(band["row_ids"].size(), band["rows"].get<size_t>());
  EXPECT_DOUBLE_EQ(band["share"].get<double>(), 0.8);
  // The shipped table's throughput level held 80% of each held-out stack's rows.
  EXPECT_TRUE(band["calibrated"].get<bool>());
  EXPECT_GE(band["regime_share"].get<double>(), 0.8);
  EXPECT_EQ(j["band"]["regime"]["gpu_generation"], "ampere");
  EXPECT_FALSE(j.contains("sensitivity"));
}

TEST(CliBand, TextStatesTheShareAndTheRows) {
  auto result = run_cli({"simulate", kYafsdp});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("comparable validation rows"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("tokens/s band"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("memory band"), std::string::npos) << result.out;
}

TEST(CliBand, SensitivityListsInputsSortedWithBothEnds) {
  auto result = run_cli({"simulate", kYafsdp, "--sensitivity", "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const auto rows = nlohmann::json::parse(result.out)["sensitivity"];
  ASSERT_GE(rows.size(), 5u);
  EXPECT_EQ(rows[0]["field"].get<std::string>().rfind("cluster.nics.", 0), 0u) << rows[0];
  auto effect = [](const nlohmann::json& r) {
    return std::make_pair(r["tokens_effect"].get<double>(), r["memory_effect"].get<double>());
  };
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(effect(rows[i - 1]), effect(rows[i])) << i;
  for (const auto& r : rows) {
    EXPECT_TRUE(r["low_end"].contains("tokens_per_s_per_gpu")) << r;
    EXPECT_TRUE(r["high_end"].contains("tokens_per_s_per_gpu")) << r;
  }
}

}  // namespace
}  // namespace ragged::cli
