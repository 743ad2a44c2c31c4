// The Program builder, continued: how long the training loop keeps what is
// not an activation. Sharded gradients the loop frees each step (PyTorch's
// zero_grad, FSDP1 and FSDP2) against a persistent accumulator, and what
// the model returns (training.outputs: Hugging Face's logits and key/value
// caches, held until the loss or until the next forward).

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "planner/memory_breakdown.hpp"
#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::depends_on;
using program_test::graph_problems;
using program_test::joined;
using program_test::LiveBuffers;
using program_test::ops_of;
using program_test::ProgramSetup;
using program_test::strategy_field;

std::vector<int> buffers_of(const Program& program, BufferKind kind) {
  std::vector<int> out;
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    if (program.buffers[b].kind == kind) out.push_back(static_cast<int>(b));
  }
  return out;
}

const Op& op_on(const Program& program, OpKind kind, int buffer) {
  for (const Op& op : program.ops) {
    if (op.kind == kind && op.buffer == buffer) return op;
  }
  ADD_FAILURE() << op_kind_name(kind) << " of buffer " << buffer << " not found";
  static const Op kNone;
  return kNone;
}

// FSDP1 and FSDP2: one gradient shard per unit, in the master dtype,
// allocated on the reduce-scatter stream after the unit's first
// reduce-scatter of the step, live for every accumulation, freed after
// every optimizer op; nothing of it is persistent.
TEST(GradShardLifetime, FreedEachStepStrategiesHoldThemFromTheFirstReductionToTheOptimizer) {
  for (scenarios::Strategy strategy : {scenarios::FSDP1, scenarios::FSDP2}) {
    ProgramSetup setup(strategy_field(strategy) + "gradient_accumulation_steps: 2");
    const Program program = setup.build();
    SCOPED_TRACE(scenarios::Strategy_Name(strategy));
    EXPECT_TRUE(graph_problems(program).empty()) << joined(graph_problems(program));
    EXPECT_EQ(program.persistent.gradients, 0);
    const std::vector<int> shards = buffers_of(program, BufferKind::kGradShards);
    ASSERT_EQ(static_cast<int>(shards.size()), setup.units());
    std::vector<const Op*> accumulations = ops_of(program, OpKind::kGradAccumulate);
    std::vector<const Op*> optimizer = ops_of(program, OpKind::kOptimizer);
    ASSERT_FALSE(optimizer.empty());
    for (int buffer : shards) {
      const Buffer& b = program.buffers[static_cast<size_t>(buffer)];
      EXPECT_EQ(b.bytes, setup.shard(b.unit) * 4) << b.name;
      const Op& alloc = op_on(program, OpKind::kAlloc, buffer);
      EXPECT_EQ(alloc.stream, Stream::kReduceScatter) << b.name;
      const Op* first_reduce = nullptr;
      for (const Op& op : program.ops) {
        if (op.kind == OpKind::kReduceScatter && op.unit == b.unit && first_reduce == nullptr) first_reduce = &op;
      }
      ASSERT_NE(first_reduce, nullptr);
      EXPECT_EQ(first_reduce->micro_batch, 0);
      EXPECT_GT(alloc.id, first_reduce->id) << b.name;
      EXPECT_TRUE(depends_on(program, alloc.id, first_reduce->id)) << b.name;
      const Op& free = op_on(program, OpKind::kFree, buffer);
      for (const Op* step : optimizer) EXPECT_TRUE(depends_on(program, free.id, step->id, true)) << b.name;
      int accumulated = 0;
      for (const Op* a : accumulations) {
        if (a->unit != b.unit) continue;
        EXPECT_GT(a->id, alloc.id);
        EXPECT_LT(a->id, free.id);
        ++accumulated;
      }
      EXPECT_EQ(accumulated, 2) << b.name << ": one accumulation per micro-batch";
    }
  }
}

