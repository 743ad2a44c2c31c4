// The host work of a Program (docs/SIMULATOR.md, "The CPU issue path"): each
// op carries the framework ops it is issued as and the strategy's
// per-parameter work, and the strategies whose waits block the CPU say so.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner/strategy_traits.hpp"
#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::kAllStrategies;
using program_test::ops_of;
using program_test::ProgramSetup;
using program_test::strategy_field;

bool is_collective(OpKind kind) {
  return kind == OpKind::kAllGather || kind == OpKind::kReduceScatter || kind == OpKind::kAllReduce ||
         kind == OpKind::kAllToAll;
}

int64_t gathered_tensors(const ProgramSetup& setup, int unit) {
  int64_t n = 0;
  for (const TensorSlot& slot : setup.plan().units[unit].layout.slots) n += slot.persistent ? 0 : 1;
  return n;
}

// The parameters a buffer of gathered parameters holds: a ZeRO-3 fetch
// group's, else the unit's.
int64_t buffer_tensors(const ProgramSetup& setup, const Program& p, const Op& op) {
  const std::vector<int>& group = p.buffers[static_cast<size_t>(op.buffer)].tensors;
  return group.empty() ? gathered_tensors(setup, op.unit) : static_cast<int64_t>(group.size());
}

int64_t sum_over(const Program& p, int64_t HostWork::*field) {
  int64_t total = 0;
  for (const Op& op : p.ops) total += op.host.*field;
  return total;
}

TEST(ProgramHost, ComputeOpsAreIssuedAsTheirKernels) {
  for (scenarios::Strategy strategy : kAllStrategies) {
    for (const char* compiled : {"compiled: false", "compiled: true"}) {
      ProgramSetup setup(strategy_field(strategy) + "sequence_length: 256 activation_checkpointing: SELECTIVE " + compiled);
      const Program p = setup.build();
      for (const Op& op : p.ops) {
        const std::string what = scenarios::Strategy_Name(strategy) + " " + compiled + ": " + op.name;
        switch (op.kind) {
          case OpKind::kComputeFwd:
          case OpKind::kComputeBwd:
          case OpKind::kRecompute:
            EXPECT_EQ(op.host.framework_ops, op.work.kernels()) << what;
            EXPECT_GT(op.host.framework_ops, 0) << what;
            break;
          case OpKind::kAlloc:
          case OpKind::kFree: EXPECT_EQ(op.host.framework_ops, 0) << what; break;
          default:
            if (is_collective(op.kind)) EXPECT_EQ(op.host.framework_ops, 1) << what;
            else EXPECT_GE(op.host.framework_ops, 1) << what;
        }
      }
    }
  }
}

TEST(ProgramHost, EagerIssuesMoreKernelsThanCompiled) {
  ProgramSetup eager(strategy_field(scenarios::FSDP2) + "sequence_length: 256 compiled: false");
  ProgramSetup compiled(strategy_field(scenarios::FSDP2) + "sequence_length: 256 compiled: true");
  const Program e = eager.build(), c = compiled.build();
  // The same ops but the head's: a compiled loss holds no fp32 working
  // pieces (models::effective_loss), two allocations and frees fewer.
  EXPECT_EQ(e.ops.size(), c.ops.size() + 4);
  EXPECT_GT(sum_over(e, &HostWork::framework_ops), sum_over(c, &HostWork::framework_ops) + 100);
}

