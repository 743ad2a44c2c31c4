// The cluster options of every scenario command (--gpu, --gpus-per-node,
// --nics-per-node, --nic-gbps): each lands in the resolved scenario, for
// --model and over a scenario file; bad values are one line and exit 2 in
// plan, simulate and tune.

#include <gtest/gtest.h>

#include "cli/scenario_options.hpp"
#include "cli_test_util.hpp"
#include "scenarios/gpu_presets.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::cli {
namespace {

using testing::expect_one_line_error;
using testing::run_cli;

// The scenario `ragged plan <args>` resolves, parsed as the command parses them.
scenarios::Scenario resolved(std::vector<std::string> args) {
  CLI::App app;
  ScenarioOptions options;
  options.add_to(&app, true);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  return options.resolve().front().scenario();
}

TEST(CliClusterOptions, EachLandsInTheModelsScenario) {
  const scenarios::Scenario s = resolved({"--model", "llama3-8b", "--gpus", "16", "--gpu", "a100-80g",
                                          "--gpus-per-node", "4", "--nics-per-node", "2", "--nic-gbps", "100"});
  EXPECT_EQ(s.name(), "llama3-8b-16xa100-80g");
  EXPECT_EQ(s.cluster().gpu().preset(), "a100-80g");
  EXPECT_DOUBLE_EQ(s.cluster().gpu().hbm_capacity_gib(), scenarios::find_gpu_preset("a100-80g").hbm_capacity_gib);
  EXPECT_EQ(s.cluster().gpus_per_node(), 4);
  EXPECT_EQ(s.cluster().nodes(), 4);
  EXPECT_EQ(s.cluster().nics().per_node(), 2);
  EXPECT_DOUBLE_EQ(s.cluster().nics().bandwidth_gbits_per_s(), 100);

  const scenarios::Scenario plain = resolved({"--model", "llama3-8b", "--gpus", "16"});
  EXPECT_EQ(plain.name(), "llama3-8b-16xh100");
  EXPECT_EQ(plain.cluster().gpus_per_node(), 8);
  EXPECT_EQ(plain.cluster().nics().per_node(), 8);  // one per GPU
  EXPECT_DOUBLE_EQ(plain.cluster().nics().bandwidth_gbits_per_s(), 400);
  EXPECT_EQ(resolved({"--model", "llama3-8b", "--gpus", "4"}).cluster().gpus_per_node(), 4);  // one smaller node
}

// Over a scenario file: its GPU count stays (or --gpus sets it), the nodes
// follow --gpus-per-node, and --gpu replaces the GPU with its overrides.
TEST(CliClusterOptions, EachOverridesAScenarioFile) {
  const scenarios::Scenario s = resolved({"llama3-8b-128xh100", "--gpu", "h200", "--gpus-per-node", "4"});
  EXPECT_EQ(s.cluster().gpu().preset(), "h200");
  EXPECT_EQ(scenarios::total_gpus(s), 128);
  EXPECT_EQ(s.cluster().gpus_per_node(), 4);
  EXPECT_EQ(s.cluster().nodes(), 32);
  const scenarios::Scenario fewer = resolved({"llama3-8b-128xh100", "--gpus", "64", "--gpus-per-node", "4"});
  EXPECT_EQ(fewer.cluster().nodes(), 16);
  const scenarios::Scenario nics = resolved({"llama3-8b-128xh100", "--nics-per-node", "4", "--nic-gbps", "200"});
  EXPECT_EQ(nics.cluster().nics().per_node(), 4);
  EXPECT_DOUBLE_EQ(nics.cluster().nics().bandwidth_gbits_per_s(), 200);
  EXPECT_EQ(nics.cluster().gpus_per_node(), 8);  // what was not given stays

  // The tuner's test scenario cuts its H100's HBM to 80 MiB; --gpu h100 is the preset's own.
  const std::string small = std::string(RAGGED_SOURCE_DIR) + "/tests/tune/data/tiny-llama-8xsmall.textproto";
  EXPECT_LT(resolved({small}).cluster().gpu().hbm_capacity_gib(), 1);
  EXPECT_DOUBLE_EQ(resolved({small, "--gpu", "h100"}).cluster().gpu().hbm_capacity_gib(),
                   scenarios::find_gpu_preset("h100").hbm_capacity_gib);
}

TEST(CliClusterOptions, BadValuesAreOneLineAndExitTwo) {
  for (const char* command : {"plan", "simulate", "tune"}) {
    const std::string c = command;
    expect_one_line_error(run_cli({c, "--model", "llama3-8b", "--gpus", "8", "--gpu", "b300"}),
                          "--gpu: unknown GPU preset 'b300': use one of h100, h100-sxm-95g, h200");
    expect_one_line_error(run_cli({c, "--model", "llama3-8b", "--gpus", "8", "--gpus-per-node", "0"}),
                          "--gpus-per-node: 0 is out of range");
    expect_one_line_error(run_cli({c, "--model", "llama3-8b", "--gpus", "8", "--nics-per-node", "two"}),
                          "--nics-per-node: 'two' is not a whole number");
    expect_one_line_error(run_cli({c, "--model", "llama3-8b", "--gpus", "8", "--nic-gbps", "-1"}),
                          "--nic-gbps: -1 is out of range");
    expect_one_line_error(run_cli({c, "--model", "llama3-8b", "--gpus", "12"}),
                          "--gpus 12: not a whole number of nodes of --gpus-per-node 8; give --gpus 8 or 16, or a "
                          "--gpus-per-node that divides 12");
    expect_one_line_error(run_cli({c, "--model", "llama3-8b", "--gpus", "6", "--gpus-per-node", "4"}),
                          "--gpus 6: not a whole number of nodes of --gpus-per-node 4; give --gpus 4 or 8");
    expect_one_line_error(run_cli({c, "llama3-8b-128xh100", "--gpus-per-node", "3"}),
                          "the scenario's 128 GPUs: not a whole number of nodes of --gpus-per-node 3");
  }
}

// --set FIELD=VALUE, shared by the scenario commands: applied after the other
// options (so it wins), checked like the file's own fields.
TEST(CliSetOption, SetsAnyFieldAfterTheOtherOptions) {
  const scenarios::Scenario s = resolved({"llama3-8b-8xh100", "--set", "training.prefetch_depth=0", "--set",
                                          "training.micro_batch_size=1", "--gpu", "a100-80g", "--set",
                                          "cluster.gpu.power_limit_watts=300"});
  EXPECT_EQ(s.training().prefetch_depth(), 0);
  EXPECT_EQ(s.training().micro_batch_size(), 1);
  EXPECT_EQ(s.cluster().gpu().preset(), "a100-80g");
  EXPECT_DOUBLE_EQ(s.cluster().gpu().power_limit_watts(), 300);
  for (const char* c : {"plan", "simulate"}) {
    expect_one_line_error(run_cli({c, "llama3-8b-8xh100", "--set", "training.prefech=0"}),
                          "--set training.prefech: 'prefech' is not a field of Training; did you mean 'prefetch_depth'?");
    expect_one_line_error(run_cli({c, "llama3-8b-8xh100", "--set", "training.micro_batch_size=0"}),
                          "training.micro_batch_size: micro_batch_size is 0");
  }
}

}  // namespace
}  // namespace ragged::cli
