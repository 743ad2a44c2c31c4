// ragged tune end to end on the tuner's small scenario: the report, the
// JSON, the winner written as a scenario that `ragged simulate` reproduces,
// time to train and cost, the progress bar, ranking by goodput, --model with
// cluster options, and bad constraints (one line, exit 2).

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace ragged::cli {
namespace {

namespace fs = std::filesystem;
using testing::expect_one_line_error;
using testing::run_binary;
using testing::run_cli;

const std::string kScenario = std::string(RAGGED_SOURCE_DIR) + "/tests/tune/data/tiny-llama-8xsmall.textproto";

// The common arguments: a small space (96 candidates), no cache.
std::vector<std::string> tune_args(std::vector<std::string> more) {
  // FSDP alone unless the test asks for meshes: 96 candidates.
  std::vector<std::string> args = {"tune", kScenario, "--strategies", "ragged,fsdp2", "--no-cache", "--jobs", "2"};
  if (std::find(more.begin(), more.end(), "--tps") == more.end()) args.insert(args.end(), {"--tps", "1"});
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

// A list value past its range is refused, not wrapped to a small one; one
// listed twice is searched once, with a note.
TEST_F(CliTune, ListValuesAreCheckedAndFoldedNotWrapped) {
  const auto wrapped = run_cli(tune_args({"--prefetch", "4294967297"}));
  EXPECT_EQ(wrapped.code, 2);
  EXPECT_NE(wrapped.err.find("--prefetch: 4294967297 is over 16, the largest prefetch depth"), std::string::npos)
      << wrapped.err;
  const auto repeated = run_cli(tune_args({"--prefetch", "1,2,1,1,2"}));
  ASSERT_EQ(repeated.code, 0) << repeated.err;
  EXPECT_NE(repeated.err.find("--prefetch lists 1, 2 more than once; each is tried once"), std::string::npos)
      << repeated.err;
  EXPECT_NE(repeated.out.find("96 candidates"), std::string::npos) << repeated.out;  // as with 1,2
  // Too large is too large, not "at least one token" (1e30 wrapped negative).
  const auto huge = run_cli(tune_args({"--global-batch-tokens", "1e30"}));
  EXPECT_EQ(huge.code, 2);
  EXPECT_NE(huge.err.find("--global-batch-tokens 1e+30: too large"), std::string::npos) << huge.err;
}

// The note names a few repeated values, not all: 3,000 values each given
// twice made a 17,000-character line. simulate --sweep folds its list with
// the same note (it folded silently).
TEST_F(CliTune, ARepeatedListIsOneShortNote) {
  std::string prefetch;
  for (int depth = 0; depth <= 16; ++depth) prefetch += fmt::format("{}{},{}", depth == 0 ? "" : ",", depth, depth);
  const auto tuned = run_cli(tune_args({"--prefetch", prefetch, "--micro-batches", "1", "--top", "1"}));
  ASSERT_EQ(tuned.code, 0) << tuned.err;
  EXPECT_NE(tuned.err.find("ragged: note: --prefetch lists 17 values (0, 1, 2, 3, 4, 5, 6, 7, ...) more than "
                           "once; each is tried once\n"),
            std::string::npos)
      << tuned.err;
  const auto swept = run_cli({"simulate", "tiny-llama-4xcpu", "--sweep", "gpus=4,4,8,4"});
  ASSERT_EQ(swept.code, 0) << swept.err;
  EXPECT_EQ(swept.err, "ragged: note: --sweep lists 4 more than once; each is tried once\n");
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

// Interruptions often and storage slow enough that goodput is far from 100%.
const std::vector<std::string> kHarshGoodput = {
    "--interruptions-per-gpu-hour",     "0.2",  "--restart-minutes", "1", "--storage-gbytes-per-s-per-node", "0.01",
    "--storage-aggregate-tbytes-per-s", "0.001"};

std::vector<std::string> with_harsh_goodput(std::vector<std::string> more) {
  more.insert(more.end(), kHarshGoodput.begin(), kHarshGoodput.end());
  return tune_args(more);
}

// The winner's goodput is what `ragged simulate <winner> --goodput` says,
// and no fitting candidate has a higher effective rate.
TEST_F(CliTune, RankByGoodputMatchesSimulateGoodput) {
  const std::string best = (dir_ / "best.textproto").string();
  const auto tuned = run_cli(with_harsh_goodput({"--rank-by", "goodput", "--json", "--write", best}));
  ASSERT_EQ(tuned.code, 0) << tuned.err;
  const nlohmann::json search = nlohmann::json::parse(tuned.out);
  EXPECT_EQ(search["rank_by"], "goodput");
  ASSERT_FALSE(search["best"].is_null());
  const nlohmann::json& winner = search["candidates"][search["best"]["index"].get<size_t>()];
  const auto simulated = run_cli({"simulate", best, "--goodput", "--json"});
  ASSERT_EQ(simulated.code, 0) << simulated.err;
  const nlohmann::json expected = nlohmann::json::parse(simulated.out)["goodput"];
  const nlohmann::json& got = winner["goodput"];
  for (const char* key :
       {"goodput", "effective_tokens_per_s_per_gpu", "tokens_per_s_per_gpu", "job_mtbf_s", "checkpoint_bytes_per_gpu",
        "checkpoint_write_s", "checkpoint_load_s", "restart_s", "interval_s", "interval_steps", "daly_interval_s"}) {
    const double a = got[key].get<double>(), b = expected[key].get<double>();
    std::printf("%s: tune %.12g, simulate --goodput %.12g\n", key, a, b);
    EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::abs(b))) << key;
  }
  EXPECT_LT(got["goodput"].get<double>(), 0.99);  // not vacuous: goodput matters here
  for (const auto& c : search["candidates"]) {
    if (!c["evaluation"]["fits"].get<bool>()) {
      EXPECT_FALSE(c.contains("goodput"));
      continue;
    }
    EXPECT_LE(c["goodput"]["effective_tokens_per_s_per_gpu"].get<double>(),
              got["effective_tokens_per_s_per_gpu"].get<double>());
  }
}

TEST_F(CliTune, RankByGoodputReportAndTimeToTrain) {
  // A goodput setting alone ranks by goodput.
  const auto text = run_cli(with_harsh_goodput({"--top", "3", "--train-tokens", "1B"}));
  ASSERT_EQ(text.code, 0) << text.err;
  for (const char* needle :
       {"by effective = tokens/s/GPU x goodput", "goodput  effective", "effective tokens/s/GPU", "effective at",
        "best on 8 GPUs: goodput under interruptions", "of the wall time trains"}) {
    EXPECT_NE(text.out.find(needle), std::string::npos) << needle << "\n" << text.out;
  }
  const auto json = run_cli(with_harsh_goodput({"--json", "--train-tokens", "1B"}));
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json search = nlohmann::json::parse(json.out);
  const double effective =
      search["candidates"][search["best"]["index"].get<size_t>()]["goodput"]["effective_tokens_per_s_per_gpu"];
  EXPECT_NEAR(search["training"]["seconds"].get<double>(), 1e9 / (effective * 8), 1e-9 * 1e9 / (effective * 8));

  const auto counts = run_cli(with_harsh_goodput({"--gpus", "4,8", "--checkpointing", "full"}));
  ASSERT_EQ(counts.code, 0) << counts.err;
  EXPECT_NE(counts.out.find("by effective tokens/s/GPU under 0.2 interruptions per GPU-hour"), std::string::npos)
      << counts.out;
  EXPECT_NE(counts.out.find("goodput  effective"), std::string::npos) << counts.out;
}

// --model with cluster options: a cluster of A100 nodes, named after them.
TEST_F(CliTune, ModelOnAnotherGpuAndNodeSize) {
  const auto result = run_cli({"tune", "--model", "llama3-8b", "--gpu", "a100-80g", "--gpus", "16", "--strategies",
                               "fsdp2", "--checkpointing", "full", "--reshard", "true", "--prefetch", "1", "--no-cache",
                               "--jobs", "2", "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const nlohmann::json search = nlohmann::json::parse(result.out);
  EXPECT_EQ(search["scenario"], "llama3-8b-16xa100-80g");
  EXPECT_EQ(search["gpus"], 16);
  EXPECT_FALSE(search["best"].is_null());

  // Counts step on --gpus-per-node: 4,12 are whole nodes of 4, not of 8.
  const auto listed = run_cli({"tune",  "--model",         "llama3-8b", "--gpu",     "a100-80g", "--gpus-per-node",
                               "4",     "--gpus",          "4,12",      "--layers",  "2",        "--strategies",
                               "fsdp2", "--checkpointing", "full",      "--reshard", "true",     "--prefetch",
                               "1",     "--no-cache",      "--jobs",    "2",         "--json"});
  ASSERT_EQ(listed.code, 0) << listed.err;
  const nlohmann::json rows = nlohmann::json::parse(listed.out)["gpu_counts"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["search"]["scenario"], "llama3-8b-4xa100-80g");
  EXPECT_EQ(rows[1]["gpus"], 12);
  EXPECT_FALSE(rows[1]["search"]["best"].is_null());
  expect_one_line_error(run_cli({"tune", "--model", "llama3-8b", "--gpus", "8,12"}),
                        "--gpus 12: not a whole number of nodes of --gpus-per-node 8");

  // --min-gpus tries whole nodes of 2.
  const auto smallest =
      run_cli({"tune", "--model", "llama3-8b", "--gpus-per-node", "2", "--min-gpus", "--gpus", "8", "--strategies",
               "fsdp2", "--checkpointing", "full", "--no-cache", "--jobs", "2", "--json"});
  ASSERT_EQ(smallest.code, 0) << smallest.err;
  const nlohmann::json found = nlohmann::json::parse(smallest.out);
  ASSERT_FALSE(found["min_gpus"].is_null());
  for (const auto& probe : found["probes"]) EXPECT_EQ(probe["gpus"].get<int64_t>() % 2, 0);
  EXPECT_EQ(found["min_gpus"].get<int64_t>() % 2, 0);
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
// `ragged tune ARGS --json --write WRITTEN`, then `ragged simulate` on what
// it wrote: the ranked candidates' configurations and the written text
// (empty where a step failed, with the failure reported).
struct WrittenTune {
  std::vector<nlohmann::json> ranked;
  std::string text;
};
WrittenTune tune_and_write(std::vector<std::string> args, const fs::path& written) {
  args.insert(args.end(), {"--json", "--write", written.string()});
  const auto result = run_cli(args);
  EXPECT_EQ(result.code, 0) << result.err;
  if (result.code != 0) return {};
  WrittenTune out;
  const nlohmann::json j = nlohmann::json::parse(result.out);
  for (const nlohmann::json& i : j.at("ranking")) {
    out.ranked.push_back(j.at("candidates").at(i.get<size_t>()).at("configuration"));
  }
  const auto simulated = run_cli({"simulate", written.string(), "--json"});
  EXPECT_EQ(simulated.code, 0) << simulated.err;
  std::ifstream in(written);
  out.text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return out;
}

// A mixture of experts under ep: the ranking names the experts' own recompute
// where a candidate chooses it, the JSON says it, and the written winner
// carries it into the scenario `ragged simulate` reads.
TEST_F(CliTune, TheExpertsOwnRecomputeIsRankedReportedAndWritten) {
  const fs::path written = dir_ / "moe-tuned.textproto";
  const std::vector<std::string> common = {
      "tune", "tiny-moe-4xcpu",  "--strategies", "fsdp2",      "--tps",  "1", "--pps", "1", "--eps",
      "2",    "--checkpointing", "selective",    "--no-cache", "--jobs", "1"};
  std::vector<std::string> args = common;
  args.insert(args.end(), {"--experts-checkpointing", "full"});
  const WrittenTune tuned = tune_and_write(args, written);
  ASSERT_FALSE(tuned.ranked.empty());
  for (const nlohmann::json& configuration : tuned.ranked) {
    EXPECT_EQ(configuration.at("experts_checkpointing"), "full") << configuration.dump();
  }
  EXPECT_NE(tuned.text.find("checkpointing: FULL"), std::string::npos) << tuned.text;

  args = common;
  args.insert(args.end(), {"--top", "20"});
  const auto both = run_cli(args);
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_NE(both.out.find("selective + experts"), std::string::npos) << both.out;
}

// Megatron-Core's overlapped expert all-to-alls: the ranking names them where
// a candidate runs them, the JSON says so, and the written winner carries them.
TEST_F(CliTune, TheOverlappedAllToAllsAreRankedReportedAndWritten) {
  const fs::path written = dir_ / "moe-overlap-tuned.textproto";
  const std::vector<std::string> common = {"tune",
                                           "tiny-moe-4xcpu",
                                           "--strategies",
                                           "megatron-ddp",
                                           "--tps",
                                           "1",
                                           "--pps",
                                           "1",
                                           "--eps",
                                           "2",
                                           "--checkpointing",
                                           "selective",
                                           "--experts-checkpointing",
                                           "block",
                                           "--global-batch-tokens",
                                           "1024",
                                           "--no-cache",
                                           "--jobs",
                                           "1"};
  std::vector<std::string> args = common;
  args.insert(args.end(), {"--experts-overlap", "true"});
  const WrittenTune tuned = tune_and_write(args, written);
  ASSERT_FALSE(tuned.ranked.empty());
  for (const nlohmann::json& configuration : tuned.ranked) {
    EXPECT_TRUE(configuration.at("expert_all_to_all_overlap").get<bool>()) << configuration.dump();
  }
  EXPECT_NE(tuned.text.find("overlap_all_to_all: true"), std::string::npos) << tuned.text;

  args = common;
  args.insert(args.end(), {"--top", "40"});
  const auto both = run_cli(args);
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_NE(both.out.find("ep 2 (all-to-alls overlapped)"), std::string::npos) << both.out;
  EXPECT_NE(both.out.find("ep 2  "), std::string::npos) << "and the same without: " << both.out;
}

TEST_F(CliTune, BadConstraintsAreOneLineAndExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--headroom", "100"}, "below 100%"},
      {{"--headroom", "-5"}, "at least 0%"},
      {{"--global-batch-tokens", "3072"}, "3 sequences over 8 data-parallel ranks"},
      {{"--tps", "3"}, "no tp of 3 can split tiny-llama"},
      {{"--global-batch-tokens", "1000"}, "not a whole number of 1024-token sequences"},
      {{"--micro-batches", "3"}, "no micro-batch divides"},
      {{"--strategies", ""}, "allow at least one strategy"},
      {{"--strategies", "fsdp3"}, "fsdp3"},
      {{"--shard-groups", "3"}, "no shard group of --shard-groups 3 divides the 8 ranks"},
      {{"--gpu-hour-price", "2"}, "needs --train-tokens"},
      {{"--train-tokens", "lots"}, "positive token count"},
      {{"--gpus", "4,8", "--write", "x.textproto"}, "one GPU count"},
      {{"--gpus", "4,6"}, "--gpus 6: not a whole number of nodes of --gpus-per-node 4"},
      {{"--rank-by", "speed"}, "--rank-by"},
      {{"--rank-by", "throughput", "--restart-minutes", "5"}, "drop them or --rank-by throughput"},
      {{"--interruptions-per-gpu-hour", "2"}, "--interruptions-per-gpu-hour: 2 is out of range"},
      {{"--experts-checkpointing", "selective"}, "--experts-checkpointing 'selective': use block, full"},
      {{"--experts-overlap", "maybe"}, "--experts-overlap 'maybe': use true, false"},
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
