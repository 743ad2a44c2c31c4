// ragged compare refuses a predicted and a measured trace of different runs
// (traces::comparability), naming what differs; --force compares anyway with
// a warning; a prediction and the run of the same scenario compare.

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace ragged::cli {
namespace {

namespace fs = std::filesystem;
using testing::expect_one_line_error;
using testing::run_cli;

class CliCompare : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ragged_cli_compare_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(CliCompare, TracesOfDifferentRunsAreRefusedNamingTheDifference) {
  const std::string llama = path("llama.pb"), moe = path("moe.pb"), measured = path("measured.pb");
  ASSERT_EQ(run_cli({"simulate", "tiny-llama-4xcpu", "--gpus", "1", "--trace", llama}).code, 0);
  ASSERT_EQ(run_cli({"simulate", "tiny-moe-4xcpu", "--gpus", "1", "--trace", moe}).code, 0);
  auto ran = run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--steps", "1", "--trace", measured});
  ASSERT_EQ(ran.code, 0) << ran.err;

  // A prediction of another model against the llama run: refused, one line naming the differences.
  auto refused = run_cli({"compare", moe, measured});
  expect_one_line_error(refused, "the traces are of different runs: model tiny-moe vs tiny-llama; ");
  EXPECT_NE(refused.err.find("sequence length 64 vs 128"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  expect_one_line_error(run_cli({"compare", moe, measured, "--json"}), "model tiny-moe vs tiny-llama");

  // --force compares anyway, with a warning line.
  auto forced = run_cli({"compare", moe, measured, "--force", "--json"});
  ASSERT_EQ(forced.code, 0) << forced.err;
  EXPECT_EQ(forced.err.rfind("ragged: warning: the traces are of different runs: model tiny-moe vs tiny-llama", 0), 0u)
      << forced.err;
  EXPECT_FALSE(nlohmann::json::parse(forced.out)["different_runs"].empty());

  // The prediction of the same scenario compares, whatever device each ran on.
  auto same = run_cli({"compare", llama, measured, "--json"});
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_TRUE(same.err.empty()) << same.err;
  auto c = nlohmann::json::parse(same.out);
  EXPECT_TRUE(c["different_runs"].empty());
  EXPECT_GT(c["joined_ops"].get<int64_t>(), 50);
}

TEST_F(CliCompare, AnotherGpuCountOrStrategyIsRefused) {
  const std::string four = path("four.pb"), fsdp2 = path("fsdp2.pb"), measured = path("measured.pb");
  ASSERT_EQ(run_cli({"simulate", "tiny-llama-4xcpu", "--trace", four}).code, 0);
  ASSERT_EQ(run_cli({"simulate", "tiny-llama-4xcpu", "--gpus", "1", "--strategy", "fsdp2", "--trace", fsdp2}).code, 0);
  auto ran = run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--steps", "1", "--trace", measured});
  ASSERT_EQ(ran.code, 0) << ran.err;
  expect_one_line_error(run_cli({"compare", four, measured}), "the traces are of different runs: GPUs 4 vs 1");
  expect_one_line_error(run_cli({"compare", fsdp2, measured}), "the traces are of different runs: strategy fsdp2 vs ragged");
}

}  // namespace
}  // namespace ragged::cli