// ZeRO-3, Megatron-FSDP and the DBuffer strategies keep a persistent
// accumulator: no per-step shard, the bytes in the persistent state.
TEST(GradShardLifetime, PersistentAccumulatorsStayInThePersistentState) {
  for (scenarios::Strategy strategy : {scenarios::RAGGED, scenarios::ZERO3, scenarios::MEGATRON}) {
    ProgramSetup setup(strategy_field(strategy));
    const Program program = setup.build();
    SCOPED_TRACE(scenarios::Strategy_Name(strategy));
    EXPECT_TRUE(buffers_of(program, BufferKind::kGradShards).empty());
    const int64_t bytes = strategy == scenarios::RAGGED ? 4 : 2;  // ZeRO-3 and Megatron: the parameter dtype
    EXPECT_EQ(program.persistent.gradients, setup.shard_total() * bytes);
  }
}

constexpr const char* kHuggingFaceLoop =
    "strategy: FSDP1 activation_checkpointing: FULL sequence_length: 512 loss: SHIFTED_FP32_LOGITS "
    "outputs { logits: true kv_cache: true held_until_next_forward: true } ";

// The bytes one micro-batch's outputs take: every block's keys and values
// and the fp32 logits.
int64_t outputs_bytes(const ProgramSetup& setup, int64_t tokens) {
  double per_token = 0;
  for (int u = 0; u < setup.units(); ++u) per_token += setup.spec(u).activations.returned_kv;
  per_token += setup.spec(setup.units() - 1).activations.loss_logits;
  return static_cast<int64_t>(per_token * static_cast<double>(tokens));
}

// Held until the next forward returns: the previous step's outputs live
// from the step's start to the end of the head's first forward, this step's
// from each unit's forward to the step's end; at the head's forward both are
// live.
TEST(ModelOutputs, HeldUntilTheNextForwardOverlapTwoSteps) {
  ProgramSetup setup(kHuggingFaceLoop);
  const Program program = setup.build();
  EXPECT_TRUE(graph_problems(program).empty()) << joined(graph_problems(program));
  const int64_t tokens = setup.training().micro_batch_size() * setup.training().sequence_length();
  const int64_t one_step = outputs_bytes(setup, tokens);
  ASSERT_GT(one_step, 0);
  const std::vector<int> outputs = buffers_of(program, BufferKind::kModelOutputs);
  // Each block's cache, the logits and the previous step's.
  ASSERT_EQ(static_cast<int>(outputs.size()), setup.units() - 2 + 2);
  const int previous = outputs.front();
  EXPECT_EQ(program.buffers[static_cast<size_t>(previous)].name, "previous step's outputs");
  EXPECT_EQ(program.buffers[static_cast<size_t>(previous)].bytes, one_step);
  int64_t this_step = 0;
  for (size_t i = 1; i < outputs.size(); ++i) this_step += program.buffers[static_cast<size_t>(outputs[i])].bytes;
  EXPECT_EQ(this_step, one_step);

  const Op& head_forward = program_test::only_op(program, OpKind::kComputeFwd, setup.units() - 1, 0);
  LiveBuffers live(program);
  int64_t live_at_loss = 0;
  for (const Op& op : program.ops) {
    if (op.id == head_forward.id) {
      for (int buffer : outputs) {
        if (live.live(buffer)) live_at_loss += program.buffers[static_cast<size_t>(buffer)].bytes;
      }
    }
    live.apply(op);
  }
  std::printf("outputs of one step %lld bytes; live at the head's forward %lld (expected two steps' %lld)\n",
              static_cast<long long>(one_step), static_cast<long long>(live_at_loss),
              static_cast<long long>(2 * one_step));
  EXPECT_EQ(live_at_loss, 2 * one_step);
  EXPECT_EQ(op_on(program, OpKind::kFree, previous).deps, std::vector<uint32_t>{head_forward.id});
  const std::vector<const Op*> optimizer = ops_of(program, OpKind::kOptimizer);
  for (size_t i = 1; i < outputs.size(); ++i) {
    EXPECT_TRUE(depends_on(program, op_on(program, OpKind::kFree, outputs[i]).id, optimizer.back()->id, true));
  }
}

