// FSDP's root group: the units outside the blocks (embedding, final norm,
// head) are one group that FSDP1 and FSDP2 gather at the start of the forward,
// keep to the end of the backward and reduce when the embedding's gradient is
// ready (planner/strategy_traits.cpp gives the sources).

#include <gtest/gtest.h>

#include <vector>

#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::depends_on;
using program_test::LiveBuffers;
using program_test::only_op;
using program_test::ops_of;
using program_test::ProgramSetup;
using program_test::strategy_field;

std::vector<const Op*> gathers_of(const Program& program, int unit, int micro_batch) {
  std::vector<const Op*> out;
  for (const Op* g : ops_of(program, OpKind::kAllGather)) {
    if (g->unit == unit && g->micro_batch == micro_batch) out.push_back(g);
  }
  return out;
}

TEST(ProgramRoot, Fsdp1AndFsdp2KeepTheRootGroupGatheredAndReduceItLast) {
  for (scenarios::Strategy strategy : {scenarios::FSDP1, scenarios::FSDP2}) {
    SCOPED_TRACE(scenarios::Strategy_Name(strategy));
    ProgramSetup setup(strategy_field(strategy) + "gradient_accumulation_steps: 2");
    const Program program = setup.build();
    const int head = setup.units() - 1;
    for (int mb = 0; mb < 2; ++mb) {
      // One all-gather each per micro-batch: the forward's serves the backward.
      ASSERT_EQ(gathers_of(program, 0, mb).size(), 1u) << "micro-batch " << mb;
      ASSERT_EQ(gathers_of(program, head, mb).size(), 1u) << "micro-batch " << mb;
      // The head's comes right after the embedding's: the root's all-gather.
      std::vector<const Op*> order;
      for (const Op* g : ops_of(program, OpKind::kAllGather)) {
        if (g->micro_batch == mb) order.push_back(g);
      }
      ASSERT_GE(order.size(), 2u);
      EXPECT_EQ(order[0]->unit, 0);
      EXPECT_EQ(order[1]->unit, head);
      // The head's reduction waits for the embedding's backward ...
      const Op& embed_backward = only_op(program, OpKind::kComputeBwd, 0, mb);
      EXPECT_TRUE(depends_on(program, only_op(program, OpKind::kReduceScatter, head, mb).id, embed_backward.id));
      // ... so its gradients are alive over every block's backward.
      LiveBuffers live(program);
      int blocks_seen = 0;
      for (const Op& op : program.ops) {
        live.apply(op);
        if (op.kind != OpKind::kComputeBwd || op.micro_batch != mb || op.unit == 0 || op.unit == head) continue;
        EXPECT_GE(live.count(BufferKind::kUnshardedGrads, head), 1) << op.name;
        ++blocks_seen;
      }
      EXPECT_EQ(blocks_seen, head - 1);
    }
  }
}

TEST(ProgramRoot, RaggedFreesTheEmbeddingAfterItsForwardAndReducesTheHeadFirst) {
  ProgramSetup setup(strategy_field(scenarios::RAGGED));
  const Program program = setup.build();
  const int head = setup.units() - 1;
  EXPECT_EQ(gathers_of(program, 0, 0).size(), 2u);
  const Op& embed_backward = only_op(program, OpKind::kComputeBwd, 0, 0);
  EXPECT_FALSE(depends_on(program, only_op(program, OpKind::kReduceScatter, head, 0).id, embed_backward.id, true));
}

}  // namespace
}  // namespace ragged::planner
