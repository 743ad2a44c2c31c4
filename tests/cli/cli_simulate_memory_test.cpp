// The questions a planner types first (issue 51): `ragged simulate` takes
// --seq-len, --micro-batch and --checkpointing; a step out of memory leads
// the text report with by how much, what holds it and what would fit (each
// suggestion simulated); --fail-on-oom exits kExitOutOfMemory.

#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli/simulate_report.hpp"
#include "cli_test_util.hpp"

namespace ragged::cli {
namespace {

using testing::expect_one_line_error;
using testing::run_cli;

// Llama-3-70B on 64 H100s from --model: no activation checkpointing, out of memory.
const std::vector<std::string> kOutOfMemory = {"simulate", "--model", "llama3-70b", "--gpus", "64"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(CliSimulateMemory, BatchShapeFlagsChangeTheScenario) {
  const auto result = run_cli({"simulate", "--seq-len", "2Ki", "--micro-batch", "3", "--checkpointing", "FULL", "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const auto run = nlohmann::json::parse(result.out);
  EXPECT_EQ(run["sequence_length"], 2048);
  EXPECT_EQ(run["micro_batch_size"], 3);
  EXPECT_EQ(run["activation_checkpointing"], "full");
  EXPECT_EQ(run["tokens_per_step_per_gpu"], 3 * 2048 * run["gradient_accumulation_steps"].get<int>());

  const auto plain = nlohmann::json::parse(run_cli({"simulate", "--json"}).out);
  EXPECT_NE(plain["sequence_length"], 2048);
  EXPECT_NE(plain["activation_checkpointing"], "full");
}

TEST(CliSimulateMemory, PlanAndRunTakeTheSameFlags) {
  const auto plan = run_cli({"plan", "--model", "llama3-8b", "--gpus", "8", "--seq-len", "1024", "--micro-batch", "2",
                             "--checkpointing", "selective"});
  EXPECT_EQ(plan.code, 0) << plan.err;
  expect_one_line_error(run_cli({"run", "--checkpointing", "most"}), "--checkpointing");
}

TEST(CliSimulateMemory, BadValuesNameTheFlagAndTheFix) {
  expect_one_line_error(run_cli({"simulate", "--seq-len", "8x"}), "--seq-len: '8x' is not a sequence length: give");
  expect_one_line_error(run_cli({"simulate", "--seq-len", "1.5"}), "--seq-len: 1.5 is not a whole number of tokens");
  expect_one_line_error(run_cli({"simulate", "--seq-len", "1Gi"}), "--seq-len: 1Gi is out of range");
  expect_one_line_error(run_cli({"simulate", "--micro-batch", "0"}), "--micro-batch: 0 is out of range");
  expect_one_line_error(run_cli({"simulate", "--checkpointing", "fulll"}),
                        "--checkpointing: 'fulll' is not a checkpointing mode: give none, selective or full");
  expect_one_line_error(run_cli({"simulate", "--micro-batch", "65536"}), "lower --micro-batch");
  expect_one_line_error(run_cli({"simulate", "--micro-batch", "4096", "--seq-len", "1Mi"}),
                        "lower --micro-batch or --seq-len");
}

TEST(CliSimulateMemory, OutOfMemoryLeadsWithWhatWouldFit) {
  const auto result = run_cli(kOutOfMemory);
  ASSERT_EQ(result.code, 0) << result.err;
  std::istringstream lines(result.out);
  std::string first, second, third;
  std::getline(lines, first);
  std::getline(lines, second);
  std::getline(lines, third);
  EXPECT_EQ(first.rfind("OUT OF MEMORY", 0), 0u) << result.out;
  EXPECT_NE(first.find("more than the allocator's"), std::string::npos) << first;
  EXPECT_NE(second.find("did not fit        activations"), std::string::npos) << second;
  EXPECT_NE(third.find("would fit          --checkpointing"), std::string::npos) << third;
  // The throughput figures follow, marked as what the step would take.
  EXPECT_LT(result.out.find("would fit"), result.out.find("tokens/s per GPU   "));
  EXPECT_NE(result.out.find("(predicted as if it fit"), std::string::npos);
}

TEST(CliSimulateMemory, TheSuggestionFitsWhenTyped) {
  const auto result = run_cli(kOutOfMemory);
  const std::string marker = "would fit          ";
  const size_t at = result.out.find(marker);
  ASSERT_NE(at, std::string::npos) << result.out;
  const size_t begin = at + marker.size();
  std::istringstream flags(result.out.substr(begin, result.out.find(':', begin) - begin));
  std::vector<std::string> args = with(kOutOfMemory, {"--json"});
  for (std::string word; flags >> word;) args.push_back(word);
  const auto fixed = run_cli(args);
  ASSERT_EQ(fixed.code, 0) << fixed.err;
  EXPECT_FALSE(nlohmann::json::parse(fixed.out)["oom"].get<bool>()) << result.out;
}

TEST(CliSimulateMemory, FailOnOomExitsWithItsCode) {
  EXPECT_EQ(run_cli(with(kOutOfMemory, {"--fail-on-oom", "--json"})).code, kExitOutOfMemory);
  const auto text = run_cli(with(kOutOfMemory, {"--fail-on-oom"}));
  EXPECT_EQ(text.code, kExitOutOfMemory);
  EXPECT_EQ(text.out.rfind("OUT OF MEMORY", 0), 0u);  // the report first
  EXPECT_EQ(run_cli(with(kOutOfMemory, {"--fail-on-oom", "--checkpointing", "full"})).code, 0);
  EXPECT_EQ(run_cli({"simulate", "--fail-on-oom"}).code, 0);
  const auto help = run_cli({"simulate", "--help"});
  EXPECT_NE(help.out.find("Exit with code 5"), std::string::npos);
}

TEST(CliSimulateMemory, JsonKeepsItsShapeWhenOutOfMemory) {
  const auto result = run_cli(with(kOutOfMemory, {"--json"}));
  ASSERT_EQ(result.code, 0) << result.err;
  const auto run = nlohmann::json::parse(result.out);
  EXPECT_TRUE(run["oom"].get<bool>());
  EXPECT_EQ(run["activation_checkpointing"], "none");
}

}  // namespace
}  // namespace ragged::cli