// Dropped once the loss is computed: this step's outputs are freed after
// the head's forward, and no previous step's are live; returning nothing
// puts the loss's logits back among the head's forward transients, so the
// static peak is the same as returning the logits and dropping them.
TEST(ModelOutputs, DroppedAtTheLossLiveOnlyThroughTheForward) {
  ProgramSetup dropped(
      "strategy: FSDP1 activation_checkpointing: FULL sequence_length: 512 outputs { logits: true kv_cache: true }");
  const Program program = dropped.build();
  EXPECT_TRUE(graph_problems(program).empty()) << joined(graph_problems(program));
  const Op& head_forward = program_test::only_op(program, OpKind::kComputeFwd, dropped.units() - 1, 0);
  const std::vector<int> outputs = buffers_of(program, BufferKind::kModelOutputs);
  ASSERT_EQ(static_cast<int>(outputs.size()), dropped.units() - 1);  // each block's cache and the logits
  for (int buffer : outputs) {
    EXPECT_EQ(op_on(program, OpKind::kFree, buffer).deps, std::vector<uint32_t>{head_forward.id});
  }
  ProgramSetup nothing("strategy: FSDP1 activation_checkpointing: FULL sequence_length: 512");
  ProgramSetup logits_only(
      "strategy: FSDP1 activation_checkpointing: FULL sequence_length: 512 outputs { logits: true }");
  EXPECT_TRUE(buffers_of(nothing.build(), BufferKind::kModelOutputs).empty());
  EXPECT_EQ(memory_breakdown(logits_only.build()).peak_total(), memory_breakdown(nothing.build()).peak_total());
}

// KempnerForge's loop: `logits = model(input_ids)`, then F.cross_entropy on
// them, eager. At the loss's backward four vocabulary-wide tensors of the
// logits' dtype are live: the logits the loop holds, the log-softmax the
// loss kept, nll_loss's gradient and the logits' gradient.
TEST(ModelOutputs, AnEagerLossOnHeldLogitsHoldsFourOfThemAtItsBackward) {
  ProgramSetup setup(
      "strategy: FSDP2 activation_checkpointing: FULL sequence_length: 512 loss: LOG_SOFTMAX "
      "outputs { logits: true held_until_next_forward: true }");
  const Program program = setup.build();
  EXPECT_TRUE(graph_problems(program).empty()) << joined(graph_problems(program));
  const int head = setup.units() - 1;
  const int64_t tokens = setup.training().micro_batch_size() * setup.training().sequence_length();
  const auto one = static_cast<int64_t>(2.0 * static_cast<double>(setup.model().arch.vocab) * tokens);
  const Op* loss = nullptr;
  for (const Op& op : program.ops) {
    if (op.kind == OpKind::kComputeBwd && op.unit == head && op.loss_only && op.micro_batch == 0) loss = &op;
  }
  ASSERT_NE(loss, nullptr);
  LiveBuffers live(program);
  int64_t logits_wide = 0;
  for (const Op& op : program.ops) {
    if (op.id == loss->id) {
      for (size_t b = 0; b < program.buffers.size(); ++b) {
        const Buffer& buffer = program.buffers[b];
        if (!live.live(static_cast<int>(b)) || buffer.unit != head) continue;
        if (buffer.kind == BufferKind::kModelOutputs || buffer.kind == BufferKind::kWorkspace) logits_wide += buffer.bytes;
      }
      break;
    }
    live.apply(op);
  }
  // The log-softmax is among the head's activations; the other three here.
  EXPECT_EQ(logits_wide, 3 * one);
}

// Without checkpointing a block keeps its keys and values among its
// activations until its backward; a held cache counts from there, so the
// two are never counted twice.
TEST(ModelOutputs, UncheckpointedBlocksCountTheirCacheFromTheirBackward) {
  ProgramSetup setup(
      "strategy: FSDP2 activation_checkpointing: NONE sequence_length: 512 outputs { kv_cache: true "
      "held_until_next_forward: true }");
  const Program program = setup.build();
  EXPECT_TRUE(graph_problems(program).empty()) << joined(graph_problems(program));
  for (int buffer : buffers_of(program, BufferKind::kModelOutputs)) {
    const Buffer& b = program.buffers[static_cast<size_t>(buffer)];
    if (b.unit < 0) continue;  // the previous step's
    const Op& alloc = op_on(program, OpKind::kAlloc, buffer);
    EXPECT_GT(alloc.id, program_test::only_op(program, OpKind::kComputeBwd, b.unit, 0).id) << b.name;
  }
}

}  // namespace
}  // namespace ragged::planner
