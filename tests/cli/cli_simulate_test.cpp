#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "common/file_io.hpp"
#include "traces/trace_io.hpp"

namespace ragged::cli {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

TEST(CliSimulate, DefaultScenarioSummary) {
  auto result = run_cli({"simulate"});
  ASSERT_EQ(result.code, 0) << result.err;
  for (const char* needle : {"llama3-8b-8xh100", "step time", "tokens/s per GPU", "MFU", "exposed comm", "peak memory",
                             "layers (mean of 32)"}) {
    EXPECT_NE(result.out.find(needle), std::string::npos) << needle << "\n" << result.out;
  }
}

// A smoke check of the GPT-2 style families end to end: every layout strategy
// plans their fused q/k/v, position tables and biases, and the step simulates.
TEST(CliSimulate, Gpt2StyleModelsFromTheirConfigJson) {
  for (const char* checkpoint : {"falcon-7b", "opt-350m", "bloom-176b"}) {
    const std::string path = std::string(RAGGED_SOURCE_DIR) + "/tests/models/data/" + checkpoint + "/config.json";
    auto result = run_cli({"simulate", "--model", path, "--gpus", "16", "--layers", "2", "--strategy", "all", "--json"});
    ASSERT_EQ(result.code, 0) << checkpoint << ": " << result.err;
    for (const auto& run : nlohmann::json::parse(result.out)) {
      EXPECT_GT(run["step_time_s"].get<double>(), 0) << checkpoint << " " << run["strategy"];
      EXPECT_GT(run["mfu"].get<double>(), 0) << checkpoint << " " << run["strategy"];
      EXPECT_LT(run["mfu"].get<double>(), 1) << checkpoint << " " << run["strategy"];
    }
  }
}

TEST(CliSimulate, JsonHasTheDocumentedKeysPerStrategy) {
  auto result = run_cli({"simulate", "tiny-llama-4xcpu", "--strategy", "all", "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  auto runs = nlohmann::json::parse(result.out);
  ASSERT_EQ(runs.size(), 6u);
  for (const auto& run : runs) {
    for (const char* key : {"strategy", "step_time_s", "tokens_per_s_per_gpu", "mfu", "peak_memory_bytes", "oom",
                            "exposed_comm_s"}) {
      EXPECT_TRUE(run.contains(key)) << key;
    }
    EXPECT_GT(run["step_time_s"].get<double>(), 0);
    EXPECT_GT(run["tokens_per_s_per_gpu"].get<double>(), 0);
    EXPECT_FALSE(run["oom"].get<bool>());
  }
}

TEST(CliSimulate, SweepTabulatesEveryGpuCount) {
  auto result = run_cli({"simulate", "llama3-8b-128xh100", "--sweep", "gpus=8,64,256", "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  auto runs = nlohmann::json::parse(result.out);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0]["gpus"], 8);
  EXPECT_EQ(runs[2]["gpus"], 256);
  auto table = run_cli({"simulate", "llama3-8b-128xh100", "--sweep", "gpus=8,64"});
  EXPECT_NE(table.out.find("scaling"), std::string::npos) << table.out;
}

TEST(CliSimulate, WritesTraceAndChromeTrace) {
  fs::path dir = fs::temp_directory_path() / ("ragged_cli_sim_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto result = run_cli({"simulate", "tiny-llama-4xcpu", "--trace", (dir / "t.pb").string(), "--chrome-trace",
                         (dir / "t.json").string()});
  ASSERT_EQ(result.code, 0) << result.err;
  traces::Trace trace = traces::read_trace(dir / "t.pb");
  EXPECT_EQ(trace.metadata().source(), traces::PREDICTED);
  EXPECT_GT(trace.events_size(), 10);
  EXPECT_GT(trace.summary().step_time_s(), 0);
  auto chrome = nlohmann::json::parse(read_file(dir / "t.json"));
  EXPECT_TRUE(chrome.contains("traceEvents"));
  fs::remove_all(dir);
}

TEST(CliSimulate, OutOfMemoryIsReported) {
  // Llama-3-70B on 8 GPUs of 80 GB cannot hold its optimizer state.
  auto result = run_cli({"simulate", "--model", "llama3-70b", "--gpus", "8", "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_TRUE(nlohmann::json::parse(result.out)["oom"].get<bool>());
}

TEST(CliSimulate, BadInput) {
  EXPECT_EQ(run_cli({"simulate", "--sweep", "nodes=4"}).code, 2);
  EXPECT_EQ(run_cli({"simulate", "--sweep", "gpus=8,x"}).code, 2);
  EXPECT_EQ(run_cli({"simulate", "--mode", "fast"}).code, 2);
  EXPECT_EQ(run_cli({"simulate", "--strategy", "all", "--trace", "x.pb"}).code, 2);
  EXPECT_EQ(run_cli({"simulate", "--calibration", "/nonexistent/cal.json"}).code, 2);
}

}  // namespace
}  // namespace ragged::cli
