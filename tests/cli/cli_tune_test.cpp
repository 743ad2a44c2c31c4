// ragged tune end to end on the tuner's small scenario: the report, the
// JSON, the winner written as a scenario that `ragged simulate` reproduces,
// time to train and cost, the progress bar, and bad constraints (one line,
// exit 2).

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace ragged::cli {
namespace {

namespace fs = std::filesystem;
using testing::run_binary;
using testing::run_cli;

const std::string kScenario = std::string(RAGGED_SOURCE_DIR) + "/tests/tune/data/tiny-llama-8xsmall.textproto";

// The common arguments: a small space (96 candidates), no cache.
std::vector<std::string> tune_args(std::vector<std::string> more) {
  std::vector<std::string> args = {"tune", kScenario, "--strategies", "ragged,fsdp2", "--no-cache", "--jobs", "2"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

class CliTune : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ragged_cli_tune_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CliTune, ReportRanksFrontAndWinner) {
  const auto result = run_cli(tune_args({"--top", "3"}));
  ASSERT_EQ(result.code, 0) << result.err;
  for (const char* needle : {"96 candidates", "pruned before simulation", "ranking (predicted", "3 of", "Pareto front",
                             "best: ", "tokens/s per GPU", "free GiB"}) {
    EXPECT_NE(result.out.find(needle), std::string::npos) << needle << "\n" << result.out;
  }
}

// The winner's file simulates to the figures the search ranked it by.
TEST_F(CliTune, WrittenWinnerIsWhatSimulateReproduces) {
  const std::string best = (dir_ / "best.textproto").string();
  const auto tuned = run_cli(tune_args({"--json", "--write", best}));
  ASSERT_EQ(tuned.code, 0) << tuned.err;
  const nlohmann::json search = nlohmann::json::parse(tuned.out);
  ASSERT_FALSE(search["best"].is_null());
  const nlohmann::json& winner = search["candidates"][search["best"]["index"].get<size_t>()];
  const auto simulated = run_cli({"simulate", best, "--json"});
  ASSERT_EQ(simulated.code, 0) << simulated.err;
  const nlohmann::json s = nlohmann::json::parse(simulated.out);
  EXPECT_EQ(s["tokens_per_s_per_gpu"].get<double>(), winner["evaluation"]["tokens_per_s_per_gpu"].get<double>());
  EXPECT_EQ(s["step_time_s"].get<double>(), winner["evaluation"]["step_time_s"].get<double>());
  EXPECT_EQ(s["peak_memory_bytes"].get<int64_t>(), winner["evaluation"]["peak_reserved_bytes"].get<int64_t>());
  EXPECT_EQ(s["strategy"], winner["configuration"]["strategy"]);
  EXPECT_TRUE(winner["evaluation"]["fits"].get<bool>());
  // Every fitting candidate of the JSON is at most as fast as the winner.
  for (const auto& c : search["candidates"]) {
    if (c["evaluation"]["fits"].get<bool>()) {
      EXPECT_LE(c["evaluation"]["tokens_per_s_per_gpu"].get<double>(), s["tokens_per_s_per_gpu"].get<double>());
    }
  }
}

TEST_F(CliTune, TimeToTrainAndCost) {
  const auto result = run_cli(tune_args({"--json", "--train-tokens", "15T", "--gpu-hour-price", "2.5"}));
  ASSERT_EQ(result.code, 0) << result.err;
  const nlohmann::json search = nlohmann::json::parse(result.out);
  const double rate = search["candidates"][search["best"]["index"].get<size_t>()]["evaluation"]["tokens_per_s_per_gpu"];
  const nlohmann::json& training = search["training"];
  EXPECT_DOUBLE_EQ(training["tokens"].get<double>(), 15e12);
  EXPECT_NEAR(training["seconds"].get<double>(), 15e12 / (rate * 8), 1e-6 * training["seconds"].get<double>());
  EXPECT_NEAR(training["cost"].get<double>(), training["gpu_hours"].get<double>() * 2.5, 1e-6);
  const auto text = run_cli(tune_args({"--train-tokens", "15T", "--gpu-hour-price", "2.5"}));
  EXPECT_NE(text.out.find("time to train: 15.00T tokens in"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("at 2.5 per GPU-hour"), std::string::npos) << text.out;
}

TEST_F(CliTune, BestPerGpuCount) {
  const auto result = run_cli(tune_args({"--gpus", "4,8,12", "--checkpointing", "full"}));
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("the best configuration per GPU count"), std::string::npos) << result.out;
  for (const char* gpus : {"\n     4 ", "\n     8 ", "\n    12 "}) {
    EXPECT_NE(result.out.find(gpus), std::string::npos) << gpus << "\n" << result.out;
  }
}

TEST_F(CliTune, MinGpusNamesTheCountAndSearchesThere) {
  const auto result = run_cli(tune_args({"--min-gpus", "--gpus", "8", "--checkpointing", "full", "--json"}));
  ASSERT_EQ(result.code, 0) << result.err;
  const nlohmann::json out = nlohmann::json::parse(result.out);
  ASSERT_FALSE(out["min_gpus"].is_null());
  const int64_t gpus = out["min_gpus"];
  EXPECT_EQ(gpus % 4, 0);  // whole nodes of 4
  EXPECT_EQ(out["search"]["gpus"], gpus);
  EXPECT_FALSE(out["search"]["best"].is_null());
  bool probed = false;
  for (const auto& probe : out["probes"]) probed |= probe["gpus"] == gpus && probe["fits"].get<bool>();
  EXPECT_TRUE(probed);
  const auto text = run_cli(tune_args({"--min-gpus", "--gpus", "8", "--checkpointing", "full"}));
  EXPECT_EQ(text.out.rfind("fewest GPUs: ", 0), 0u) << text.out;
}

TEST_F(CliTune, ProgressBarWithTimeLeftOnStderr) {
  ::setenv("RAGGED_PROGRESS", "1", 1);  // stderr is a file here: force the bar
  const auto result = run_binary("tune " + kScenario + " --strategies fsdp2 --checkpointing full --no-cache --jobs 1");
  ::unsetenv("RAGGED_PROGRESS");
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.err.find("ragged tune ["), std::string::npos) << result.err;
  EXPECT_NE(result.err.find(" left"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("candidates on 8 GPUs"), std::string::npos) << result.err;
}

// Each is one line on stderr, "ragged: error: ...", and exit code 2.
TEST_F(CliTune, BadConstraintsAreOneLineAndExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--headroom", "100"}, "below 100%"},
      {{"--headroom", "-5"}, "at least 0%"},
      {{"--global-batch-tokens", "3072"}, "does not divide over 8 GPUs"},
      {{"--global-batch-tokens", "1000"}, "not a whole number of 1024-token sequences"},
      {{"--micro-batches", "3"}, "no micro-batch divides"},
      {{"--strategies", ""}, "allow at least one strategy"},
      {{"--strategies", "fsdp3"}, "fsdp3"},
      {{"--shard-groups", "3"}, "divides the 8 GPUs"},
      {{"--gpu-hour-price", "2"}, "needs --train-tokens"},
      {{"--train-tokens", "lots"}, "positive token count"},
      {{"--gpus", "4,8", "--write", "x.textproto"}, "one GPU count"},
  };
  for (const auto& [args, needle] : cases) {
    const auto result = run_cli(tune_args(args));
    EXPECT_EQ(result.code, 2) << args.front() << ": " << result.err;
    EXPECT_EQ(result.err.rfind("ragged: error: ", 0), 0u) << result.err;
    EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;  // one line
    EXPECT_NE(result.err.find(needle), std::string::npos) << needle << " in " << result.err;
    EXPECT_TRUE(result.out.empty()) << result.out;
  }
}

}  // namespace
}  // namespace ragged::cli
