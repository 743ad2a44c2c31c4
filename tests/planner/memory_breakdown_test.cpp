// The static memory breakdown of one rank: persistent state from the plan's
// shard sizes, and the peak of the Program's transient buffers (in issue
// order or with the reduce-scatters last) split by what they hold.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "planner/memory_breakdown.hpp"
#include "planner/program_order.hpp"
#include "tests/planner/program_test_util.hpp"

namespace ragged::planner {
namespace {

using program_test::kAllStrategies;
using program_test::ProgramSetup;
using program_test::strategy_field;

// The largest sum of live buffer bytes just after an alloc, replaying the ops in `order`.
int64_t replayed_peak(const Program& program, const std::vector<uint32_t>& order) {
  int64_t live = 0, peak = 0;
  for (uint32_t id : order) {
    const Op& op = program.ops[id];
    if (op.kind == OpKind::kAlloc) live += program.buffers[static_cast<size_t>(op.buffer)].bytes;
    if (op.kind == OpKind::kFree) live -= program.buffers[static_cast<size_t>(op.buffer)].bytes;
    peak = std::max(peak, live);
  }
  return peak;
}

int64_t replayed_peak(const Program& program) {
  std::vector<uint32_t> issue_order(program.ops.size());
  for (size_t i = 0; i < issue_order.size(); ++i) issue_order[i] = static_cast<uint32_t>(i);
  return replayed_peak(program, issue_order);
}

TEST(MemoryBreakdown, PersistentStateComesFromTheShards) {
  for (const char* master : {"FP32", "BF16"}) {
    ProgramSetup setup(std::string("precision { param: BF16 master: ") + master + " }");
    const int64_t o = std::string(master) == "FP32" ? 4 : 2;
    const MemoryBreakdown memory = memory_breakdown(setup.build());
    EXPECT_EQ(memory.persistent.master_params, setup.shard_total() * o) << master;
    EXPECT_EQ(memory.persistent.compute_params, 0) << master;  // ragged casts before gathering
    EXPECT_EQ(memory.persistent.optimizer_states, 2 * o * setup.shard_total()) << master;
    EXPECT_EQ(memory.persistent.gathered_small_params, 0) << master;
  }
  ProgramSetup zero3("strategy: ZERO3");
  const MemoryBreakdown memory = memory_breakdown(zero3.build());
  int64_t small = 0;
  for (const UnitPlan& u : zero3.plan().units) small += u.layout.persistent_elements;
  EXPECT_GT(small, 0);  // the norms at least
  EXPECT_EQ(memory.persistent.gathered_small_params, small * 2);
  EXPECT_EQ(memory.persistent.compute_params, zero3.shard_total() * 2);
}

// The peak is the larger of the issue-order one and the one with the
// reduce-scatters last (what slow reductions let pile up).
TEST(MemoryBreakdown, PeakIsTheLargerOfTwoOrdersSplitByBufferKind) {
  for (scenarios::Strategy strategy : kAllStrategies) {
    for (const char* knobs : {"", "activation_checkpointing: FULL gradient_accumulation_steps: 2",
                              "optimizer { muon {} } prefetch_depth: 2"}) {
      ProgramSetup setup(strategy_field(strategy) + knobs);
      const Program program = setup.build();
      const MemoryBreakdown memory = memory_breakdown(program);
      SCOPED_TRACE(scenarios::Strategy_Name(strategy) + " [" + knobs + "]");
      int64_t largest = 0;
      for (const Buffer& b : program.buffers) largest = std::max(largest, b.bytes);
      EXPECT_GT(largest, 0);
      EXPECT_GE(memory.peak_transient, largest);
      EXPECT_EQ(memory.issue_order_peak, replayed_peak(program));
      EXPECT_EQ(memory.peak_transient,
                std::max(replayed_peak(program), replayed_peak(program, reductions_last_order(program))));
      EXPECT_EQ(memory.unsharded_params + memory.gradients_in_flight + memory.grad_shards + memory.activations +
                    memory.workspace + memory.model_outputs,
                memory.peak_transient);
      EXPECT_GT(memory.unsharded_params, 0);
      EXPECT_EQ(memory.peak_total(), program.persistent.total() + memory.peak_transient);
    }
  }
}

TEST(MemoryBreakdown, ActivationsAreLiveAtThePeakWithoutCheckpointing) {
  ProgramSetup setup("activation_checkpointing: NONE sequence_length: 2048");
  const MemoryBreakdown memory = memory_breakdown(setup.build());
  EXPECT_GT(memory.activations, 0);
  // At the peak the forward is done: every unit's activations are still held.
  ProgramSetup full("activation_checkpointing: FULL sequence_length: 2048");
  EXPECT_LT(memory_breakdown(full.build()).activations, memory.activations);
}

TEST(MemoryBreakdown, PeakGrowsWithMicroBatchSize) {
  int64_t previous = 0;
  for (int micro_batch : {1, 2, 4}) {
    ProgramSetup setup("sequence_length: 1024 micro_batch_size: " + std::to_string(micro_batch));
    const MemoryBreakdown memory = memory_breakdown(setup.build());
    EXPECT_GT(memory.peak_total(), previous) << "micro_batch_size " << micro_batch;
    previous = memory.peak_total();
  }
}

TEST(MemoryBreakdown, WithoutReshardingEveryUnitIsGatheredAtThePeak) {
  for (scenarios::Strategy strategy : {scenarios::RAGGED, scenarios::FSDP1, scenarios::MEGATRON}) {
    ProgramSetup setup(strategy_field(strategy) + "reshard_after_forward: false");
    const MemoryBreakdown memory = memory_breakdown(setup.build());
    int64_t all_units = 0;
    for (const UnitPlan& u : setup.plan().units) all_units += u.layout.ranks * u.layout.shard_size * 2;
    EXPECT_EQ(memory.unsharded_params, all_units) << scenarios::Strategy_Name(strategy);
  }
}

// Gradient accumulation runs the micro-batches one after another: the next
// one's gathers cannot add to a peak that already holds every unit.
TEST(MemoryBreakdown, WithoutReshardingAccumulationHoldsEveryUnitOnce) {
  ProgramSetup setup("reshard_after_forward: false gradient_accumulation_steps: 2");
  const MemoryBreakdown memory = memory_breakdown(setup.build());
  int64_t all_units = 0;
  for (const UnitPlan& u : setup.plan().units) all_units += u.layout.ranks * u.layout.shard_size * 2;
  EXPECT_EQ(memory.unsharded_params, all_units);
}

TEST(MemoryBreakdown, ReshardingBoundsGatheredParametersByThePrefetchWindow) {
  for (int depth : {0, 1, 2}) {
    ProgramSetup setup("prefetch_depth: " + std::to_string(depth));
    const MemoryBreakdown memory = memory_breakdown(setup.build());
    std::vector<int64_t> gathered;
    for (const UnitPlan& u : setup.plan().units) gathered.push_back(u.layout.ranks * u.layout.shard_size * 2);
    std::sort(gathered.rbegin(), gathered.rend());
    int64_t window = 0;
    for (int i = 0; i <= depth; ++i) window += gathered[static_cast<size_t>(i)];
    EXPECT_LE(memory.unsharded_params, window) << "prefetch_depth " << depth;
    EXPECT_GT(memory.unsharded_params, 0) << "prefetch_depth " << depth;
  }
}

// The floor counts only buffers the compute stream allocates and frees, in
// issue order: never above the issue-order peak, and at least every
// micro-batch's saved activations (all live when the last forward ends).
TEST(MemoryFloor, LiesBetweenTheSavedActivationsAndTheIssueOrderPeak) {
  for (scenarios::Strategy strategy : kAllStrategies) {
    for (const char* knobs : {"", "activation_checkpointing: FULL", "activation_checkpointing: SELECTIVE micro_batch_size: 2",
                              "gradient_accumulation_steps: 2 reshard_after_forward: false"}) {
      ProgramSetup setup(strategy_field(strategy) + knobs + " sequence_length: 1024");
      const Program program = setup.build();
      const MemoryFloor floor = memory_floor(program);
      const MemoryBreakdown memory = memory_breakdown(program);
      SCOPED_TRACE(scenarios::Strategy_Name(strategy) + " [" + knobs + "]");
      int64_t first_micro_batch_activations = 0;
      for (const Buffer& b : program.buffers) {
        if (b.kind == BufferKind::kActivations && b.name.ends_with("mb0")) first_micro_batch_activations += b.bytes;
      }
      EXPECT_GT(first_micro_batch_activations, 0);
      EXPECT_EQ(floor.persistent, program.persistent.total());
      EXPECT_GE(floor.compute_stream_buffers, first_micro_batch_activations);
      EXPECT_LE(floor.compute_stream_buffers, memory.issue_order_peak);
      EXPECT_LE(floor.total(), memory.peak_total());
    }
  }
}

TEST(MemoryFloor, CheckpointingLowersIt) {
  const int64_t none = memory_floor(ProgramSetup("activation_checkpointing: NONE sequence_length: 2048").build()).total();
  const int64_t selective =
      memory_floor(ProgramSetup("activation_checkpointing: SELECTIVE sequence_length: 2048").build()).total();
  const int64_t full = memory_floor(ProgramSetup("activation_checkpointing: FULL sequence_length: 2048").build()).total();
  std::printf("floor at sequence 2048: none %lld, selective %lld, full %lld bytes\n", static_cast<long long>(none),
              static_cast<long long>(selective), static_cast<long long>(full));
  EXPECT_GT(none, selective);
  EXPECT_GT(selective, full);
}

}  // namespace
}  // namespace ragged::planner
