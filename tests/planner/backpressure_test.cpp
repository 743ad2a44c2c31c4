// Backpressure of the reduce-scatters on the backward: a backward faster
// than its reduce-scatters must not keep every unit's unsharded gradients
// alive (issue 9: GPT-OSS-120B on 256 H800 was predicted at 244 GiB). Each
// strategy's rule is dependencies in the Program, so the bounds below hold
// whatever the timing: they are checked in the order where the
// reduce-scatters run only when nothing else can.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "planner/layout_strategy.hpp"
#include "planner/memory_breakdown.hpp"
#include "planner/program_order.hpp"
#include "planner/strategy_traits.hpp"
#include "scenarios/scenario_loader.hpp"
#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::depends_on;
using program_test::kAllStrategies;
using program_test::ProgramSetup;
using program_test::strategy_field;

bool holds_gradients(BufferKind kind) {
  return kind == BufferKind::kUnshardedGrads || kind == BufferKind::kReduceInput;
}

// The most units whose gradients (unsharded buffer or reduce-scatter input)
// are alive at once when the ops run in `order`.
int most_units_with_gradients(const Program& program, const std::vector<uint32_t>& order) {
  std::map<int, int> live;  // unit -> gradient buffers alive
  size_t most = 0;
  for (uint32_t id : order) {
    const Op& op = program.ops[id];
    if ((op.kind != OpKind::kAlloc && op.kind != OpKind::kFree) ||
        !holds_gradients(program.buffers[static_cast<size_t>(op.buffer)].kind)) {
      continue;
    }
    int& n = live[op.unit];
    n += op.kind == OpKind::kAlloc ? 1 : -1;
    if (n == 0) live.erase(op.unit);
    most = std::max(most, live.size());
  }
  return static_cast<int>(most);
}

