// What the training loop keeps, simulated (docs/SIMULATOR.md section 8,
// "What the training loop keeps"): a Hugging Face model under FSDP1 with
// full checkpointing that returns its fp32 logits and every layer's keys and
// values, held by the loop until the next forward returns (ATorch's Llama-2
// example). The peak allocated memory comes at the end of the forward, with
// no gradient shard yet (zero_grad freed them): the persistent master and
// optimizer shards, two steps' outputs, every unit's checkpoint, the loss's
// shifted copy and log-softmax, and the head's gathered parameters. The
// expectation is written from the model's sizes, not from the Program.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "planner/layout_strategy.hpp"
#include "planner/program_builder.hpp"
#include "planner/resolved_scenario.hpp"
#include "planner/scenario_plan.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::sim {
namespace {

constexpr const char* kScenario =
    "model { inline_spec { hidden_size: 256 num_layers: 4 vocab_size: 8192 intermediate_size: 704\n"
    "                      num_attention_heads: 8 num_key_value_heads: 8 } }\n"
    "cluster { gpu { preset: \"a100-80g\" } gpus_per_node: 8 nodes: 1 }\n"
    "training { strategy: FSDP1 micro_batch_size: 2 sequence_length: 4096 activation_checkpointing: FULL\n"
    "           precision { param: BF16 reduce: BF16 master: FP32 } loss: SHIFTED_FP32_LOGITS\n"
    "           outputs { logits: true kv_cache: true held_until_next_forward: true } }\n";

TEST(LoopMemory, HeldOutputsPeakAtTheEndOfTheForward) {
  const planner::ResolvedScenario resolved = planner::resolve_scenario(
      scenarios::parse_scenario(kScenario, scenarios::ScenarioFormat::kText, "loop.textproto", "."));
  const models::ModelSpec& model = resolved.model;
  const planner::Plan plan = planner::plan_scenario(resolved);
  const double tokens = 2.0 * 4096.0;
  const double vocab = 8192.0, hidden = 256.0, kv = 8.0 * 32.0;

  int64_t shard = 0;
  for (const planner::UnitPlan& u : plan.units) shard += u.layout.shard_size;
  const double persistent = 12.0 * static_cast<double>(shard);  // fp32 master and two AdamW moments, no gradient
  const double one_step_outputs = tokens * (4.0 * 2.0 * kv * 2.0 + 4.0 * vocab);  // 4 blocks' K and V, fp32 logits
  // Each block's input and the embedding's output (full checkpointing), the
  // final norm's input and output and, run eagerly, its fp32 upcast (4 B), the
  // fp32 log-softmax (kept), the shifted fp32 copy (until the loss returns).
  const double checkpoints =
      tokens * (4.0 * hidden * 2.0 + 2.0 * hidden * 2.0 + 4.0 * hidden + 4.0 * vocab + 4.0 * vocab);
  const double head_params = static_cast<double>(model.units.back().params()) * 2.0;
  const double expected = persistent + 2.0 * one_step_outputs + checkpoints + head_params;

  const traces::Summary simulated = simulate_summary_in_child(resolved).summary;
  const double peak = static_cast<double>(simulated.peak_allocated_bytes());
  std::printf("expected %.1f MiB (persistent %.1f, outputs 2 x %.1f, checkpoints and loss %.1f, head %.1f); "
              "simulated %.1f MiB (%+.2f%%)\n",
              expected / 1048576, persistent / 1048576, one_step_outputs / 1048576, checkpoints / 1048576,
              head_params / 1048576, peak / 1048576, 100 * (peak / expected - 1));
  // Beyond the terms above only what the allocator rounds and a block's
  // gathered parameters prefetched for the backward (under 1% here).
  EXPECT_GE(peak, expected);
  EXPECT_LE(peak, 1.01 * expected);
}

}  // namespace
}  // namespace ragged::sim
