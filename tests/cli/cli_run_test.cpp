// ragged run with one rank (no MPI) and ragged compare, in-process.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace ragged::cli {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

class CliRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ragged_cli_run_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CliRun, OneRankRunsWithoutMpiAndMatchesTheReference) {
  auto result = run_cli({"run", "tiny-moe-4xcpu", "--gpus", "1", "--steps", "1", "--warmup", "1", "--check-reference", "--json"});
  ASSERT_EQ(result.code, 0) << result.err;
  auto j = nlohmann::json::parse(result.out);
  EXPECT_EQ(j["ranks"], 1);
  EXPECT_TRUE(j["reference_ok"].get<bool>());
  EXPECT_EQ(j["reference_error"].get<double>(), 0.0);
  EXPECT_GT(j["step_time_s"].get<double>(), 0);
  EXPECT_EQ(j["losses"].size(), 2u);  // one warm-up step and one measured step
  bool has_backward = false;
  for (const auto& k : j["kinds"]) has_backward = has_backward || (k["kind"] == "compute_bwd" && k["busy_s"] > 0);
  EXPECT_TRUE(has_backward) << j["kinds"].dump();
}

// The CUDA executor refuses it too (test_cli_cuda, CliRunCuda).
TEST_F(CliRun, RefusesBlockFormsTheWorkloadsDoNotCompute) {
  auto result = run_cli({"run", "--model", "gpt2-xl", "--gpus", "1", "--layers", "1", "--device", "cpu"});
  EXPECT_EQ(result.code, 2) << result.out;
  EXPECT_NE(result.err.find("model gpt2-xl-1l (gpt2)"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("LayerNorm with bias"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("`ragged simulate`"), std::string::npos) << result.err;
}

// The strategies whose buckets only the simulator models are refused by
// name, pointing at `ragged simulate`, before any work.
TEST_F(CliRun, RefusesTheSimulatedOnlyStrategies) {
  for (const std::string strategy : {"ddp", "megatron-ddp"}) {
    auto result = run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--steps", "1", "--strategy", strategy});
    EXPECT_EQ(result.code, 2) << strategy << ": " << result.out;
    EXPECT_NE(result.err.find("is simulated only (`ragged simulate`)"), std::string::npos) << result.err;
  }
}

TEST_F(CliRun, PredictedAndMeasuredTracesCompareOpByOp) {
  const std::string predicted = (dir_ / "p.pb").string(), measured = (dir_ / "m.pb").string();
  ASSERT_EQ(run_cli({"simulate", "tiny-llama-4xcpu", "--gpus", "1", "--trace", predicted}).code, 0);
  auto ran = run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--steps", "1", "--trace", measured});
  ASSERT_EQ(ran.code, 0) << ran.err;
  auto compared = run_cli({"compare", predicted, measured, "--json"});
  ASSERT_EQ(compared.code, 0) << compared.err;
  auto c = nlohmann::json::parse(compared.out);
  EXPECT_GT(c["joined_ops"].get<int64_t>(), 50);
  EXPECT_EQ(c["unmatched_ops"].get<int64_t>(), 0);  // the same Program on both sides
  EXPECT_GT(c["measured_step_s"].get<double>(), 0);
  EXPECT_GT(c["measured_mfu"].get<double>(), 0);
  EXPECT_GT(c["predicted_mfu"].get<double>(), 0);
  EXPECT_GE(c["measured_exposed_comm_s"].get<double>(), 0);
  bool has_forward = false;
  for (const auto& k : c["kinds"]) has_forward = has_forward || k["kind"] == "compute_fwd";
  EXPECT_TRUE(has_forward);
  auto table = run_cli({"compare", predicted, measured});
  EXPECT_NE(table.out.find("step time"), std::string::npos) << table.out;
  // The arguments the wrong way round are bad input.
  EXPECT_EQ(run_cli({"compare", measured, predicted}).code, 2);
}

// One basis for every measured figure: each step's compute + exposed is that
// step, the summary's figures are the means of the steps', and per-op-kind
// busy times are per step.
TEST_F(CliRun, EveryFigureIsPerStepAndComputePlusExposedIsTheStep) {
  for (const char* scenario : {"tiny-llama-4xcpu", "tiny-moe-4xcpu"}) {
    auto result = run_cli({"run", scenario, "--gpus", "1", "--steps", "4", "--warmup", "1", "--json"});
    ASSERT_EQ(result.code, 0) << result.err;
    auto j = nlohmann::json::parse(result.out);
    ASSERT_EQ(j["per_step"].size(), 4u) << scenario;
    double step = 0, compute = 0, exposed = 0, comm = 0;
    for (const auto& f : j["per_step"]) {
      const double s = f["step_time_s"], c = f["compute_s"], e = f["exposed_comm_s"];
      EXPECT_NEAR(c + e, s, 0.01 * s) << scenario << ": " << f.dump();
      step += s;
      compute += c;
      exposed += e;
      comm += f["comm_s"].get<double>();
    }
    EXPECT_NEAR(j["step_time_s"].get<double>(), step / 4, 1e-12 * step) << scenario;
    EXPECT_NEAR(j["compute_s"].get<double>(), compute / 4, 1e-12 * step) << scenario;
    EXPECT_NEAR(j["exposed_comm_s"].get<double>(), exposed / 4, 1e-12 * step) << scenario;
    EXPECT_NEAR(j["comm_s"].get<double>(), comm / 4, 1e-12 * step) << scenario;
    const double mean = j["step_time_s"];
    EXPECT_NEAR(j["compute_s"].get<double>() + j["exposed_comm_s"].get<double>(), mean, 0.01 * mean) << scenario;
    EXPECT_LE(j["step_time_spread"]["min"].get<double>(), mean);
    EXPECT_GE(j["step_time_spread"]["max"].get<double>(), mean);
    double kinds = 0;  // per step, so the kinds' busy time stays within one step's ops
    for (const auto& k : j["kinds"]) kinds += k["busy_s"].get<double>();
    EXPECT_LE(kinds, 1.01 * mean) << scenario;
  }
}

// compare sets the run's measured peak beside the prediction of the same
// quantity (state + parameter/gradient buffers, allocated at issue), split
// into the persistent state and the buffers: where the host executor holds
// what the strategy holds, the two agree exactly.
TEST_F(CliRun, CompareMemoryComparesTheSameQuantity) {
  const std::string predicted = (dir_ / "p.pb").string(), measured = (dir_ / "m.pb").string();
  auto compare = [&](const char* strategy, const char* optimizer = "adamw") {
    EXPECT_EQ(run_cli({"simulate", "tiny-llama-4xcpu", "--gpus", "1", "--strategy", strategy, "--optimizer", optimizer,
                       "--trace", predicted})
                  .code,
              0);
    auto ran = run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--strategy", strategy, "--optimizer", optimizer,
                        "--steps", "2", "--trace", measured});
    EXPECT_EQ(ran.code, 0) << ran.err;
    auto compared = run_cli({"compare", predicted, measured, "--json"});
    EXPECT_EQ(compared.code, 0) << compared.err;
    return nlohmann::json::parse(compared.out);
  };
  for (const char* strategy : {"ragged", "fsdp1", "fsdp2"}) {
    auto c = compare(strategy);
    EXPECT_GT(c["measured_peak_bytes"].get<int64_t>(), 0) << strategy;
    EXPECT_EQ(c["predicted_persistent_bytes"].get<int64_t>(), c["measured_persistent_bytes"].get<int64_t>()) << strategy;
    EXPECT_EQ(c["predicted_buffer_bytes"].get<int64_t>(), c["measured_buffer_bytes"].get<int64_t>()) << strategy;
    EXPECT_EQ(c["peak_memory_error"].get<double>(), 0.0) << strategy;
    EXPECT_EQ(c["measured_steps"].get<int>(), 2) << strategy;
    // The prediction's totals are shown, not compared: activations are in them.
    EXPECT_GT(c["predicted_peak_allocated_bytes"].get<int64_t>(), c["predicted_peak_bytes"].get<int64_t>()) << strategy;
  }
  // ZeRO-3 keeps a persistent compute-dtype shard the host executor does not
  // (it computes from the fp32 master): the difference is in the state, shown
  // as such, the strategy's against the executor's.
  auto zero3 = compare("zero3");
  EXPECT_GT(zero3["predicted_persistent_bytes"].get<int64_t>(), zero3["measured_persistent_bytes"].get<int64_t>());
  // ... and says so, with the parameters it keeps gathered for good (which
  // the host gathers with their unit instead): both differences named.
  ASSERT_EQ(zero3["executor_notes"].size(), 2u) << zero3.dump();
  EXPECT_NE(zero3["executor_notes"][0].get<std::string>().find("compute-dtype shard"), std::string::npos);
  EXPECT_NE(zero3["executor_notes"][1].get<std::string>().find("persistence threshold"), std::string::npos);
  EXPECT_TRUE(compare("ragged")["executor_notes"].empty());
  // Every optimizer: the measured state is what the host holds (its master
  // shards, accumulators and optimizer state as allocated), not a formula,
  // and lands within 1% of the prediction; the five differ as their states do.
  std::map<std::string, int64_t> measured_state;
  for (const char* optimizer : {"adamw", "adam8bit", "muon", "shampoo", "sgd"}) {
    auto c = compare("ragged", optimizer);
    const auto predicted_bytes = static_cast<double>(c["predicted_persistent_bytes"].get<int64_t>());
    measured_state[optimizer] = c["measured_persistent_bytes"].get<int64_t>();
    EXPECT_NEAR(static_cast<double>(measured_state[optimizer]), predicted_bytes, 0.01 * predicted_bytes) << optimizer;
  }
  EXPECT_LT(measured_state["sgd"], measured_state["adam8bit"]);  // no momentum: no state
  EXPECT_LT(measured_state["adam8bit"], measured_state["muon"]);
  EXPECT_LT(measured_state["muon"], measured_state["adamw"]);
  EXPECT_LT(measured_state["adamw"], measured_state["shampoo"]);
}

