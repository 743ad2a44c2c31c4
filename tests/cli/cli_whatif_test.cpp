// ragged simulate --slow-gpus / --slow-links: one-line errors for bad values,
// full mode forced and said so, the what-if lines and their JSON twin.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace ragged::cli {
namespace {

using testing::CliResult;
using testing::expect_one_line_error;
using testing::run_cli;

TEST(CliWhatIf, BadValuesAreOneLineErrors) {
  expect_one_line_error(run_cli({"simulate", "--slow-gpus", "3"}), "--slow-gpus: '3' is not N:F");
  expect_one_line_error(run_cli({"simulate", "--slow-gpus", "0:0.5"}), "N: 0 is out of range: give a whole number from 1");
  expect_one_line_error(run_cli({"simulate", "--slow-gpus", "1:1.5"}), "F: 1.5 is out of range: give a number from 0.001 to 1");
  expect_one_line_error(run_cli({"simulate", "--slow-links", "1:x"}), "F: 'x' is not a number");
  expect_one_line_error(run_cli({"simulate", "--slow-links", "1:nan"}), "F: nan is out of range");
  // The default scenario has 8 GPUs on one node.
  expect_one_line_error(run_cli({"simulate", "--slow-gpus", "9:0.5"}), "--slow-gpus 9:0.5: 9 GPUs, but the cluster has 8");
  expect_one_line_error(run_cli({"simulate", "--slow-links", "2:0.5"}), "--slow-links 2:0.5: 2 nodes, but the cluster has 1");
}

TEST(CliWhatIf, SymmetricModeAskedForRunsFullAndSaysSo) {
  auto result = run_cli({"simulate", "llama3-8b-128xh100", "--gpus", "32", "--layers", "2", "--mode", "symmetric",
                         "--slow-gpus", "1:0.5", "--slow-links", "1:0.5"});
  ASSERT_EQ(result.code, 0) << result.err;
  for (const char* needle : {"full mode, 4 simulated nodes", "note               the what-if makes nodes differ",
                             "what-if            1 slow GPU at 50% of the compute rate", "1 node's NICs at 50% of their bandwidth",
                             "healthy cluster    step", "critical rank      rank", "it waited on", "the others"}) {
    EXPECT_NE(result.out.find(needle), std::string::npos) << needle << "\n" << result.out;
  }
}

TEST(CliWhatIf, JsonCarriesTheReport) {
  auto result = run_cli({"simulate", "llama3-8b-128xh100", "--gpus", "32", "--layers", "2", "--slow-gpus", "1:0.5", "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const auto run = nlohmann::json::parse(result.out);
  ASSERT_TRUE(run["whatif"].is_object()) << result.out;
  const auto& w = run["whatif"];
  EXPECT_EQ(w["ranks"].size(), 2u);
  EXPECT_EQ(w["critical"].get<int>(), 1);
  EXPECT_EQ(w["ranks"][1]["compute_rate"].get<double>(), 0.5);
  EXPECT_GT(run["step_time_s"].get<double>(), w["healthy_step_s"].get<double>());
  EXPECT_FALSE(run["forced_full"].get<bool>());
  // Without a what-if: no report, no second simulation.
  auto plain = nlohmann::json::parse(run_cli({"simulate", "tiny-llama-4xcpu", "--json"}).out);
  EXPECT_TRUE(plain["whatif"].is_null());
}

}  // namespace
}  // namespace ragged::cli