TEST(ProgramHost, PerParameterWorkFollowsTheStrategy) {
  for (scenarios::Strategy strategy : kAllStrategies) {
    ProgramSetup setup(strategy_field(strategy) + "sequence_length: 256");
    const Program p = setup.build();
    const StrategyTraits traits = strategy_traits(strategy);
    const std::string name = scenarios::Strategy_Name(strategy);
    // Every gather of a unit sets up a view per gathered parameter, on its
    // copy-out when there is one, else on the all-gather.
    int64_t expected_views = 0, expected_reshards = 0;
    for (const Op* ag : ops_of(p, OpKind::kAllGather)) {
      if (traits.views_per_parameter) expected_views += buffer_tensors(setup, p, *ag);
    }
    // Resharding restores each parameter's sharded view when the unit's
    // parameters are freed after its compute (not the gathered buffer a
    // copy-out has read).
    for (const Op& op : p.ops) {
      const BufferKind kind = op.buffer >= 0 ? p.buffers[static_cast<size_t>(op.buffer)].kind : BufferKind::kWorkspace;
      const bool parameters = kind == BufferKind::kParamCopies || kind == BufferKind::kUnshardedParams;
      if (op.kind == OpKind::kFree && parameters && !op.deps.empty() && p.ops[op.deps[0]].kind != OpKind::kCopyOut) {
        expected_reshards += buffer_tensors(setup, p, op);
      }
    }
    int64_t grad_views = 0;
    for (const Op* rs : ops_of(p, OpKind::kReduceScatter)) {
      if (traits.grad_views_per_parameter) grad_views += static_cast<int64_t>(setup.plan().units[rs->unit].layout.slots.size());
    }
    EXPECT_EQ(sum_over(p, &HostWork::param_views), expected_views + grad_views) << name;
    EXPECT_EQ(sum_over(p, &HostWork::param_reshards), traits.reshard_per_parameter ? expected_reshards : 0) << name;
    if (traits.reshard_per_parameter) {
      EXPECT_GT(expected_reshards, 0) << name;
    }
    if (strategy == scenarios::RAGGED || strategy == scenarios::VESCALE_PAPER) {
      EXPECT_EQ(sum_over(p, &HostWork::param_views), 0) << name;  // DBuffer views are made once
      // Only the optimizer's lists: the fused update's two ops over each unit's tensors.
      int64_t optimizer_lists = 0;
      for (const UnitPlan& unit : setup.plan().units) optimizer_lists += 2 * static_cast<int64_t>(unit.layout.slots.size());
      EXPECT_EQ(sum_over(p, &HostWork::list_tensors), optimizer_lists) << name;
    }
  }
}

TEST(ProgramHost, OnlyFsdp1AndZero3BlockTheCpu) {
  for (scenarios::Strategy strategy : kAllStrategies) {
    ProgramSetup setup(strategy_field(strategy) + "sequence_length: 256");
    const Program p = setup.build();
    int waits = 0;
    for (const Op& op : p.ops) {
      waits += static_cast<int>(op.host.waits.size());
      for (uint32_t w : op.host.waits) EXPECT_LT(w, op.id) << op.name;  // the CPU waits only on what it issued
    }
    const bool blocks = strategy == scenarios::FSDP1 || strategy == scenarios::ZERO3;
    EXPECT_EQ(waits > 0, blocks) << scenarios::Strategy_Name(strategy);
  }
}

TEST(ProgramHost, Fsdp1LimiterWaitsForTheUnitLeavingTheWindow) {
  // Before the k-th all-gather the CPU synchronizes on the free of the
  // (k-2)-th unit's parameters: the gather's alloc waits on the CPU for the
  // same free its stream waits for. The root's embedding, kept gathered to
  // its backward, records no free event: the gather whose window slot it
  // held waits for its forward on the stream only.
  ProgramSetup setup(strategy_field(scenarios::FSDP1) + "sequence_length: 256");
  const Program p = setup.build();
  int checked = 0, stream_only = 0;
  for (const Op& op : p.ops) {
    if (op.kind != OpKind::kAlloc || op.stream != Stream::kAllGather) continue;
    for (uint32_t dep : op.deps) {
      if (p.ops[dep].kind == OpKind::kComputeFwd && p.ops[dep].unit == 0) ++stream_only;
    }
    std::vector<uint32_t> frees;
    for (uint32_t dep : op.deps) {
      if (p.ops[dep].kind == OpKind::kFree) frees.push_back(dep);
    }
    EXPECT_EQ(op.host.waits, frees) << op.name;
    checked += !frees.empty();
  }
  // Every block's gather but the first two of the forward and of the backward.
  EXPECT_GE(checked, 2 * (setup.units() - 2) - 4);
  EXPECT_EQ(stream_only, 1);
}

TEST(ProgramHost, Zero3WaitsForEachUnitsGatherBeforeItsCompute) {
  ProgramSetup setup(strategy_field(scenarios::ZERO3) + "sequence_length: 256");
  const Program p = setup.build();
  for (const Op* copy_out : ops_of(p, OpKind::kCopyOut)) {
    ASSERT_EQ(copy_out->host.waits.size(), 1u) << copy_out->name;
    EXPECT_EQ(p.ops[copy_out->host.waits[0]].kind, OpKind::kAllGather) << copy_out->name;
    EXPECT_EQ(p.ops[copy_out->host.waits[0]].unit, copy_out->unit) << copy_out->name;
    EXPECT_EQ(copy_out->host.framework_ops, buffer_tensors(setup, p, *copy_out)) << copy_out->name;  // a cat each
  }
}

}  // namespace
}  // namespace ragged::planner
