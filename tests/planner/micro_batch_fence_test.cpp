// The root's fence between micro-batches (FSDP1 and FSDP2; sources in
// planner/strategy_traits.cpp): at the end of each backward the compute
// stream waits for the reductions issued, and the next forward's
// all-gathers wait for the compute stream, so none of them starts before
// the previous micro-batch's last reduction and its last compute op.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::depends_on;
using program_test::ProgramSetup;
using program_test::strategy_field;

// The tiny Llama with tied embeddings, two micro-batches and Composer's
// train metrics: the metrics run on the compute stream after the backward,
// after the last reduce-scatter is issued, which the fence orders.
Program tied_program(scenarios::Strategy strategy) {
  const std::string tied_llama =
      "model { inline_spec { hidden_size: 256 num_layers: 4 vocab_size: 1024 intermediate_size: 704\n"
      "                      num_attention_heads: 8 num_key_value_heads: 4 tie_word_embeddings: true } }\n"
      "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n";
  const ProgramSetup setup(strategy_field(strategy) + "gradient_accumulation_steps: 2 "
                           "outputs { logits: true held_until_next_forward: true metric_cross_entropies: 2 }",
                           tied_llama);
  return setup.build();
}

struct Boundary {
  const Op* last_reduce_scatter = nullptr;  // of micro-batch 0
  const Op* last_compute = nullptr;         // of micro-batch 0, on the compute stream (its train metrics)
  std::vector<const Op*> next_gathers;      // micro-batch 1's forward all-gathers
  const Op* next_forward = nullptr;         // micro-batch 1's first forward compute
};

Boundary boundary(const Program& program) {
  Boundary b;
  for (const Op& op : program.ops) {
    if (op.micro_batch == 0 && op.kind == OpKind::kReduceScatter) b.last_reduce_scatter = &op;
    if (op.micro_batch == 0 && op.stream == Stream::kCompute && op.kind != OpKind::kAlloc && op.kind != OpKind::kFree) {
      b.last_compute = &op;
    }
    if (op.micro_batch == 1 && op.kind == OpKind::kAllGather && op.name.find("(fwd)") != std::string::npos) {
      b.next_gathers.push_back(&op);
    }
    if (op.micro_batch == 1 && op.kind == OpKind::kComputeFwd && b.next_forward == nullptr) b.next_forward = &op;
  }
  return b;
}

TEST(MicroBatchFence, FsdpGathersOfTheNextMicroBatchWaitForTheReductionsAndTheBackward) {
  for (scenarios::Strategy strategy : {scenarios::FSDP1, scenarios::FSDP2}) {
    const std::string name = scenarios::Strategy_Name(strategy);
    const Program program = tied_program(strategy);
    const Boundary b = boundary(program);
    ASSERT_NE(b.last_reduce_scatter, nullptr) << name;
    ASSERT_NE(b.last_compute, nullptr) << name;
    ASSERT_NE(b.next_forward, nullptr) << name;
    ASSERT_FALSE(b.next_gathers.empty()) << name;
    for (const Op* gather : b.next_gathers) {
      EXPECT_TRUE(depends_on(program, gather->id, b.last_reduce_scatter->id, true)) << name << ": " << gather->name;
      EXPECT_TRUE(depends_on(program, gather->id, b.last_compute->id, true)) << name << ": " << gather->name;
    }
    EXPECT_EQ(b.last_compute->kind, OpKind::kTrainMetrics) << name;
    EXPECT_TRUE(depends_on(program, b.last_compute->id, b.last_reduce_scatter->id, true)) << name;  // end of backward
    EXPECT_TRUE(depends_on(program, b.next_forward->id, b.last_reduce_scatter->id)) << name;
  }
}

// Ragged's DBuffers have no root hook: the next micro-batch's first
// all-gather does not wait for the last reduction.
TEST(MicroBatchFence, RaggedGathersTheNextMicroBatchWhileTheLastReductionRuns) {
  const Program program = tied_program(scenarios::RAGGED);
  const Boundary b = boundary(program);
  ASSERT_FALSE(b.next_gathers.empty());
  ASSERT_NE(b.last_reduce_scatter, nullptr);
  EXPECT_FALSE(depends_on(program, b.next_gathers.front()->id, b.last_reduce_scatter->id, true));
}

}  // namespace
}  // namespace ragged::planner
