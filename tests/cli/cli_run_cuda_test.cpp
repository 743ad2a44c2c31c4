// `ragged run --device cuda` in-process, as ragged-run-cuda runs it
// (cli/run_device_cuda.cpp): built only with the CUDA backend.

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backend/cuda/cuda_check.hpp"
#include "cli_test_util.hpp"

namespace ragged::cli {
namespace {

using testing::run_cli;

// The unsupported cases are refused before any GPU is touched.
TEST(CliRunCuda, RefusesWhatItDoesNotRunAndSaysWhere) {
  auto mla = run_cli({"run", "--model", "deepseek-v3", "--gpus", "1", "--layers", "2", "--device", "cuda"});
  EXPECT_EQ(mla.code, 2);
  EXPECT_NE(mla.err.find("multi-head latent attention"), std::string::npos) << mla.err;
  EXPECT_NE(mla.err.find("--device cpu"), std::string::npos) << mla.err;
  auto muon = run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--device", "cuda", "--optimizer", "muon"});
  EXPECT_EQ(muon.code, 2);
  EXPECT_NE(muon.err.find("training.optimizer"), std::string::npos) << muon.err;
  auto foreach = run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--device", "cuda", "--set",
                          "training.optimizer.adamw.implementation=FOREACH"});
  EXPECT_EQ(foreach.code, 2);
  EXPECT_NE(foreach.err.find("training.optimizer.adamw.implementation: FOREACH describes another stack's update"),
            std::string::npos)
      << foreach.err;
  EXPECT_NE(foreach.err.find("--set training.optimizer.adamw.implementation=FUSED_KERNEL"), std::string::npos)
      << foreach.err;
  auto verify = run_cli({"run", "tiny-llama-4xcpu", "--gpus", "1", "--device", "cuda", "--verify-collectives"});
  EXPECT_EQ(verify.code, 2);
  EXPECT_NE(verify.err.find("--device cpu"), std::string::npos) << verify.err;
}

// The block forms and a loop's metrics are the host's refusals too (CliRun).
TEST(CliRunCuda, RefusesWhatNeitherExecutorComputes) {
  auto block = run_cli({"run", "--model", "gpt2-xl", "--gpus", "1", "--layers", "1", "--device", "cuda"});
  EXPECT_EQ(block.code, 2) << block.out;
  EXPECT_NE(block.err.find("LayerNorm with bias"), std::string::npos) << block.err;
  testing::expect_logit_metrics_refused("cuda");
}

// On a GPU the tiny Llama and the tiny MoE run the Program on the device and
// land on the host reference; without one, --device cuda is bad input that
// says so.
TEST(CliRunCuda, RunsTheProgramOrSaysThereIsNoGpu) {
  std::string why;
  const bool gpu = backend::gpu::cuda_device_available(&why);
  for (const char* scenario : {"tiny-llama-4xcpu", "tiny-moe-4xcpu"}) {
    auto ran = run_cli({"run", scenario, "--gpus", "1", "--device", "cuda", "--steps", "2", "--warmup", "1",
                        "--check-reference", "--json"});
    if (!gpu) {
      EXPECT_EQ(ran.code, 2);
      EXPECT_NE(ran.err.find("no GPU here"), std::string::npos) << ran.err;
      continue;
    }
    ASSERT_EQ(ran.code, 0) << scenario << ": " << ran.err;
    auto j = nlohmann::json::parse(ran.out);
    EXPECT_TRUE(j["reference_ok"].get<bool>()) << scenario << ": " << j.dump();
    EXPECT_EQ(j["losses"].size(), 3u);
    EXPECT_GT(j["step_time_s"].get<double>(), 0);
    EXPECT_GT(j["device_used_bytes"].get<int64_t>(), j["arena_held_bytes"].get<int64_t>());
  }
  if (!gpu) GTEST_SKIP() << "no GPU (" << why << "): checked the refusal only";
}

}  // namespace
}  // namespace ragged::cli
