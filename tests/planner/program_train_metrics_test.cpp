// The Program builder, continued: the training loop's metrics over the
// returned logits (training.outputs.metric_cross_entropies: Composer
// updating llm-foundry's MPT train metrics, LanguageCrossEntropy and
// LanguagePerplexity, on every micro-batch) and the fused loss's logits the
// loop holds (Composer's state.outputs). The expectations are written from
// the model's sizes: vocabulary 1,024, bf16 logits.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "planner/memory_breakdown.hpp"
#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::graph_problems;
using program_test::joined;
using program_test::LiveBuffers;
using program_test::ops_of;
using program_test::only_op;
using program_test::ProgramSetup;

constexpr double kVocab = 1024;
constexpr const char* kComposerLoop =
    "strategy: FSDP1 activation_checkpointing: FULL micro_batch_size: 2 sequence_length: 512 "
    "gradient_accumulation_steps: 2 loss: FUSED "
    "outputs { logits: true held_until_next_forward: true metric_cross_entropies: 2 } ";

int returned_logits_buffer(const Program& program, int mb_index) {
  int seen = 0;
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    const Buffer& buffer = program.buffers[b];
    if (buffer.kind == BufferKind::kModelOutputs && buffer.unit >= 0 && seen++ == mb_index) return static_cast<int>(b);
  }
  return -1;
}

uint32_t alloc_of(const Program& program, int buffer) {
  for (const Op& op : program.ops) {
    if (op.kind == OpKind::kAlloc && op.buffer == buffer) return op.id;
  }
  ADD_FAILURE() << "no alloc of buffer " << buffer;
  return 0;
}

// One metrics op per micro-batch, after that micro-batch's last backward and
// before the next forward, on the head unit: per metric the fp32 cast of the
// bf16 logits (2 + 4 bytes an element) and the log-softmax (4 + 4); its
// workspace is one metric's fp32 copy and log-softmax.
TEST(TrainMetrics, OnePassPerMicroBatchAfterItsBackward) {
  ProgramSetup setup(kComposerLoop);
  const Program program = setup.build();
  EXPECT_TRUE(graph_problems(program).empty()) << joined(graph_problems(program));
  const double elements = 2.0 * 512.0 * kVocab;
  const std::vector<const Op*> metrics = ops_of(program, OpKind::kTrainMetrics);
  ASSERT_EQ(metrics.size(), 2u);
  for (int mb = 0; mb < 2; ++mb) {
    const Op& op = *metrics[static_cast<size_t>(mb)];
    EXPECT_EQ(op.micro_batch, mb);
    EXPECT_EQ(op.unit, setup.units() - 1);
    const double expected_bytes = 2 * elements * ((2 + 4) + (4 + 4));
    std::printf("micro-batch %d: metric traffic expected 2 x %.0f elements x 14 B = %.0f B, Program %.0f B; "
                "%lld kernels (expected 3 + 2 x 7)\n",
                mb, elements, expected_bytes, op.work.elementwise_bytes,
                static_cast<long long>(op.work.elementwise_kernels));
    EXPECT_DOUBLE_EQ(op.work.elementwise_bytes, expected_bytes);
    EXPECT_EQ(op.work.elementwise_kernels, 3 + 2 * 7);
    EXPECT_GT(op.id, only_op(program, OpKind::kComputeBwd, 0, mb).id);
    if (mb == 0) {
      EXPECT_LT(op.id, only_op(program, OpKind::kComputeFwd, 0, 1).id);
    }
    const Op& workspace_alloc = program.ops[op.id - 1];
    ASSERT_EQ(workspace_alloc.kind, OpKind::kAlloc);
    const Buffer& workspace = program.buffers[static_cast<size_t>(workspace_alloc.buffer)];
    EXPECT_EQ(workspace.pieces, (std::vector<int64_t>{static_cast<int64_t>(4 * elements),
                                                      static_cast<int64_t>(4 * elements)}));
  }
}

// The fused loss keeps the bf16 logits among the head's activations to its
// backward; the loop's hold on them (2 bytes x vocabulary a token) starts
// there, so the two are never counted at once, and lasts to the end of the
// next micro-batch's head forward.
TEST(TrainMetrics, FusedLossLogitsHeldFromTheHeadsBackward) {
  ProgramSetup setup(kComposerLoop);
  const Program program = setup.build();
  const int head = setup.units() - 1;
  const int first = returned_logits_buffer(program, 0);
  ASSERT_GE(first, 0);
  const Buffer& logits = program.buffers[static_cast<size_t>(first)];
  EXPECT_EQ(logits.bytes, static_cast<int64_t>(2.0 * 512 * 2 * kVocab));  // tokens x bf16 x vocabulary
  EXPECT_GT(alloc_of(program, first), only_op(program, OpKind::kComputeBwd, head, 0).id);
  const Op& next_head_forward = only_op(program, OpKind::kComputeFwd, head, 1);
  for (const Op& op : program.ops) {
    if (op.kind == OpKind::kFree && op.buffer == first) {
      EXPECT_EQ(op.deps, std::vector<uint32_t>{next_head_forward.id});
    }
  }
}

// Without the metrics nothing runs after the backward; with them the
// step's peak holds the held logits and one metric's fp32 copies at most.
TEST(TrainMetrics, NoneWithoutTheSettingAndTheirWorkspaceBoundsThePeak) {
  ProgramSetup plain(
      "strategy: FSDP1 activation_checkpointing: FULL micro_batch_size: 2 sequence_length: 512 "
      "gradient_accumulation_steps: 2 loss: FUSED");
  ProgramSetup composer(kComposerLoop);
  EXPECT_TRUE(ops_of(plain.build(), OpKind::kTrainMetrics).empty());
  const double elements = 2.0 * 512.0 * kVocab;
  const int64_t plain_peak = memory_breakdown(plain.build()).peak_total();
  const int64_t composer_peak = memory_breakdown(composer.build()).peak_total();
  const auto bound = static_cast<int64_t>(2 * 2 * elements + 8 * elements);  // two held logits, one metric's copies
  std::printf("static peak %lld B plain, %lld B with the loop's metrics (at most %lld B more)\n",
              static_cast<long long>(plain_peak), static_cast<long long>(composer_peak),
              static_cast<long long>(bound));
  EXPECT_GT(composer_peak, plain_peak);
  EXPECT_LE(composer_peak - plain_peak, bound);
}

}  // namespace
}  // namespace ragged::planner
