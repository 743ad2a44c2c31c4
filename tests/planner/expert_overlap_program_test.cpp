// training.experts.overlap_all_to_all: Megatron-Core's combined 1F1B step.
// In interleaved 1F1B's steady state a forward and the backward after it run
// as one pass, layer by layer: each forward dispatch is issued beside the
// other pass's experts backward and waits for nothing of it, and the
// expert-parallel stream runs the backward's combine, the forward's
// dispatch, the backward's dispatch and the forward's combine in turn
// (model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run).

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "planner/pipeline_schedule.hpp"
#include "planner/scenario_plan.hpp"
#include "program_test_util.hpp"
#include "scenarios/scenario_loader.hpp"

namespace ragged::planner {
namespace {

using program_test::depends_on;
using program_test::graph_problems;
using program_test::joined;

// A tiny Qwen3 MoE (8 blocks, 8 experts top 2) on 8 GPUs: pp 2 x ep 4, two
// model chunks a rank of two blocks each.
std::vector<Program> stage_programs(bool overlap, int micro_batches = 4, bool delay_weight_gradients = false) {
  const std::string text =
      "model { inline_spec { family: \"qwen3_moe\" hidden_size: 128 num_layers: 8 vocab_size: 512\n"
      "  intermediate_size: 256 num_attention_heads: 4 num_key_value_heads: 2 head_dim: 32\n"
      "  num_experts: 8 experts_per_token: 2 moe_intermediate_size: 64 } }\n"
      "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n"
      "training { strategy: MEGATRON_DDP micro_batch_size: 2 sequence_length: 512 gradient_accumulation_steps: " +
      std::to_string(micro_batches) +
      "\n"
      "  mesh { ep: 4 pp: 2 expert_tp: 1 }\n"
      "  pipeline { schedule: INTERLEAVED_1F1B virtual_stages: 2 layers_per_stage: [2, 2, 2, 2] }\n"
      "  experts { overlap_all_to_all: " +
      std::string(overlap ? "true" : "false") + (delay_weight_gradients ? " delay_weight_gradients: true" : "") +
      " } }\n";
  const ResolvedScenario resolved = resolve_scenario(
      scenarios::parse_scenario(text, scenarios::ScenarioFormat::kText, "overlap_test.textproto", RAGGED_SOURCE_DIR));
  return build_stage_programs(resolved, plan_pipeline(resolved));
}

bool is_dispatch(const Op& op, bool backward) {
  return op.kind == OpKind::kAllToAll && op.name.ends_with(backward ? "(bwd) ep dispatch (bwd)" : "(fwd) ep dispatch");
}

// Forward dispatches that wait for nothing of the experts backward issued
// just before them (the other pass's), through dependencies or stream order.
int dispatches_beside_a_backward(const Program& p) {
  int beside = 0;
  int64_t last_backward = -1;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (op.kind == OpKind::kComputeBwd && op.name.find(".experts") != std::string::npos) {
      last_backward = static_cast<int64_t>(i);
    }
    if (is_dispatch(op, false) && last_backward >= 0 &&
        !depends_on(p, static_cast<uint32_t>(i), static_cast<uint32_t>(last_backward), true)) {
      ++beside;
    }
  }
  return beside;
}

// Steady-state pairs of a stage's order: a forward followed by a backward.
int combined_steps(int stage, int extra_warmup) {
  const std::vector<PipelineAction> order =
      stage_schedule(PipelineScheduleKind::kInterleaved1F1B, 2, stage, 4, 2, extra_warmup);
  int pairs = 0;
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    if (order[i].pass == PipelineAction::Pass::kForward && order[i + 1].pass == PipelineAction::Pass::kBackward) {
      ++pairs;
      ++i;
    }
  }
  return pairs;
}

TEST(ExpertOverlapProgram, EachCombinedLayerPairIssuesTheForwardDispatchBesideTheOtherBackward) {
  const std::vector<Program> plain = stage_programs(false);
  const std::vector<Program> overlapped = stage_programs(true);
  ASSERT_EQ(overlapped.size(), 2u);
  for (size_t s = 0; s < overlapped.size(); ++s) {
    EXPECT_EQ(joined(graph_problems(overlapped[s])), "") << "stage " << s;
    // Two blocks a chunk: two layer pairs a combined step.
    const int expected = 2 * combined_steps(static_cast<int>(s), 1);
    const int beside = dispatches_beside_a_backward(overlapped[s]);
    std::printf(
        "stage %zu: %d forward dispatches beside another micro-batch's experts backward (%d combined steps "
        "x 2 layers), %d without the overlap\n",
        s, beside, expected / 2, dispatches_beside_a_backward(plain[s]));
    EXPECT_GT(expected, 0);
    EXPECT_EQ(beside, expected) << "stage " << s;
    EXPECT_EQ(dispatches_beside_a_backward(plain[s]), 0) << "stage " << s;
  }
}

