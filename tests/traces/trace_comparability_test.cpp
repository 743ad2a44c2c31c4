// traces::comparability: a predicted and a measured trace of different runs
// are refused naming what differs; what legitimately differs between a
// prediction and its run (the device, the steps, the hardware's figures) is not.

#include "traces/trace_comparability.hpp"

#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace ragged::traces {
namespace {

struct RunSpec {
  std::string model = "tiny-llama";
  int layers = 4;
  int nodes = 4;
  std::string preset = "cpu";
  double peak_tflops = 0.2;
  std::string strategy = "RAGGED";
  int micro_batch = 2;
  int sequence = 128;
  int shard_group = 4;
  std::string optimizer = "adamw { lr: 0.001 beta1: 0.9 }";
  int steps = 3;
};

// A trace whose metadata is what simulate and run write (scenario text with defaults applied).
Trace trace_of(const RunSpec& r, Source source, const std::string& device) {
  Trace t;
  Metadata* m = t.mutable_metadata();
  m->set_scenario_name(r.model + "-4xcpu");
  m->set_scenario_text(fmt::format(
      "name: \"{}-4xcpu\"\ndescription: \"a \\\"tiny\\\" model\"\nmodel {{\n  inline_spec {{\n    name: \"{}\"\n"
      "    family: \"llama\"\n    num_layers: {}\n    hidden_size: 256\n  }}\n}}\n"
      "cluster {{\n  gpu {{\n    preset: \"{}\"\n    peak_bf16_tflops: {}\n  }}\n  gpus_per_node: 1\n  nodes: {}\n}}\n"
      "training {{\n  strategy: {}\n  shard_group_size: {}\n  replicate_group_size: 1\n  micro_batch_size: {}\n"
      "  sequence_length: {}\n  gradient_accumulation_steps: 1\n  precision {{\n    param: FP32\n  }}\n"
      "  optimizer {{\n    {}\n  }}\n  checkpoint_every: 1\n  mesh {{\n    dp_shard: {}\n    tp: 1\n  }}\n}}\n"
      "run {{\n  steps: {}\n  seed: 1234\n}}\n",
      r.model, r.model, r.layers, r.preset, r.peak_tflops, r.nodes, r.strategy, r.shard_group, r.micro_batch,
      r.sequence, r.optimizer, r.shard_group, r.steps));
  m->set_source(source);
  m->set_device(device);
  m->set_strategy(r.strategy == "RAGGED" ? "ragged" : "fsdp2");
  m->set_world_size(r.nodes);
  m->set_steps(source == PREDICTED ? 1 : r.steps);
  return t;
}

Comparability judge(const RunSpec& predicted, const RunSpec& measured) {
  return comparability(trace_of(predicted, PREDICTED, "simgrid 3.32, 4 x cpu (full mode)"),
                       trace_of(measured, MEASURED, "cpu (host (OpenBLAS), MPI), 4 local ranks"));
}

TEST(TraceComparability, APredictionAndItsRunAreComparable) {
  const Comparability c = judge(RunSpec{}, RunSpec{});
  EXPECT_TRUE(c.comparable()) << c.describe();
}

TEST(TraceComparability, WhatAPredictionAndItsRunMayDifferInIsNotRefused) {
  RunSpec measured;
  measured.steps = 10;          // more measured steps
  measured.peak_tflops = 0.35;  // the prediction's hardware figures, calibrated
  measured.optimizer = "adamw { lr: 0.01 beta1: 0.8 }";  // other values, the same work
  Trace m = trace_of(measured, MEASURED, "NVIDIA H100 80GB HBM3");
  m.mutable_metadata()->set_scenario_name("renamed-copy");
  m.mutable_metadata()->set_ragged_version("0.2.0");
  m.mutable_metadata()->add_executor_notes("ZeRO-3 keeps no compute-dtype shard here");
  const Comparability c = comparability(trace_of(RunSpec{}, PREDICTED, "simgrid"), m);
  EXPECT_TRUE(c.comparable()) << c.describe();
}

TEST(TraceComparability, DifferentModelsGpusStrategiesAndBatchesAreNamed) {
  RunSpec moe;
  moe.model = "tiny-moe";
  moe.sequence = 64;
  const Comparability model = judge(RunSpec{}, moe);
  ASSERT_FALSE(model.comparable());
  EXPECT_EQ(model.describe(), "model tiny-llama vs tiny-moe; sequence length 128 vs 64");

  RunSpec more_gpus;
  more_gpus.nodes = 8;
  more_gpus.shard_group = 8;  // follows the GPUs: not listed again
  EXPECT_EQ(judge(RunSpec{}, more_gpus).describe(), "GPUs 4 vs 8");

  RunSpec fsdp2;
  fsdp2.strategy = "FSDP2";
  fsdp2.micro_batch = 4;
  EXPECT_EQ(judge(RunSpec{}, fsdp2).describe(), "strategy ragged vs fsdp2; micro-batch 2 vs 4");

  RunSpec fewer_layers;
  fewer_layers.layers = 2;
  EXPECT_EQ(judge(RunSpec{}, fewer_layers).describe(), "model tiny-llama: inline_spec.num_layers 4 vs 2");

  RunSpec muon;
  muon.optimizer = "muon { lr: 0.02 }";
  EXPECT_EQ(judge(RunSpec{}, muon).describe(), "optimizer adamw vs muon");

  RunSpec hsdp;
  hsdp.shard_group = 2;
  EXPECT_EQ(judge(RunSpec{}, hsdp).describe(), "training.shard_group_size 4 vs 2; training.mesh.dp_shard 4 vs 2");

  RunSpec h100;
  h100.preset = "h100";
  EXPECT_EQ(judge(RunSpec{}, h100).describe(), "GPU cpu vs h100");
}

TEST(TraceComparability, ManyDifferencesAreCappedAndTracesWithoutScenarioTextUseTheirMetadata) {
  RunSpec other;
  other.model = "tiny-moe";
  other.nodes = 8;
  other.preset = "h100";
  other.strategy = "FSDP2";
  other.micro_batch = 4;
  other.sequence = 64;
  other.optimizer = "muon { lr: 0.02 }";
  const Comparability c = judge(RunSpec{}, other);
  EXPECT_EQ(c.differences.size(), 7u) << c.describe(100);
  EXPECT_EQ(c.describe(3), "model tiny-llama vs tiny-moe; GPUs 4 vs 8; GPU cpu vs h100; and 4 more");

  Trace p = trace_of(RunSpec{}, PREDICTED, "simgrid"), m = trace_of(other, MEASURED, "cpu");
  p.mutable_metadata()->clear_scenario_text();
  m.mutable_metadata()->set_scenario_text("not { text format");
  EXPECT_EQ(comparability(p, m).describe(), "GPUs 4 vs 8; strategy ragged vs fsdp2");
}

}  // namespace
}  // namespace ragged::traces