std::vector<uint32_t> issue_order(const Program& program) {
  std::vector<uint32_t> order(program.ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  return order;
}

Program shipped_program(const std::string& name, scenarios::Strategy strategy) {
  return program_test::shipped_program(resolve_scenario(scenarios::load_scenario(name)), strategy);
}

// Issue 9's communication-bound case, every strategy: with the
// reduce-scatters infinitely slow, the gradients of a few units at most are
// alive (without a rule, all 38 units' were), and the static peak counts them.
TEST(Backpressure, GradientsInFlightAreBoundedWhateverTheTiming) {
  // Units with gradients alive at once, at most, and why:
  const std::map<scenarios::Strategy, int> bound = {
      // one reduced while the next is written (the rule: the next backward
      // waits for the previous reduction)
      {scenarios::RAGGED, 2},
      {scenarios::VESCALE_PAPER, 2},
      // post_backward waits for the previous reduce-scatter before the
      // copy-in; and the head's, which the root group reduces with the
      // embedding's at the end of the backward
      {scenarios::FSDP2, 3},
      // 2 x 5e8 elements outstanding: less than a 3.2B-element block, so
      // every earlier block's reduction has ended before the next hand-over;
      // the 0.58B-element head fits beside the first block
      {scenarios::ZERO3, 3},
      // a queue of 2 x 3.2B elements holds one padded 4.1B-element block
      // besides the one handed over, while the next is written
      {scenarios::MEGATRON, 3},
      // no rule: the shared communicator runs each all-gather (which the
      // backward needs) after the reduce-scatter issued before it, but
      // nothing waits for the accumulations that free the inputs, and after
      // the last all-gather (the embedding's) nothing holds the last units'
      // backward back; and the root group's head, reduced at the end
      {scenarios::FSDP1, 5},
  };
  for (scenarios::Strategy strategy : kAllStrategies) {
    const Program program = shipped_program("gpt-oss-120b-256xh800", strategy);
    const int most = most_units_with_gradients(program, reductions_last_order(program));
    std::printf("%-14s units with gradients in flight: %d with the reduce-scatters last, %d in issue order\n",
                scenarios::Strategy_Name(strategy).c_str(), most,
                most_units_with_gradients(program, issue_order(program)));
    EXPECT_LE(most, bound.at(strategy)) << scenarios::Strategy_Name(strategy) << ": gradient buffers pile up";
    EXPECT_GE(most, 2) << scenarios::Strategy_Name(strategy) << ": the reduce-scatter no longer overlaps the backward";
  }
}

// Ragged's rule (two gradient buffers): the backward of unit u-1 waits for
// the reduction of unit u+1, not for unit u's, which overlaps it.
TEST(Backpressure, RaggedBackwardWaitsForTheReductionBeforeThePrevious) {
  for (scenarios::Strategy strategy : {scenarios::RAGGED, scenarios::VESCALE_PAPER}) {
    ProgramSetup setup(strategy_field(strategy));
    const Program program = setup.build();
    const auto reduce = [&](int unit) { return program_test::only_op(program, OpKind::kReduceScatter, unit, 0).id; };
    for (int u = setup.units() - 2; u >= 1; --u) {
      const uint32_t next_backward = program_test::only_op(program, OpKind::kComputeBwd, u - 1, 0).id;
      EXPECT_TRUE(depends_on(program, next_backward, reduce(u + 1), true))
          << scenarios::Strategy_Name(strategy) << ": backward of unit " << u - 1 << " does not wait for unit " << u + 1
          << "'s reduction";
      EXPECT_FALSE(depends_on(program, next_backward, reduce(u), true))
          << scenarios::Strategy_Name(strategy) << ": backward of unit " << u - 1 << " waits for unit " << u
          << "'s reduction";
    }
  }
}

// FSDP2's rule: foreach_reduce copies the gradients into the reduce-scatter
// input on the compute stream, after waiting for the previous reduce-scatter.
// The blocks reduce in backward order; the root group (the head, then the
// embedding) at the end.
TEST(Backpressure, Fsdp2CopiesInOnTheComputeStreamAfterThePreviousReduceScatter) {
  ProgramSetup setup("strategy: FSDP2");
  const Program program = setup.build();
  const int head = setup.units() - 1;
  std::vector<int> order;
  for (int u = head - 1; u >= 1; --u) order.push_back(u);
  order.push_back(head);
  order.push_back(0);
  int checked = 0;
  for (size_t i = 1; i < order.size(); ++i) {
    const int u = order[i];
    const Op& reduce = program_test::only_op(program, OpKind::kReduceScatter, u, 0);
    const Op* copy_in = nullptr;
    for (const Op& op : program.ops) {
      if (op.kind == OpKind::kCopyIn && op.unit == u && op.stream == Stream::kCompute && op.id < reduce.id)
        copy_in = &op;
    }
    ASSERT_NE(copy_in, nullptr) << "unit " << u << ": no reduce-scatter copy-in on the compute stream";
    EXPECT_TRUE(depends_on(program, reduce.id, copy_in->id));
    const uint32_t previous = program_test::only_op(program, OpKind::kReduceScatter, order[i - 1], 0).id;
    EXPECT_TRUE(depends_on(program, copy_in->id, previous, true)) << "unit " << u;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// The queue rules read off the strategy's traits: counts for ragged and
// FSDP2, elements for ZeRO-3 and Megatron-FSDP, none for FSDP1.
TEST(Backpressure, EachStrategyHasItsRule) {
  EXPECT_EQ(strategy_traits(scenarios::RAGGED).reduce_queue_units, 0);
  EXPECT_EQ(strategy_traits(scenarios::FSDP2).reduce_queue_units, 0);
  EXPECT_TRUE(strategy_traits(scenarios::FSDP2).reduce_copy_in_on_compute);
  EXPECT_EQ(strategy_traits(scenarios::ZERO3).reduce_queue_elements(3'000'000'000), 1'000'000'000);
  EXPECT_EQ(strategy_traits(scenarios::MEGATRON).reduce_queue_elements(100'000'000), 1'000'000'000);
  EXPECT_EQ(strategy_traits(scenarios::MEGATRON).reduce_queue_elements(3'000'000'000), 6'000'000'000);
  EXPECT_EQ(strategy_traits(scenarios::FSDP1).reduce_queue_units, -1);
  EXPECT_EQ(strategy_traits(scenarios::FSDP1).reduce_queue_elements(3'000'000'000), 0);
}

// The static peak of issue 9's case counts the second gradient buffer the
// overlap needs: params of two units, gradients of two, in fp32.
TEST(Backpressure, StaticPeakCountsTheGradientsTheRuleAllows) {
  const Program program = shipped_program("gpt-oss-120b-256xh800", scenarios::RAGGED);
  const MemoryBreakdown memory = memory_breakdown(program);
  int64_t largest_grads = 0;
  for (const Buffer& b : program.buffers) {
    if (b.kind == BufferKind::kUnshardedGrads) largest_grads = std::max(largest_grads, b.bytes);
  }
  EXPECT_EQ(memory.gradients_in_flight, 2 * largest_grads);
  EXPECT_GT(memory.peak_transient, memory.issue_order_peak);
}

}  // namespace
}  // namespace ragged::planner