// Without stages (combined_1f1b_schedule_for_no_pipelining): the first
// forward alone, each later forward with the backward of the micro-batch
// before it, every layer a pair, the last backward alone.
TEST(ExpertOverlapProgram, WithoutStagesEachForwardRunsWithThePreviousMicroBatchsBackward) {
  const auto program = [](bool overlap) {
    const program_test::ProgramSetup s(
        "strategy: MEGATRON_DDP micro_batch_size: 2 sequence_length: 512 gradient_accumulation_steps: 4 "
        "mesh { ep: 4 expert_tp: 1 } experts { overlap_all_to_all: " +
            std::string(overlap ? "true" : "false") + " }",
        "model { inline_spec { family: \"qwen3_moe\" hidden_size: 128 num_layers: 8 vocab_size: 512\n"
        "  intermediate_size: 256 num_attention_heads: 4 num_key_value_heads: 2 head_dim: 32\n"
        "  num_experts: 8 experts_per_token: 2 moe_intermediate_size: 64 } }\n"
        "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n");
    return s.build();
  };
  const Program plain = program(false);
  const Program overlapped = program(true);
  EXPECT_EQ(joined(graph_problems(overlapped)), "");
  const int beside = dispatches_beside_a_backward(overlapped);
  std::printf(
      "%d forward dispatches beside the previous micro-batch's experts backward (3 combined steps x 8 "
      "layers), %d without the overlap\n",
      beside, dispatches_beside_a_backward(plain));
  EXPECT_EQ(beside, 3 * 8);
  EXPECT_EQ(dispatches_beside_a_backward(plain), 0);
  EXPECT_EQ(overlapped.ops.size(), plain.ops.size());  // the same work, in another order
}

TEST(ExpertOverlapProgram, TheExpertStreamAlternatesTheTwoPassesCollectives) {
  const Program p = stage_programs(true).front();
  std::string order;  // the expert-parallel stream's all-to-alls: b/f for the pass, c/d for combine or dispatch
  for (const Op& op : p.ops) {
    if (op.kind != OpKind::kAllToAll) continue;
    order += op.name.find("(bwd)") != std::string::npos ? 'b' : 'f';
    order += op.name.find("combine") != std::string::npos ? 'c' : 'd';
    order += ' ';
  }
  // A combined layer pair: the backward's combine, the forward's dispatch,
  // the backward's dispatch, the forward's combine.
  size_t pairs = 0;
  for (size_t at = order.find("bc fd bd fc "); at != std::string::npos; at = order.find("bc fd bd fc ", at + 1)) {
    ++pairs;
  }
  EXPECT_EQ(pairs, static_cast<size_t>(2 * combined_steps(0, 1))) << order;
}

// --delay-wgrad-compute: the backward experts' weight gradients run apart,
// after their input gradient, and the backward's dispatch waits for the
// input gradient alone, so it runs beside the weight gradients.
TEST(ExpertOverlapProgram, DelayedWeightGradientsLetTheBackwardDispatchGoFirst) {
  const Program p = stage_programs(true, 4, true).front();
  EXPECT_EQ(joined(graph_problems(p)), "");
  int delayed = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& weights = p.ops[i];
    if (!weights.weight_gradients_only || weights.name.find(".experts") == std::string::npos) continue;
    // The dispatch (bwd) of the same unit and micro-batch.
    for (size_t j = 0; j < p.ops.size(); ++j) {
      const Op& dispatch = p.ops[j];
      if (!is_dispatch(dispatch, true) || dispatch.unit != weights.unit || dispatch.micro_batch != weights.micro_batch)
        continue;
      EXPECT_FALSE(depends_on(p, static_cast<uint32_t>(j), static_cast<uint32_t>(i), true)) << dispatch.name;
      ++delayed;
    }
  }
  std::printf("%d experts backwards with their weight gradients delayed past the dispatch on stage 0\n", delayed);
  // Every combined layer pair's experts backward (2 a step of 3 combined steps).
  EXPECT_EQ(delayed, 2 * combined_steps(0, 1));
}

TEST(ExpertOverlapProgram, TheExtraWarmUpForwardHoldsOneMorePassOfActivations) {
  // Megatron runs one more warm-up forward with the overlap: the first stage
  // holds one more chunk's activations at its peak (8 micro-batches, so that
  // the warm-up does not already hold every forward of the step).
  const auto peak_activations = [](const Program& p) {
    int live = 0, peak = 0;
    for (const Op& op : p.ops) {
      if (op.buffer < 0 || p.buffers[static_cast<size_t>(op.buffer)].kind != BufferKind::kActivations) continue;
      if (op.kind == OpKind::kAlloc) peak = std::max(peak, ++live);
      if (op.kind == OpKind::kFree) --live;
    }
    return peak;
  };
  const int plain = peak_activations(stage_programs(false, 8).front());
  const int overlapped = peak_activations(stage_programs(true, 8).front());
  std::printf("activation buffers held at once on stage 0: %d, %d with the overlap\n", plain, overlapped);
  EXPECT_GT(overlapped, plain);
}

}  // namespace
}  // namespace ragged::planner