TEST_F(CliRun, BadRequests) {
  EXPECT_EQ(run_cli({"run", "tiny-llama-4xcpu"}).code, 2);  // 4 GPUs, one process
  EXPECT_EQ(run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--device", "tpu"}).code, 2);
  EXPECT_EQ(run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--optimizer", "lion"}).code, 2);
  EXPECT_EQ(run_cli({"run", "llama3-8b-8xh100", "--gpus", "1"}).code, 2);  // bf16 on the host
  // Another stack's AdamW kernels are simulated, not run.
  auto per_parameter = run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--set",
                                "training.optimizer.adamw.implementation=PER_PARAMETER"});
  EXPECT_EQ(per_parameter.code, 2);
  EXPECT_NE(per_parameter.err.find("training.optimizer.adamw.implementation: PER_PARAMETER describes another stack's "
                                   "update; `ragged run` updates with one fused AdamW kernel"),
            std::string::npos)
      << per_parameter.err;
  // A training loop's metrics over the logits are simulated, not run (on
  // the GPU too: CliRunCuda).
  testing::expect_logit_metrics_refused("cpu");
  // A loop that never steps its optimizer is simulated, not run.
  auto no_step = run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--set", "training.optimizer_step=false"});
  EXPECT_EQ(no_step.code, 2);
  EXPECT_NE(no_step.err.find("training.optimizer_step: false describes a harness that never steps its optimizer"),
            std::string::npos)
      << no_step.err;
  auto uneven = run_cli({"run", "tiny-llama-4xcpu", "--shard-group", "3"});  // 4 GPUs in groups of 3
  EXPECT_EQ(uneven.code, 2);
  EXPECT_NE(uneven.err.find("--shard-group 3: it must divide the 4 GPUs"), std::string::npos) << uneven.err;
}

// The host binary (ragged-run, and test_cli in-process) has no CUDA
// executor: --device cuda says where it is (`ragged run` hands such a line to
// ragged-run-cuda where that is built: CliRunForwarding).
TEST_F(CliRun, TheHostBinarySaysWhereCudaRuns) {
  auto result = run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--device", "cuda"});
  EXPECT_EQ(result.code, 2);
  EXPECT_NE(result.err.find("--device cuda: this binary has no CUDA executor, and ragged-run-cuda"), std::string::npos)
      << result.err;
}

}  // namespace
}  // namespace ragged::cli
