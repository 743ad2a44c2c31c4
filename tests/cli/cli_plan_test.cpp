#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace ragged::cli {
namespace {

using testing::run_cli;

TEST(CliPlan, DefaultScenarioPrintsUnitsTotalsAndMemory) {
  auto result = run_cli({"plan"});
  ASSERT_EQ(result.code, 0) << result.err;
  for (const char* needle : {"llama3-8b on 8 GPUs", "layers.0-31", "total", "gap to the lower bound", "memory per rank"}) {
    EXPECT_NE(result.out.find(needle), std::string::npos) << needle << "\n" << result.out;
  }
}

// A sharding strategy holds a shard of the compute-dtype parameters; the
// data-parallel ones the whole copy, and the memory line says which.
TEST(CliPlan, MemoryLineNamesAShardOrTheWholeComputeCopy) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"fsdp2", "compute shard"}, {"ddp", "compute params"}, {"megatron-ddp", "compute params"}};
  for (const auto& [strategy, label] : cases) {
    auto result = run_cli({"plan", "tiny-llama-4xcpu", "--strategy", strategy});
    ASSERT_EQ(result.code, 0) << strategy << ": " << result.err;
    EXPECT_NE(result.out.find(" + " + label + " "), std::string::npos)
        << strategy << "\n" << result.out;
  }
}

TEST(CliPlan, JsonHasTheDocumentedKeys) {
  auto result = run_cli({"plan", "--model", "llama3-70b", "--gpus", "64", "--strategy", "ragged", "--granularity", "rows:16", "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  auto plan = nlohmann::json::parse(result.out);
  for (const char* key : {"strategy", "gpus", "params", "padded_params", "padding_ratio", "lower_bound_padding_ratio",
                          "plan_seconds", "units", "memory_bytes", "bytes_per_step"}) {
    EXPECT_TRUE(plan.contains(key)) << key;
  }
  EXPECT_EQ(plan["strategy"], "ragged");
  EXPECT_EQ(plan["gpus"], 64);
  EXPECT_EQ(plan["units"].size(), 82u);
  EXPECT_GE(plan["padded_params"].get<int64_t>(), plan["params"].get<int64_t>());
  EXPECT_GE(plan["padding_ratio"].get<double>(), plan["lower_bound_padding_ratio"].get<double>());
}

TEST(CliPlan, AllStrategiesSideBySide) {
  auto json = run_cli({"plan", "tiny-llama-4xcpu", "--strategy", "all", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  auto plans = nlohmann::json::parse(json.out);
  ASSERT_EQ(plans.size(), 6u);
  std::vector<std::string> names;
  for (const auto& p : plans) names.push_back(p["strategy"]);
  EXPECT_EQ(names, (std::vector<std::string>{"ragged", "vescale-paper", "fsdp1", "fsdp2", "zero3", "megatron"}));
  auto table = run_cli({"plan", "tiny-llama-4xcpu", "--strategy", "all"});
  ASSERT_EQ(table.code, 0);
  EXPECT_NE(table.out.find("vescale-paper"), std::string::npos);
}

TEST(CliPlan, GpusOverrideRescalesTheShardGroup) {
  auto result = run_cli({"plan", "llama3-8b-8xh100", "--gpus", "32", "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(nlohmann::json::parse(result.out)["shard_group_size"], 32);
}

TEST(CliPlan, LargeUnavoidablePaddingSuggestsHsdp) {
  auto result = run_cli({"plan", "--model", "llama3-8b", "--gpus", "1024", "--granularity", "rows:128"});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("unavoidable at 1024 ranks"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("smaller shard groups"), std::string::npos) << result.out;
}

TEST(CliPlan, BadInputExitsTwo) {
  EXPECT_EQ(run_cli({"plan", "--model", "llama3-8b"}).code, 2);                           // no --gpus
  EXPECT_EQ(run_cli({"plan", "--model", "llama3-8b", "--gpus", "12"}).code, 2);            // not a multiple of 8
  EXPECT_EQ(run_cli({"plan", "--strategy", "fsdp3"}).code, 2);
  EXPECT_EQ(run_cli({"plan", "--granularity", "rows:0"}).code, 2);
  EXPECT_EQ(run_cli({"plan", "llama3-8b-8xh100", "--model", "llama3-8b", "--gpus", "8"}).code, 2);
  auto error = run_cli({"plan", "--granularity", "blocks:4"});
  EXPECT_NE(error.err.find("element, rows:K, block:RxC or matrix"), std::string::npos) << error.err;
}

// --layers keeps the first blocks of the model, for scaled-down runs.
TEST(CliPlan, LayersScalesTheModelDown) {
  auto two = run_cli({"plan", "--model", "llama3-8b", "--gpus", "8", "--layers", "2"});
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_NE(two.out.find("llama3-8b-2l on 8 GPUs"), std::string::npos) << two.out;
  auto too_many = run_cli({"plan", "--model", "llama3-8b", "--gpus", "8", "--layers", "33"});
  EXPECT_EQ(too_many.code, 2);
  EXPECT_NE(too_many.err.find("model.layers: llama3-8b has 32 layers"), std::string::npos) << too_many.err;
  EXPECT_EQ(run_cli({"plan", "--model", "llama3-8b", "--gpus", "8", "--layers", "0"}).code, 2);
}

}  // namespace
}  // namespace ragged::cli
